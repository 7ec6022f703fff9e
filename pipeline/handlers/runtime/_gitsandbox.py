"""ralph's git in a run's sandbox (I/O).

With ``[git] run_hooks`` or ``run_filters`` on, ralph's git commands start the repository's
own code: its hooks (``.git/hooks``, or a ``core.hooksPath`` in the work tree, as husky sets
it), its attribute filters and merge drivers, and the scripts those call, all of which the
agent can edit. So those commands run in the run's sandbox: the same mounts as the agent's
(the work tree and git's objects and refs writable, ``.git/hooks``, ``.git/config`` and
``.git/info`` not, ``$HOME`` empty, the person's secrets hidden), no network, and only git's
own variables on top of the documented set.

Signing cannot work there (the signing program needs the person's keys, which the sandbox
hides), so :func:`signing_problem` refuses ``sign`` together with hooks or filters while the
sandbox is on, before a run starts.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import final

from attrs import frozen

from pipeline.core.config import GitConfig
from pipeline.core.sandbox import SandboxError
from pipeline.handlers.agents import ProcessSpec
from pipeline.handlers.runtime._gitcmd import GitError, WrappedCommand
from pipeline.handlers.sandbox import AgentNeeds, Sandbox

__all__ = ["SandboxedGit", "signing_problem"]


@final
@frozen(kw_only=True)
class SandboxedGit:
    """Runs ralph's git commands, and so the hooks and filters they start, in ``sandbox``."""

    sandbox: Sandbox

    @contextlib.contextmanager
    def wrapped(
        self, argv: tuple[str, ...], cwd: Path, env: Mapping[str, str]
    ) -> Iterator[WrappedCommand]:
        """``argv`` as bwrap runs it in the sandbox, for the time of the ``with`` block."""
        # git's own variables are ralph's choice (no editor, no prompt, who commits): kept.
        needs = AgentNeeds(set_env={k: v for k, v in env.items() if k.startswith("GIT_")})
        spec = ProcessSpec(argv=argv, cwd=cwd, env=env, output_path=Path(os.devnull))
        with contextlib.ExitStack() as stack:
            try:
                sandboxed = stack.enter_context(self.sandbox.wrapped(spec, needs))
            except (SandboxError, OSError) as error:
                raise GitError(f"cannot lay out the sandbox for git: {error}") from error
            yield WrappedCommand(
                argv=sandboxed.spec.argv, env=sandboxed.spec.env, pass_fds=sandboxed.spec.pass_fds
            )


def signing_problem(trust: GitConfig) -> str | None:
    """Why ``[git]`` (``trust``) cannot be kept with the sandbox on, or None."""
    if not trust.sign or not (trust.run_hooks or trust.run_filters):
        return None
    return (
        "[git] sign cannot be on together with run_hooks or run_filters while the sandbox is "
        "on: ralph's git runs the repository's hooks and filters in the sandbox, where the "
        "signing program cannot reach your keys; turn sign or run_hooks/run_filters off, or "
        'set [sandbox] mode = "off"'
    )
