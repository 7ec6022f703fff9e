"""Masking secrets in facts before they are stored (pure once built; built from an environment).

A :class:`Redactor` knows two kinds of secret:

- the values of the process's **secret variables**: every variable whose name matches one of
  :data:`SECRET_VARIABLES` (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``, ...) or a
  pattern added in ``ralph.toml`` (``[redaction] variables``), and the password of any variable
  whose value is a URL with one (``RALPH_STORE=postgresql://ralph:PASSWORD@db/ralph``). A value
  is masked as ``[redacted:NAME]``; values shorter than :data:`MIN_SECRET_LENGTH` are left alone
  (they would mask ordinary words);
- **token shapes** (:data:`TOKEN_SHAPES`): provider keys that look like themselves wherever they
  come from (``sk-ant-...``, ``ghp_...``, ``AKIA...``, JWTs, private key blocks, the password of
  any URL), masked as ``[redacted:anthropic-key]`` and so on.

Why a table of shapes and not a secret-scanning library: the well-known one (detect-secrets)
scans a line in about 0.5 ms, far too slow for the append path, its entropy plugins flag
ordinary words and the sha256 digests facts carry, and it reports some tokens only by their
prefix. The shapes here are the providers' documented prefixes.

:meth:`Redactor.event` masks every string of a fact (field values and the keys and values of
JSON payloads, at any depth) through its unstructured form; the durable engine calls it on
every fact a handler reports, before anything stores, folds, traces or shows it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

from pipeline import WireFormatError
from pipeline.core.sandbox import SECRET_VARIABLES
from pipeline.core.serialization import structure, unstructure_event
from pipeline.events import PipelineEvent

__all__ = [
    "MIN_SECRET_LENGTH",
    "SECRET_VARIABLES",
    "TOKEN_SHAPES",
    "Redactor",
    "mask_password_of",
    "mask_url_passwords",
    "secret_values",
]


MIN_SECRET_LENGTH: Final = 8
"""A secret variable's value shorter than this is not masked: it would mask ordinary text."""

