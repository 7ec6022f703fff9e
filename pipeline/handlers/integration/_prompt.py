"""The ``merger`` hat's prompt: what a resolver agent is told about a replay's conflicts."""

from __future__ import annotations

from typing import Final

__all__ = ["MERGER_HAT", "merger_prompt"]

MERGER_HAT: Final = "merger"
"""The hat a resolver wears (``RALPH_HAT``); its model and arguments are its agent entry's."""


def merger_prompt(branch: str, target: str, paths: tuple[str, ...]) -> str:
    """The prompt for the conflicts in ``paths`` of ``branch``'s replay onto ``target``."""
    listed = "\n".join(f"- `{path}`" for path in paths)
    return f"""# Resolve merge conflicts

The work of branch `{branch}` is being replayed onto `{target}`, one commit at a time, and
this commit conflicts with what `{target}` changed meanwhile. The conflicted files:

{listed}

Edit each of them so that it keeps what both sides meant: the change `{target}` made and the
change this commit makes. Remove every conflict marker (`<<<<<<<`, `=======`, `>>>>>>>`).
Change nothing else unless the resolution needs it.

Do not commit, stage, or run `git rebase`, `git merge` or `git reset`: ralph checks the files,
goes on with the replay, and runs the gates on the result.

When you are done, write `completed` on the first line of `.agent/out/status`, and what you
did on the next. If you cannot resolve a conflict, leave its markers in place, write `failed`
there instead, and why: a person will resolve it.
"""
