"""The agent sandbox, on this machine: probing bubblewrap, laying out and starting sandboxed
processes (I/O). The rules themselves are pure, in :mod:`pipeline.sandbox`."""

from pipeline.handlers.sandbox._probe import INSTALL_HINT, Probe, probe
from pipeline.handlers.sandbox._sandbox import AgentNeeds, Sandbox, WorkspacePaths

__all__ = ["INSTALL_HINT", "AgentNeeds", "Probe", "Sandbox", "WorkspacePaths", "probe"]
