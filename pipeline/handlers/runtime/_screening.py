"""The screen of a run's changes, carried out in the workspace (I/O): where the run's changes
start, the untracked files it started with, and what the change from there holds.

The pure detectors (:mod:`pipeline.core.screening`) judge the texts; this module gathers them
(:mod:`._screen`), adds what only I/O can tell (secrets on added lines, the work tree left
dirty, the workspace files a gate's command runs) and reports one ``ChangesScreened``. It
decides nothing: what a hit does is the reducer's (``pipeline.reducers._screening``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import orjson
from attrs import frozen

from pipeline.core.config import RalphConfig
from pipeline.core.effects import ScreenChanges
from pipeline.core.screening import Protection, ScreenRules, named_files, screen, tree_dirty
from pipeline.events import (
    ChangesScreened,
    Count,
    GateSpec,
    Instant,
    PipelineEvent,
    RebaseSucceeded,
    ScreenBaseRecorded,
    ScreenHit,
    ScreenKind,
    WorkspaceErrorKind,
)
from pipeline.handlers.runtime._collecting import Collector
from pipeline.handlers.runtime._gitcmd import GitError, GitPolicy, resolved
from pipeline.handlers.runtime._io import facts_or_io_error
from pipeline.handlers.runtime._layout import WorkspaceLayout
from pipeline.handlers.runtime._run_setup import config_and_prompt
from pipeline.handlers.runtime._screen import Gathered, gather_changes, untracked_baseline
from pipeline.handlers.runtime._secrets import find_secrets

__all__ = [
    "Collect",
    "RunScreen",
    "gate_protections",
    "record_screen_base",
    "run_screen",
]


def record_screen_base(
    root: Path, policy: GitPolicy, clock: Callable[[], Instant], ref: str = "HEAD^{commit}"
) -> PipelineEvent:
    """``ScreenBaseRecorded`` with the commit ``ref`` names now (None: no commit yet)."""
    return ScreenBaseRecorded(sha=resolved(root, ref, policy), at=clock())


def _baseline(saved: Path) -> dict[str, str]:
    try:
        data = orjson.loads(saved.read_bytes())
    except FileNotFoundError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, str)}


def gate_protections(root: Path, gates: Sequence[GateSpec]) -> tuple[Protection, ...]:
    """A protection for each workspace file a gate's command names (``scripts/check.sh``,
    ``tests/conftest.py``), read as a pinned gate reads them (:func:`named_files`): an agent
    that edits what its gate runs has edited the gate, and its edit would land."""
    found: dict[str, Protection] = {}
    for gate in gates:
        for path in sorted(named_files((gate.argv,), lambda p: os.path.isfile(root / p))):
            found.setdefault(path, Protection(pattern=path, reason=f"gate '{gate.name}' runs it"))
    return tuple(found.values())


def _rules(effect: ScreenChanges, root: Path) -> ScreenRules:
    tamper, post = effect.tamper, effect.postconditions
    protect = gate_protections(root, effect.gates) if tamper is not None else ()
    if tamper is not None:
        protect += tuple(
            Protection(pattern=g, reason="protected in [tamper]") for g in tamper.protect
        )
    return ScreenRules(
        tamper=tamper is not None,
        no_skipped_tests=post is not None and post.no_skipped_tests,
        todo_markers=() if post is None else post.todo_markers,
        test_paths=() if tamper is None else tamper.test_paths,
        protect=protect,
        allow=() if tamper is None else tamper.allow,
    )


Collect = Callable[[str | None, Sequence[GateSpec], tuple[str, ...]], tuple[ScreenHit, ...]]
"""The collection check: the hits of comparing the gates' tests on a base (None: none) with
those on the work tree, leaving out the allowed paths (see :class:`._collecting.Collector`)."""


def _hits(
    effect: ScreenChanges, root: Path, gathered: Gathered, collect: Collect | None
) -> tuple[ScreenHit, ...]:
    hits = list(screen(gathered.changes, _rules(effect, root)))
    if collect is not None and effect.tamper is not None:
        hits.extend(collect(effect.base, effect.gates, effect.tamper.allow))
    post = effect.postconditions
    if post is not None and post.no_secrets:
        hits.extend(find_secrets(gathered.changes))
    if post is not None and post.clean_tree:
        hits.extend(tree_dirty(gathered.dirty))
    if gathered.incomplete:
        detail = f"stopped after {len(gathered.changes)} changed files"
        hits.append(
            ScreenHit(kind=ScreenKind.SCREEN_INCOMPLETE, path=".", line=Count(0), detail=detail)
        )
    return tuple(attrs.evolve(h, path=_utf8(h.path), detail=_utf8(h.detail)) for h in hits)


def _utf8(text: str) -> str:
    """``text`` as a fact can hold it: a path that is not UTF-8 is read with surrogate
    escapes, which no JSON encoder takes; they become U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


