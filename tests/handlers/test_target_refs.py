"""The landing's ``TargetRefs`` port: one contract every adapter passes on a real repository
(a swap only from the value it names, a refresh that shows where the target stands, a swap
whose answer was lost found done and never undone), run here against ``LocalRefs``."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from attrs import frozen

from pipeline.handlers.integration import LocalRefs, TargetRefs
from pipeline.handlers.runtime import revision

REF = "refs/heads/main"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


@frozen(kw_only=True)
class Landing:
    """A repository whose ``main`` is at ``a``, with ``b`` on it and ``c`` on ``b`` made (not
    on any branch); ``refs`` the adapter under test; ``elsewhere(ref, sha)`` moves the target
    as another landing would, behind the adapter's back."""

    root: Path
    refs: TargetRefs
    elsewhere: Callable[[str, str], None]
    a: str
    b: str
    c: str

    def now(self) -> str | None:
        """Where the target stands, as the landing reads it (after a refresh)."""
        self.refs.refresh(self.root, REF)
        return revision(self.root, REF)


def repository(root: Path) -> tuple[str, str, str]:
    """A repository at ``root`` on ``main`` at commit a, with b (on a) and c (on b) made."""
    root.mkdir()
    _git(root, "init", "--quiet", "--initial-branch", "main")
    _git(root, "config", "user.name", "test")
    _git(root, "config", "user.email", "test@example.invalid")
    _git(root, "commit", "--quiet", "--allow-empty", "-m", "a")
    a = _git(root, "rev-parse", "HEAD")
    tree = _git(root, "rev-parse", "HEAD^{tree}")
    b = _git(root, "commit-tree", tree, "-p", a, "-m", "b")
    return a, b, _git(root, "commit-tree", tree, "-p", b, "-m", "c")


class TargetRefsContract:
    """What every ``TargetRefs`` adapter does. Subclasses provide the ``landing`` fixture."""

    def test_a_swap_from_a_wrong_old_value_is_refused(self, landing: Landing) -> None:
        """A swap whose old value is not where the target stands moves nothing, also when
        another landing moved the target since it was read: that move stands."""
        assert not landing.refs.swap(landing.root, REF, landing.c, landing.b, "ralph: test")
        assert landing.now() == landing.a
        landing.elsewhere(REF, landing.b)
        assert not landing.refs.swap(landing.root, REF, landing.c, landing.a, "ralph: test")
        assert landing.now() == landing.b

    def test_refresh_then_swap_moves_the_target(self, landing: Landing) -> None:
        """After another landing moved the target, a refresh reads its new value, and a swap
        from that value moves it."""
        landing.elsewhere(REF, landing.b)
        assert landing.now() == landing.b
        assert landing.refs.swap(landing.root, REF, landing.c, landing.b, "ralph: test")
        assert landing.now() == landing.c

    def test_a_swap_repeated_after_success_is_found_done(self, landing: Landing) -> None:
        """A swap asked again after it was made (its answer lost) leaves the target at its
        new value whatever it answers, and, once another landing built on it, never takes
        the target back."""
        assert landing.refs.swap(landing.root, REF, landing.b, landing.a, "ralph: test")
        landing.refs.swap(landing.root, REF, landing.b, landing.a, "ralph: test")
        assert landing.now() == landing.b
        landing.elsewhere(REF, landing.c)
        assert not landing.refs.swap(landing.root, REF, landing.b, landing.a, "ralph: test")
        assert landing.now() == landing.c


class TestLocalRefs(TargetRefsContract):
    """The contract against the repository's own branch (today's landing)."""

    @pytest.fixture
    def landing(self, tmp_path: Path) -> Landing:
        root = tmp_path / "repo"
        a, b, c = repository(root)

        def elsewhere(ref: str, sha: str) -> None:
            _git(root, "update-ref", ref, sha)

        return Landing(root=root, refs=LocalRefs(), elsewhere=elsewhere, a=a, b=b, c=c)
