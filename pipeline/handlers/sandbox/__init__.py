"""The agent sandbox on this machine (I/O); the rules themselves are pure, in
:mod:`pipeline.core.sandbox`.

- :func:`probe` says whether bubblewrap can start a sandbox here, and why not.
- :class:`Sandbox` turns a process into the same process started by bwrap: the mount plan,
  the filtered environment, the account files.
- :class:`NetworkGate` serves, from ralph's process, a relay folder (bound at ``/run/ralph``)
  with a unix socket per loopback endpoint and an HTTP proxy that allows only the listed
  ``host:port`` pairs and counts its refusals; it gives the relay's command line and the proxy
  variables (``docs/research/sandbox-design.md``, section 8).
- :func:`host_path` is the ``PATH`` ralph finds its own host programs on (git, bwrap): none
  of the work tree's folders, nor a relative one.
- :func:`relay_source` is the stdlib-only relay that runs inside, in front of the agent.
"""

from pipeline.handlers._host_path import host_path, lies_in
from pipeline.handlers.sandbox._network import NO_PROXY, NetworkGate, NetworkSeen, relay_source
from pipeline.handlers.sandbox._probe import INSTALL_HINT, Probe, probe, reach_from_inside
from pipeline.handlers.sandbox._relay import FAILED as RELAY_FAILED
from pipeline.handlers.sandbox._sandbox import (
    AgentNeeds,
    Sandbox,
    WorkspacePaths,
    environment_rules,
    reachable,
)

__all__ = [
    "INSTALL_HINT",
    "NO_PROXY",
    "RELAY_FAILED",
    "AgentNeeds",
    "NetworkGate",
    "NetworkSeen",
    "Probe",
    "Sandbox",
    "WorkspacePaths",
    "environment_rules",
    "host_path",
    "lies_in",
    "probe",
    "reach_from_inside",
    "reachable",
    "relay_source",
]
