"""Hypothesis strategies for property-testing pipelines (needs the ``testing`` extra).

``from pipeline.app.testing import events, reachable_states`` gives strategies for every event
variant and for states that simulated runs pass through. Importing this package registers
strategies for the value types, so ``st.from_type`` works on any event class.
"""

from pipeline.app.testing._policies import hats, ladders_of, limit_policies, loop_policies
from pipeline.app.testing._sandbox import endpoints, host_names, sandbox_policies
from pipeline.app.testing._strategies import (
    HypothesisChooser,
    budgets,
    chains,
    effects,
    events,
    instants,
    json_values,
    reachable_states,
    register_strategies,
    response_facts,
    simulated_runs,
    spend_lines,
    usage_facts,
    usd,
    window_reports,
    world_configs,
)
from pipeline.app.testing._topics import topic_patterns, topics
from pipeline.app.testing._topologies import (
    gate_specs,
    postcondition_policies,
    tamper_policies,
    topologies,
)

__all__ = [
    "HypothesisChooser",
    "budgets",
    "chains",
    "effects",
    "endpoints",
    "events",
    "gate_specs",
    "hats",
    "host_names",
    "instants",
    "json_values",
    "ladders_of",
    "limit_policies",
    "loop_policies",
    "postcondition_policies",
    "reachable_states",
    "register_strategies",
    "response_facts",
    "sandbox_policies",
    "simulated_runs",
    "spend_lines",
    "tamper_policies",
    "topic_patterns",
    "topics",
    "topologies",
    "usage_facts",
    "usd",
    "window_reports",
    "world_configs",
]
