"""The hash chain's digest of one stored row (I/O-free): what both stores write and check
(:mod:`pipeline.handlers.store._chain` says what the chain guarantees), and what the lean
command paths check a log's stored bytes with. It imports neither the events nor the
store's port, so that those paths load it alone."""

from __future__ import annotations

import hashlib

import orjson

__all__ = ["link"]


def link(
    previous: str | None, run_id: str, sequence: int, tag: str, version: int, body: bytes | str
) -> str:
    """The digest of event ``sequence`` of ``run_id`` whose predecessor's digest is
    ``previous`` (None: the first chained event), as 64 hex digits."""
    digest = hashlib.sha256((previous or "").encode())
    # The header is JSON (never a raw NUL), so header and body cannot run into each other.
    digest.update(orjson.dumps([run_id, sequence, tag, version]))
    digest.update(b"\0")
    digest.update(body.encode() if isinstance(body, str) else body)
    return digest.hexdigest()
