"""The card: what ralph's MCP server (``ralph mcp``) knows of the prompt its agent works on,
:func:`write_card` and :func:`read_card` (I/O: one small file).

ralph writes ``<workspace>/.ralph/mcp-<run id>.json`` beside each prompt, and the sandbox
shows ``.ralph/`` read-only but for the events file, so there an agent cannot change it.
The card says which events file the run reads, what the hat may publish, the intake limits,
where the run stands, and the memories and tasks the prompt shows. It never holds a
question's id, the store or the environment: an agent can read it.

Off the sandbox an agent can rewrite its card, so it is read as hostile input: through
:func:`~pipeline.handlers.intake.open_regular` (no link, a regular file only), at most
:data:`MAX_CARD_BYTES`, structured strictly (no coercion, no unknown key), and its events
file is one ``.ralph/*.jsonl`` path beside the card (:func:`checked_events_path`). The
workspace is the folder holding the card's ``.ralph/``, never a path the card names, so a
card cannot send the server's writes anywhere ``ralph emit`` would not write.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Final, final

import cattrs
from attrs import field, frozen

from pipeline.core._prompt_records import Publishing, Standing
from pipeline.core._strict import configure_primitives
from pipeline.handlers.intake._bounded import IntakeLimits
from pipeline.handlers.intake._files import (
    EventsFileError,
    checked_events_path,
    open_regular,
    replace_whole,
)

__all__ = [
    "CARD_VERSION",
    "MAX_CARD_BYTES",
    "Card",
    "CardError",
    "CardMemory",
    "CardTask",
    "read_card",
    "write_card",
]

CARD_VERSION: Final = 1
"""The card's shape; a server refuses a card of another."""

MAX_CARD_BYTES: Final = 256 << 10
"""The largest card read: a prompt's memories and tasks are bounded well below it."""


class CardError(EventsFileError):
    """The card is missing, unsafe or not a card; the message names the file."""


def _events_file(_instance: object, _attribute: object, value: str) -> None:
    checked_events_path(value, "the card's events_file")


def _version(_instance: object, _attribute: object, value: int) -> None:
    if value != CARD_VERSION:
        raise ValueError(f"card version {value}; this ralph reads version {CARD_VERSION}")


@final
@frozen(kw_only=True)
class CardMemory:
    """A memory the prompt shows, with its author (``by`` a role, or ``person``)."""

    id: str
    text: str
    tags: tuple[str, ...]
    by: str
    run: str | None


@final
@frozen(kw_only=True)
class CardTask:
    """A task the prompt shows, with its status and author."""

    id: str
    title: str
    status: str
    reason: str
    by: str
    run: str | None


@final
@frozen(kw_only=True)
class Card:
    """One prompt's card (the module says what it holds and why)."""

    card: int = field(default=CARD_VERSION, validator=_version)
    run: str
    role: str
    hat: str | None
    prompt_kind: str
    events_file: str = field(validator=_events_file)
    """The run's events file, relative to the workspace: ``.ralph/<name>.jsonl``."""
    publishing: Publishing | None
    """None: the prompt asks for a file only (a commit message, a formatting correction), and
    ralph acts on no topic from it."""
    limits: IntakeLimits
    standing: Standing | None
    memories: tuple[CardMemory, ...]
    memories_left_out: int
    tasks: tuple[CardTask, ...]
    tasks_left_out: int


_CONVERTER = cattrs.Converter(forbid_extra_keys=True)
configure_primitives(_CONVERTER)


def _why(error: BaseException, _type: object) -> str:
    """A structuring error in words: the validator's or the strict hook's own message."""
    return "a required field is missing" if isinstance(error, KeyError) else str(error)


def read_card(path: Path) -> tuple[Card, Path]:
    """The card at ``path`` and the events file it names (beside it, in the same ``.ralph/``).

    Raises :class:`CardError` naming the file and what is wrong, for a card that is missing,
    a link, no regular file, too large, no JSON or not a card."""
    if path.parent.name != ".ralph":
        raise CardError(f"{path} is not in a workspace's .ralph/, where ralph writes cards")
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError as error:
        raise CardError(f"no card at {path}: this run wrote none") from error
    except EventsFileError as error:
        raise CardError(f"the card {path}: {error}") from error
    except OSError as error:
        raise CardError(f"cannot read the card {path}: {error.strerror}") from error
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_CARD_BYTES + 1)
    if len(data) > MAX_CARD_BYTES:
        raise CardError(f"the card {path} is over {MAX_CARD_BYTES} bytes")
    try:
        card = _CONVERTER.structure(json.loads(data), Card)
    except (ValueError, RecursionError) as error:
        raise CardError(f"the card {path} is no JSON: {error}") from error
    except cattrs.BaseValidationError as error:
        problems = "; ".join(cattrs.transform_error(error, format_exception=_why))
        raise CardError(f"the card {path} is not a card: {problems}") from error
    return card, path.parent.parent / card.events_file


def write_card(path: Path, card: Card) -> None:
    """Write ``card`` at ``path`` whole, then rename it into place, through no link: a
    server reads the old card or the new, and a link an agent left there is replaced, never
    followed. Raises ``OSError`` (or :class:`EventsFileError` for a linked folder)."""
    replace_whole(path, json.dumps(_CONVERTER.unstructure(card)).encode())