@frozen(kw_only=True)
class RunScreen:
    """The screen of one run's changes in its workspace; ``on`` False (the run does not
    screen) makes it record nothing."""

    on: bool
    root: Path
    saved: Path
    """Where the run keeps the texts of ``own`` that were untracked when it started."""
    own: tuple[str, ...]
    """``ralph.toml`` and the prompt file: the only untracked files a run starts with that the
    screen reads (it starts on a clean tree, and what ``--allow-dirty`` keeps is left out)."""
    policy: GitPolicy
    excludes: tuple[str, ...]
    """Paths the screen leaves out besides ralph's own folders (ralph's own files, the
    person's kept paths), as :func:`._screen.gather_changes` takes them."""
    clock: Callable[[], Instant]
    collect: Collect | None = None
    """The collection check (None: not made)."""

    def started(self) -> tuple[PipelineEvent, ...]:
        """At a run's start: keep the text of ``ralph.toml`` and the prompt file when git does
        not track them (as ``ralph init`` leaves them), so the screen tells the agent's changes
        to them from the files themselves; and record where the run's changes start."""
        if not self.on:
            return ()
        self.saved.parent.mkdir(parents=True, exist_ok=True)
        self.saved.write_bytes(orjson.dumps(untracked_baseline(self.root, self.own, self.policy)))
        return (record_screen_base(self.root, self.policy, self.clock),)

    def rebased(self, facts: Sequence[PipelineEvent], onto: str) -> tuple[PipelineEvent, ...]:
        """After a rebase that succeeded, the run's changes start at the tip of ``onto``: the
        upstream commits are not the agent's work."""
        if not self.on or not any(isinstance(f, RebaseSucceeded) for f in facts):
            return ()
        return (record_screen_base(self.root, self.policy, self.clock, f"{onto}^{{commit}}"),)

    def changes(self, effect: ScreenChanges) -> tuple[PipelineEvent, ...]:
        """Screen the change from ``effect.base`` to the work tree: ``ChangesScreened``, or a
        ``WorkspaceIoError`` when git cannot tell (the screen is asked for again on resume)."""

        def run() -> tuple[PipelineEvent, ...]:
            baseline = _baseline(self.saved)
            gathered = gather_changes(
                self.root,
                effect.base,
                policy=self.policy,
                excludes=self.excludes,
                baseline=baseline,
            )
            hits = _hits(effect, self.root, gathered, self.collect)
            files = Count(len(gathered.changes))
            return (
                ChangesScreened(
                    scope=effect.scope, base=effect.base, files=files, hits=hits, at=self.clock()
                ),
            )

        kind, clock = WorkspaceErrorKind.GIT, self.clock
        return facts_or_io_error(run, kind, ".", clock, "cannot screen: ", (GitError, OSError))


def run_screen(
    layout: WorkspaceLayout,
    config: RalphConfig,
    run_id: str,
    keep_out: Sequence[str],
    policy: GitPolicy,
    clock: Callable[[], Instant],
    collector: Collector | None,
) -> RunScreen:
    """The screen of run ``run_id``'s changes: what commits leave out (``keep_out``) is left
    out of it too, but ``ralph.toml`` and the prompt file, which an agent must not change
    either; ``collector`` makes the collection check (None: none). On when the run screens
    or pins its gates (both need its base)."""
    screened = config_and_prompt(layout, config.prompt_file)
    excludes = tuple(p for p in keep_out if p not in screened)
    saved = layout.run_state(run_id, "screen-baseline.json")
    loop = config.loop_policy()
    screens = loop.screens
    # Pinned gates need the run's base, which the screen records: on when either is.
    on = screens or loop.pins
    collect = collector.hits if screens and collector is not None else None
    return RunScreen(
        on=on,
        root=layout.root,
        saved=saved,
        own=screened,
        policy=policy,
        excludes=excludes,
        clock=clock,
        collect=collect,
    )