TOKEN_SHAPES: Final[tuple[tuple[str, str, tuple[str, ...]], ...]] = (
    (
        "private-key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
        ("PRIVATE KEY",),
    ),
    ("anthropic-key", r"sk-ant-[A-Za-z0-9_-]{16,}", ("sk-",)),
    ("openai-key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", ("sk-",)),
    (
        "github-token",
        r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    ("gitlab-token", r"glpat-[A-Za-z0-9_-]{20,}", ("glpat-",)),
    ("slack-token", r"xox[abposr]-[A-Za-z0-9-]{10,}", ("xox",)),
    ("aws-access-key", r"(?:AKIA|ASIA)[A-Z0-9]{16}", ("AKIA", "ASIA")),
    ("google-api-key", r"AIza[0-9A-Za-z_-]{35}", ("AIza",)),
    ("stripe-key", r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}", ("k_live_", "k_test_")),
    ("huggingface-token", r"hf_[A-Za-z0-9]{30,}", ("hf_",)),
    ("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", ("eyJ",)),
    ("bearer-token", r"(?:[Bb]earer|BEARER)\s+[A-Za-z0-9._~+/-]{20,}=*", ("earer", "EARER")),
)
"""(name, regular expression, hints) of tokens masked wherever they appear, whatever set them.
Every match of the expression contains one of its hints: a text with no hint (nearly every
fact) is passed by one fast search, without running the expressions."""

# ``scheme://user:password@``: the user is kept, the password masked.
_URL_PASSWORD: Final = r"(?P<url>[A-Za-z][A-Za-z0-9+.-]*://(?P<user>[^:/?#@\s]*):[^@\s]+@)"
_URL_PASSWORD_RE: Final = re.compile(_URL_PASSWORD)


def _url_replacement(match: re.Match[str]) -> str:
    scheme = match.group("url").split("://", 1)[0]
    return f"{scheme}://{match.group('user')}:[redacted:password]@"


def mask_url_passwords(text: str) -> str:
    """``text`` with the password of every URL in it masked (``postgresql://u:[redacted:password]@h``),
    for messages that name a store URL."""
    return _URL_PASSWORD_RE.sub(_url_replacement, text)


_LOOSE_PASSWORD: Final = re.compile(r"://[^:/@]*:(.+)@")


def mask_password_of(url: str, text: str) -> str:
    """``text`` (a message about ``url``) with ``url``'s password masked wherever it appears,
    even when ``url`` cannot be parsed (a password with spaces or slashes in it), and any
    other URL's password too."""
    loose = _LOOSE_PASSWORD.search(url)
    found = [p for p in (_url_password(url), loose.group(1) if loose else None) if p]
    # libpq quotes the piece of a URL it stumbled on ("unexpected spaces found in ..."): the
    # pieces of a password are masked too
    pieces = [piece for p in found for piece in re.split(r"[\s/]+", p) if len(piece) >= 4]
    for password in sorted({*found, *pieces}, key=len, reverse=True):
        text = text.replace(password, "[redacted:password]")
    return mask_url_passwords(text)


def _url_password(value: str) -> str | None:
    """The password of ``value`` when it is a URL that has one."""
    if "://" not in value:
        return None
    try:
        return urlsplit(value.strip()).password
    except ValueError:
        match = _URL_PASSWORD_RE.search(value)
        return None if match is None else match.group("url").rsplit(":", 1)[1][:-1]


def secret_values(environ: Mapping[str, str], patterns: Iterable[str] = ()) -> dict[str, str]:
    """The secrets in ``environ``: value -> the name of the variable holding it, for every
    variable named by :data:`SECRET_VARIABLES` or ``patterns``, and the password of every URL
    with one; values shorter than :data:`MIN_SECRET_LENGTH` are left out."""
    names = tuple(p.upper() for p in (*SECRET_VARIABLES, *patterns))
    found: dict[str, str] = {}
    for name, value in environ.items():
        password = _url_password(value)
        if password and len(password) >= MIN_SECRET_LENGTH // 2:
            # a URL names its password: even a short one is plainly a secret there
            found.setdefault(password, name)
        if len(value) >= MIN_SECRET_LENGTH and any(fnmatchcase(name.upper(), p) for p in names):
            found.setdefault(value, name)
    return found


@functools.cache
def _shapes() -> re.Pattern[str]:
    """The token shapes and URL passwords as one expression (compiled once, when first used:
    it takes milliseconds, and most commands never need it)."""
    parts = [f"(?P<shape{i}>{regex})" for i, (_, regex, _) in enumerate(TOKEN_SHAPES)]
    return re.compile("|".join([*parts, _URL_PASSWORD]))


@functools.cache
def _hints() -> re.Pattern[str]:
    """A plain alternation of the shapes' literal prefixes: Python's re scans it several times
    faster than the shapes themselves."""
    hints = dict.fromkeys(h for *_, shape_hints in TOKEN_SHAPES for h in shape_hints)
    return re.compile("|".join(map(re.escape, [*hints, "://"])))


_SHAPE_NAMES: Final = {f"shape{i}": name for i, (name, _, _) in enumerate(TOKEN_SHAPES)}


def _label(name: str, bare: bool) -> str:
    return f"redacted:{name}" if bare else f"[redacted:{name}]"


class Redactor:
    """Masks the secrets it was built with, and every token shape, in text and in facts."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        """``secrets``: value -> the name shown in its place (see :func:`secret_values`)."""
        self._names = {value: name for value, name in secrets.items() if value}
        # Longest first, so that a secret containing another is masked whole.
        self._literals = tuple(sorted(self._names, key=len, reverse=True))
        self._literal = (
            re.compile("|".join(map(re.escape, self._literals))) if self._literals else None
        )

    @classmethod
    def from_environment(cls, environ: Mapping[str, str], patterns: Iterable[str] = ()) -> Redactor:
        """A redactor for the secret variables of ``environ`` (plus ``patterns``)."""
        return cls(secret_values(environ, patterns))

    def _shape(self, match: re.Match[str], bare: bool) -> str:
        group = match.lastgroup
        if group == "url":
            return _url_replacement(match)
        return _label(_SHAPE_NAMES.get(group or "", "secret"), bare)

    def text(self, text: str, *, bare: bool = False) -> str:
        """``text`` with every secret masked as ``[redacted:NAME]`` (``bare``: ``redacted:NAME``,
        for values that may not hold brackets): the environment's secrets first, named by
        their variables, then the token shapes."""
        literal = self._literal
        if literal is not None and literal.search(text) is not None:
            text = literal.sub(lambda m: _label(self._names[m.group()], bare), text)
        shapes = _shapes()
        if shapes.search(text) is not None:
            text = shapes.sub(lambda m: self._shape(m, bare), text)
        return text

    def _holds_secret(self, data: Any) -> bool:
        """Whether a secret may be in ``data``: never False when one is (a True is checked
        again, string by string, by :meth:`_masked`)."""
        strings: list[str] = []
        _collect(data, strings)
        # NUL never occurs in an environment value; a hint spanning two strings only costs a
        # needless exact pass.
        joined = "\x00".join(strings)
        return _hints().search(joined) is not None or any(
            secret in joined for secret in self._literals
        )

    def _masked(self, data: Any, bare: bool) -> Any:
        if isinstance(data, str):
            return self.text(data, bare=bare)
        if isinstance(data, dict):
            return {
                self.text(key, bare=bare): self._masked(value, bare) for key, value in data.items()
            }
        if isinstance(data, list | tuple):
            return [self._masked(item, bare) for item in data]
        return data

    def event(self, event: PipelineEvent) -> PipelineEvent:
        """``event`` with every secret in every string it holds masked (the same object when
        it holds none). A field whose rules refuse brackets (a topic) gets ``redacted:NAME``."""
        data = unstructure_event(event)
        if not self._holds_secret(data):
            return event
        # Through JSON, so that times and enums are the strings the strict structuring expects.
        data = orjson.loads(orjson.dumps(data))
        try:
            return structure(self._masked(data, False), PipelineEvent, "a redacted fact")  # type: ignore[arg-type]
        except WireFormatError:
            return structure(self._masked(data, True), PipelineEvent, "a redacted fact")  # type: ignore[arg-type]


def _collect(data: Any, into: list[str]) -> None:
    """Every string in the unstructured ``data``: values, and the keys of its objects."""
    if isinstance(data, str):
        into.append(data)
    elif isinstance(data, dict):
        for key, value in data.items():
            into.append(key)
            _collect(value, into)
    elif isinstance(data, list | tuple):
        for item in data:
            _collect(item, into)
