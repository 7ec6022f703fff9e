"""``escalate`` in ``[hats.NAME]`` as ralph.toml gives it: the ladders ``RunStarted`` records,
and a one-line error naming the key for everything wrong."""

from __future__ import annotations

import pytest

from pipeline import PipelineError
from pipeline.core.config import parse_config
from pipeline.events import Count, Ladder

TOPOLOGY = """
[hats.builder]
triggers = ["task.start", "review.rejected"]
publishes = ["review.ready"]
escalate = ["opus"]
escalate_after = { review_issues = 3 }
review_topics = ["review.rejected"]
step_down = true
[hats.critic]
triggers = ["review.ready"]
publishes = ["review.rejected", "LOOP_COMPLETE"]
"""


def refused(text: str) -> str:
    with pytest.raises(PipelineError) as caught:
        parse_config(text, "ralph.toml")
    return str(caught.value)


def test_the_developers_ladder_reaches_the_policy_with_its_defaults() -> None:
    text = '[hats.developer]\nescalate = ["m-strong", "m-best"]\nescalate_after = { blocked = 0 }\n'
    (ladder,) = parse_config(text, "ralph.toml").loop_policy().ladders
    assert ladder == Ladder(
        hat="developer",
        models=("m-strong", "m-best"),
        review_issues=Count(2),
        blocked=Count(0),
        validation_failed=Count(2),
    )


def test_a_topology_hats_ladder_names_the_topics_that_bring_its_work_back() -> None:
    (ladder,) = parse_config(TOPOLOGY, "ralph.toml").loop_policy().ladders
    assert (ladder.hat, ladder.models, ladder.review_issues) == ("builder", ("opus",), 3)
    assert ladder.review_topics == ("review.rejected",)
    assert ladder.step_down


def test_without_escalate_no_ladder_is_recorded() -> None:
    assert parse_config('[hats.developer]\nmodel = "m"\n', "ralph.toml").loop_policy().ladders == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[hats.reviewer]\nescalate = ["m"]\n',
            "hats.reviewer.escalate: only the developer's work bounces",
        ),
        (
            "[hats.developer]\nescalate_after = { review_issues = 1 }\n",
            "hats.developer.escalate_after: only a hat with escalate has it",
        ),
        ("[hats.developer]\nstep_down = true\n", "hats.developer.step_down: only a hat with"),
        (
            '[hats.developer]\nescalate = ["-m"]\n',
            "hats.developer.escalate: '-m' starts with '-'",
        ),
        ('[hats.developer]\nescalate = [" m"]\n', "is not a model name"),
        ('[hats.developer]\nescalate = ["m", "m"]\n', "a model is named twice"),
        (
            '[hats.developer]\nescalate = ["m"]\n'
            "escalate_after = { review_issues = 0, blocked = 0, validation_failed = 0 }\n",
            "every count is 0",
        ),
        (
            '[hats.developer]\nescalate = ["m"]\nescalate_after = { blocked = -1 }\n',
            "hats.developer.escalate_after.blocked: must be from 0 (not counted) to 1000, got -1",
        ),
        (
            '[hats.developer]\nescalate = ["m"]\nescalate_after = { bounced = 2 }\n',
            "hats.developer.escalate_after.bounced",
        ),
        (
            '[hats.developer]\nescalate = ["m"]\nreview_topics = ["review.rejected"]\n',
            "hats.developer.review_topics: only a hat with triggers has it",
        ),
        (
            TOPOLOGY.replace('review_topics = ["review.rejected"]', 'review_topics = ["a..b"]'),
            "hats.builder.review_topics: malformed pattern",
        ),
        ('[hats.developer]\nescalate = ["claude opus"]\n', "is not a model name"),
        ('[hats.developer]\nescalate = ["a\\nb"]\n', "is not a model name"),
        (
            '[hats.developer]\nmodel = "m"\nescalate = ["m", "n"]\n',
            "hats.developer.escalate: 'm' is the hat's own model (rung 0)",
        ),
        (
            TOPOLOGY.replace(
                'review_topics = ["review.rejected"]', 'review_topics = ["review.rejectd"]'
            ),
            "hats.builder.review_topics: 'review.rejectd' matches none of the hat's triggers",
        ),
        (
            TOPOLOGY.replace('review_topics = ["review.rejected"]\n', "").replace(
                "{ review_issues = 3 }", "{ review_issues = 3, blocked = 0, validation_failed = 0 }"
            ),
            "hats.builder.escalate_after: only review_issues counts",
        ),
        (
            TOPOLOGY + '[hats.developer]\nescalate = ["m"]\n',
            "hats.developer: the developer works in the built-in pipeline only",
        ),
    ],
)
def test_a_bad_ladder_is_refused_naming_its_key(text: str, message: str) -> None:
    assert message in refused(text)
