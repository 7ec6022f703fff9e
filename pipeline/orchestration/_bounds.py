"""How many effects a run can take at most, computed from its budgets (pure).

The simulation tests assert that every run ends within this bound whatever the handlers report,
and embedders can use it as a watchdog.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.events import Budget, LoopPolicy, RoleChain

__all__ = ["step_bound"]


def step_bound(budget: Budget, chains: Sequence[RoleChain], loop: LoopPolicy | None = None) -> int:
    """An upper bound on the effects of a run with ``budget`` and chains of the given lengths.

    Each agent task takes at most ``(retries + 1)`` attempts per agent in its chain, each
    attempt at most a prompt (rendered again to carry malformed-line feedback or notices), a
    backoff, an invocation, the collection of its report after a valid structured response, and
    a wait for a person (one question is pending at a time, and only an invocation asks one);
    malformed structured responses add at most ``max_formatting_retries + 1`` attempts
    (``loop``'s, 2 when not given) and a call for a person; a task adds its begin, prompt,
    commit, rebase, abort and checkpoint effects, and a round of the screen and the gates (a
    developer task's work, before its commit). A run has one planning task, at most
    ``max_iterations`` development iterations (each with a commit task), at most
    ``max_review_passes`` review passes (each with a fix and a commit task), a validation per
    iteration (each a round of the screen and the gates before the final check), dev-fix once,
    finalization and termination. A topology's hats work in the development iterations, each
    through its own chain when it has one.
    """
    topology = None if loop is None else loop.topology
    hat_chains = () if topology is None else tuple(len(hat.chain) for hat in topology.hats)
    longest = max([*(len(chain.agents) for chain in chains), *hat_chains, 1])
    # A structured response may be malformed max_formatting_retries + 1 times per task, each
    # time after an invocation that counts against no retry.
    corrections = 1 + (2 if loop is None else loop.max_formatting_retries)
    attempts = (budget.max_retries_per_agent + 1) * longest + corrections
    # A developer task that did work may run a round of the screen and the gates.
    round_size = 0 if loop is None else len(loop.gates) + int(loop.screens)
    per_task = 5 * attempts + 9 + round_size
    tasks = 1 + 2 * budget.max_iterations + 3 * budget.max_review_passes + 2
    validations = budget.max_iterations
    return tasks * per_task + (2 + round_size) * validations + 16
