"""The inbox in a SQL store (I/O): the statements the SQLite and the PostgreSQL stores share
(with their placeholder), and the inbox an older release's three tables make.

Messages are numbered 1, 2, ... per addressee and kind, in the order posted. A poster holds
the store's write lock for its transaction (SQLite has one writer; a PostgreSQL poster locks
the table), so numbers are handed out in commit order: a reader that took the messages after
``n`` never finds one filled in below a number it has seen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final

from pipeline.events import RunId
from pipeline.handlers.store._port import Letter, Message, MessageKind

__all__ = ["WORKSPACE", "legacy_inbox", "post_letters", "read_inbox"]

WORKSPACE: Final = ""
"""The address of the workspace (no run id is empty)."""

Execute = Callable[[str, tuple[Any, ...]], Any]
"""A connection's ``execute`` (sqlite3's and psycopg's give a cursor alike)."""
Fetch = Callable[[str, tuple[Any, ...]], list[Any]]
"""Runs a statement and gives its rows."""

_COLUMNS: Final = "kind, address, number, key, subject, text, posted_at"


def _message(row: Sequence[Any]) -> Message:
    kind, address, number, key, subject, text, posted = row
    return Message(
        kind=MessageKind(kind),
        to=None if address == WORKSPACE else RunId(address),
        number=int(number),
        text=str(text),
        key=key,
        subject=subject,
        posted_at=posted if isinstance(posted, datetime) else datetime.fromisoformat(posted),
    )


def post_letters(
    execute: Execute,
    letters: Sequence[Letter],
    now: datetime,
    placeholder: str,
    *,
    text: Callable[[str], str] = str,
) -> list[Message]:
    """Keep ``letters`` with the store's write lock held (the caller's transaction): each
    numbered after its addressee's last of its kind, or, when its key is kept already, the
    message kept earlier. ``text`` makes a free text storable (PostgreSQL holds no NUL)."""
    p = placeholder
    kept = []
    for letter in letters:
        address = WORKSPACE if letter.to is None else letter.to
        kind = letter.kind.value
        if letter.key is not None:
            found = execute(
                f"SELECT {_COLUMNS} FROM inbox WHERE address = {p} AND kind = {p} AND key = {p}",
                (address, kind, letter.key),
            ).fetchone()
            if found is not None:
                kept.append(_message(found))
                continue
        ((last,),) = execute(
            f"SELECT COALESCE(MAX(number), 0) FROM inbox WHERE address = {p} AND kind = {p}",
            (address, kind),
        ).fetchall()
        values = (kind, address, int(last) + 1, letter.key, letter.subject, text(letter.text))
        posted = now.isoformat() if p == "?" else now
        execute(
            f"INSERT INTO inbox ({_COLUMNS}) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p})",
            (*values, posted),
        )
        kept.append(_message((*values, now)))
    return kept


def read_inbox(
    fetch: Fetch,
    source: str,
    kind: MessageKind,
    to: RunId | None,
    after: int,
    placeholder: str,
) -> list[Message]:
    """The messages of ``kind`` for ``to`` numbered after ``after``, in order, from ``source``
    (``inbox``, or an older release's tables as :func:`legacy_inbox` reads them)."""
    p = placeholder
    rows = fetch(
        f"SELECT {_COLUMNS} FROM {source} WHERE address = {p} AND kind = {p} AND number > {p} "
        "ORDER BY number",
        (WORKSPACE if to is None else to, kind.value, after),
    )
    return [_message(row) for row in rows]


def legacy_inbox(
    *, answers: bool, guidance: bool, notes: bool, postgres: bool, sent: bool = False
) -> str:
    """The inbox an older release's tables hold (those it has: ``answers``, ``guidance``,
    ``context_notes``), as one ``SELECT`` in the inbox's columns: what the migration to the
    one inbox copies, and what a reader of a store it may not migrate reads instead.

    Answers are numbered per run in the order given; guidance and notes keep their numbers
    (runs have counted them: a run's state says how many it took in). A note's posting time
    was never kept: the time of reading stands for it. PostgreSQL guidance keeps the key its
    sender drew (``sent``: the column is there)."""
    now = "now()" if postgres else "datetime('now') || '+00:00'"
    parts = []
    if answers:
        parts.append(
            "SELECT 'answer' AS kind, run_id AS address, ROW_NUMBER() OVER (PARTITION BY run_id "
            "ORDER BY answered_at, question_id) AS number, question_id AS key, "
            "CAST(NULL AS TEXT) AS subject, text, answered_at AS posted_at FROM answers"
        )
    if guidance:
        key = "sent" if sent else "CAST(NULL AS TEXT)"
        parts.append(
            f"SELECT 'guidance' AS kind, run_id AS address, number, {key} AS key, hat AS subject, "
            "text, given_at AS posted_at FROM guidance"
        )
    if notes:
        parts.append(
            "SELECT 'note' AS kind, '' AS address, number, uid AS key, CAST(NULL AS TEXT) AS "
            f"subject, note AS text, {now} AS posted_at FROM context_notes"
        )
    if not parts:
        return (
            "SELECT CAST(NULL AS TEXT) AS kind, CAST(NULL AS TEXT) AS address, 0 AS number, "
            "CAST(NULL AS TEXT) AS key, CAST(NULL AS TEXT) AS subject, CAST(NULL AS TEXT) AS "
            f"text, {now} AS posted_at WHERE 1 = 0"
        )
    return " UNION ALL ".join(parts)
