"""What a person gives a run (an answer, guidance, a memory or task note) is refused, with the
command's own error and nothing kept, when no store could keep it: a NUL character, or bytes
that are not UTF-8 (lone surrogates, as ``sys.argv`` carries them)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.engine import (
    AnswerError,
    ContextError,
    GuidanceError,
    guide,
    respond,
    write_note,
)
from pipeline.events import NoteKind


@pytest.mark.parametrize(("text", "said"), [("a\x00b", "NUL character"), ("a\udcff", "not UTF-8")])
def test_text_no_store_can_keep_is_refused_before_anything_is_written(
    tmp_path: Path, text: str, said: str
) -> None:
    """``respond``, ``guide`` and ``write_note`` each refuse such a text in their own error,
    naming what is wrong, and leave the workspace without a store."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with pytest.raises(AnswerError, match=said):
        respond(tmp_path, text, "q0")
    with pytest.raises(GuidanceError, match=said):
        guide(tmp_path, text)
    with pytest.raises(ContextError, match=said):
        write_note(tmp_path, NoteKind.MEMORY_ADDED, None, text)
    assert not (tmp_path / ".git" / "ralph").exists()
