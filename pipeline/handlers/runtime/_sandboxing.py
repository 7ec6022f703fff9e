"""Choosing a run's sandbox from ``[sandbox] mode`` and what the machine can do, and running a
process in it, ralph's own git included (I/O). See ``docs/research/sandbox-design.md``,
sections 5 and 11.

``off``: no sandbox, nothing probed. ``auto``: on when the probe works, else off with the
reason said. ``required``: on, or :class:`SandboxUnavailableError` before anything runs.

With ``[git] run_hooks`` or ``run_filters`` on, ralph's git commands start the repository's
own code: its hooks (``.git/hooks``, or a ``core.hooksPath`` in the work tree, as husky sets
it), its attribute filters and merge drivers, and the scripts those call, all of which the
agent can edit. So those commands run in the run's sandbox (:class:`SandboxedGit`): the same
mounts as the agent's (the work tree and git's objects and refs writable, ``.git/hooks``,
``.git/config`` and ``.git/info`` not, ``$HOME`` empty, the person's secrets hidden), no
network, and only git's own variables on top of the documented set. Signing cannot work there
(the signing program needs the person's keys, which the sandbox hides), so
:func:`signing_problem` refuses ``sign`` together with hooks or filters while the sandbox is
on, before a run starts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import final

import attrs
from attrs import frozen

from pipeline import PipelineError
from pipeline.core.agents import PRESETS
from pipeline.core.config import GitConfig, RalphConfig
from pipeline.core.sandbox import (
    Endpoint,
    NetworkMode,
    SandboxError,
    SandboxMode,
    SandboxPolicy,
    parse_endpoint,
    withheld_variables,
)
from pipeline.events import (
    Instant,
    Role,
    SandboxChecked,
)
from pipeline.handlers.agents import ProcessResult, ProcessSpec, not_started, run_process
from pipeline.handlers.runtime._gitcmd import GitError, GitPolicy, WrappedCommand, work_trees
from pipeline.handlers.runtime._layout import WorkspaceLayout, git_dirs
from pipeline.handlers.sandbox import (
    AgentNeeds,
    NetworkSeen,
    Probe,
    Sandbox,
    WorkspacePaths,
    environment_rules,
    probe,
)
from pipeline.handlers.sandbox import reachable as reachable_by

__all__ = [
    "SandboxChoice",
    "SandboxUnavailableError",
    "SandboxedGit",
    "agents_needs",
    "choose_sandbox",
    "git_policy_in",
    "run_in",
    "signing_problem",
]

_OFF_HINT = 'or set [sandbox] mode = "off" to silence this'


class SandboxUnavailableError(PipelineError, RuntimeError):
    """``[sandbox] mode = "required"`` and the machine cannot run the sandbox."""


@final
@frozen(kw_only=True)
class SandboxChoice:
    """What a run runs its agents in, decided once before it starts: the ``policy`` and the
    working ``probe`` (None: directly), and the words that say so (``on (bubblewrap
    0.8.0)``, ``off (bwrap not found on PATH: ...)``)."""

    policy: SandboxPolicy
    probe: Probe | None
    said: str
    agents: Mapping[str, AgentNeeds] = attrs.field(factory=dict)
    """What each agent needs in the sandbox, by agent name (:func:`agents_needs`), worked out
    once when the choice was made, and only when the sandbox can start."""

    def needs(self, name: str) -> AgentNeeds:
        """What agent ``name`` needs in the sandbox (nothing, with no sandbox to run in)."""
        return self.agents.get(name, AgentNeeds())

    def sandbox(
        self,
        layout: WorkspaceLayout,
        config: RalphConfig,
        run_id: str | None,
        stores: tuple[Path, ...],
    ) -> Sandbox | None:
        """The sandbox of run ``run_id`` in ``layout`` (None when off; ``run_id`` None: of
        ralph's own git, which writes no run's events file); ``stores``: files of a store that
        may lie in the work tree."""
        if self.probe is None:
            return None
        root = layout.root
        paths = WorkspacePaths(
            workspace=root,
            ralph_dir=layout.ralph_dir,
            events_file=None if run_id is None else layout.events_file(run_id),
            marker_dir=layout.completion_marker.parent,
            config_file=layout.config,
            prompt_file=root / config.prompt_file,
            state_dir=layout.state_dir,
            git_dirs=git_dirs(root),
            store=next((s for s in stores if s.resolve().is_relative_to(root.resolve())), None),
        )
        return Sandbox(policy=self.policy, probe=self.probe, paths=paths)

    def checked(self, environ: Mapping[str, str], at: Instant) -> tuple[SandboxChecked, ...]:
        """The fact saying what the run's agents run in (none with the sandbox off in
        ``ralph.toml``: such a run is as runs always were); ``environ``: the environment
        agents are given, whose variables no agent gets in the sandbox are named (names
        only)."""
        if self.policy.mode is SandboxMode.OFF:
            return ()
        reach: tuple[str, ...] = ()
        withheld: set[str] = set()
        if self.probe is not None:
            rules = (environment_rules(self.policy, needs) for needs in self._all_needs())
            withheld = set.intersection(*(set(withheld_variables(environ, r)) for r in rules))
            reach = tuple(map(str, self.reachable()))
        return (
            SandboxChecked(
                mode=self.policy.mode,
                on=self.probe is not None,
                said=self.said,
                endpoints=reach,
                withheld=tuple(sorted(withheld)),
                at=at,
            ),
        )

    def reachable(self) -> tuple[Endpoint, ...]:
        """Every endpoint some agent may reach."""
        policy = self.policy
        found = (e for needs in self._all_needs() for e in reachable_by(policy, needs))
        return tuple(dict.fromkeys(found))

    def _all_needs(self) -> list[AgentNeeds]:
        """What each agent needs (a process with none, when there is no agent)."""
        return list(self.agents.values()) or [AgentNeeds()]


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


def git_policy_in(
    choice: SandboxChoice | None,
    layout: WorkspaceLayout,
    config: RalphConfig,
    stores: tuple[Path, ...],
) -> GitPolicy:
    """ralph's git policy for runs in ``layout`` as ``[git]`` sets it: the repository's hooks
    and filters it allows run in the sandbox ``choice`` made (None: directly), with no
    network: a hook has no model to reach (``stores``: see :meth:`SandboxChoice.sandbox`)."""
    trust, where = config.git, None
    sandbox = None if choice is None else choice.sandbox(layout, config, None, stores)
    if sandbox is not None and (trust.run_hooks or trust.run_filters):
        offline = attrs.evolve(sandbox.policy, network=NetworkMode.NONE)
        # ralph's own git writes objects, refs and the index: the one process whose git
        # folder is writable (every agent, gate and hook sees it read-only).
        paths = attrs.evolve(sandbox.paths, git_writable=True)
        where = SandboxedGit(sandbox=attrs.evolve(sandbox, policy=offline, paths=paths))
    return GitPolicy(
        run_hooks=trust.run_hooks, sign=trust.sign, run_filters=trust.run_filters, sandbox=where
    )


def _low_port(reachable: tuple[Endpoint, ...]) -> str | None:
    """Why the sandbox cannot serve ``reachable``: a loopback endpoint below port 1024 is
    relayed at its own port inside, where an agent without privileges cannot listen."""
    low = [str(e) for e in reachable if e.is_loopback and e.port < 1024]
    if not low:
        return None
    return (
        f"the sandbox cannot relay a loopback endpoint below port 1024 ({', '.join(low)}): "
        "serve it on a port from 1024"
    )


def agents_needs(config: RalphConfig, environ: Mapping[str, str]) -> dict[str, AgentNeeds]:
    """What each agent of ``config`` needs in the sandbox, by name: its preset's, its
    ``sandbox`` table's, its ``env`` set as the person wrote it, and its model endpoints: its
    CLI's declared ones (``pipeline.core.agents``) for every model it may run (its own, its
    hats' and their escalation ladders'), as its ``env`` and ``environ`` move them; none for
    a command agent, whose endpoints ``allow`` names. Raises
    :class:`SandboxUnavailableError` naming the agent when a variable that moves its CLI is
    no URL."""
    hats = (*(config.hats.for_role(role) for role in Role), *config.hats.work.values())
    ladders = [model for hat in hats for model in hat.escalate]
    found: dict[str, AgentNeeds] = {}
    for name, agent in config.agents.items():
        models = dict.fromkeys([agent.model, *(agent.model_for(hat) for hat in hats), *ladders])
        preset = PRESETS.get(agent.preset) if agent.preset is not None else None
        try:
            derived = (
                [e for m in models for e in preset.endpoints.resolve(m, agent.env, environ)]
                if preset is not None
                else []
            )
        except SandboxError as error:
            raise SandboxUnavailableError(f"agents.{name}: {error}") from None
        table = agent.sandbox
        found[name] = AgentNeeds(
            preset=agent.preset,
            endpoints=tuple(dict.fromkeys(derived)),
            allow=tuple(map(parse_endpoint, table.allow)),
            read=table.read,
            write=table.write,
            pass_env=table.pass_env,
            set_env=dict(agent.env),
        )
    return found


def choose_sandbox(
    config: RalphConfig, environ: Mapping[str, str] | None = None, *, workspace: Path
) -> SandboxChoice:
    """The sandbox a run of ``config`` in ``workspace`` runs its agents in, as ``[sandbox]``
    asks and the machine allows (``environ``: the agents' environment, default this
    process's; its ``PATH`` finds bwrap, but not in the work trees: :func:`work_trees`), with
    what each agent needs in it. Raises
    :class:`SandboxUnavailableError` when it is required and cannot start, when an agent's
    base-URL setting is no endpoint, or when it would be on while ``[git]`` signs commits
    whose hooks or filters must run in it (:func:`signing_problem`)."""
    environ = os.environ if environ is None else environ
    policy = config.sandbox.policy()
    if policy.mode is SandboxMode.OFF:
        return SandboxChoice(policy=policy, probe=None, said="off ([sandbox] mode is off)")
    found = probe(environ, policy.uid, work_trees(workspace))
    # Only when it can start: a bad base-URL variable must not stop a run that runs no sandbox.
    agents = agents_needs(config, environ) if found.works else {}
    choice = SandboxChoice(policy=policy, probe=found, said="", agents=agents)
    reach = choice.reachable()
    reason = found.reason or _low_port(reach)
    signing = signing_problem(config.git) if reason is None else None
    if signing is not None:
        raise SandboxUnavailableError(signing)
    if reason is not None:
        if policy.mode is SandboxMode.REQUIRED:
            raise SandboxUnavailableError(
                f'the sandbox is required ([sandbox] mode = "required") but {reason}'
            )
        return SandboxChoice(
            policy=policy, probe=None, said=f"off ({reason}; {_OFF_HINT})", agents=agents
        )
    network = ", ".join(map(str, reach)) or "none"
    return attrs.evolve(choice, said=f"on ({found.backend}; network: {network})")


def _missing_program(spec: ProcessSpec) -> str | None:
    """Why ``spec``'s program cannot be started, as the system says it, or None."""
    program = spec.argv[0]
    if "/" in program:
        path = spec.cwd / program
        found = os.access(path, os.X_OK) and not path.is_dir()
    else:
        found = shutil.which(program, path=spec.env.get("PATH", os.defpath)) is not None
    return None if found else f"[Errno 2] No such file or directory: {program!r}"


def _as_signalled(result: ProcessResult) -> ProcessResult:
    """``result`` with a death by signal said as running directly says it (``-N``): bwrap
    (and the relay) report the sandboxed process killed by signal N as exit status 128 + N,
    which would read as an ordinary failure, not a killed agent."""
    code = result.exit_code
    if code is None or not 128 < code < 128 + signal.NSIG:
        return result
    return attrs.evolve(result, exit_code=-(code - 128))


def run_in(
    sandbox: Sandbox | None, spec: ProcessSpec, needs: AgentNeeds
) -> tuple[ProcessResult, NetworkSeen]:
    """Run ``spec`` in ``sandbox`` (directly when None): what happened, and what the
    sandbox's network gate saw of it. A sandbox whose settings contradict each other for this
    process (a ``write`` entry inside the agent program) starts nothing: the result says why."""
    if sandbox is None:
        return run_process(spec), NetworkSeen()
    missing = _missing_program(spec)
    if missing is not None:
        # Said as running it directly says it: bwrap would only exit 1 with its own words.
        return not_started(missing, not_found=True), NetworkSeen()
    try:
        with sandbox.wrapped(spec, needs) as sandboxed:
            return _as_signalled(run_process(sandboxed.spec)), sandboxed.seen()
    except (SandboxError, OSError) as error:
        why = f"cannot lay out the sandbox: {error}"
        return not_started(why), NetworkSeen()
