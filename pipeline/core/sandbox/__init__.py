"""The agent sandbox, pure: what an agent may see, write and reach, as values and bwrap
arguments (``docs/research/sandbox-design.md``, sections 5 to 8 and 10).

- :class:`SandboxPolicy` is ``[sandbox]`` in ``ralph.toml``; :class:`Endpoint` a ``host:port``
  the network gate lets through, read from a base URL or an ``allow`` entry by
  :func:`parse_endpoint`.
- :func:`mount_plan` turns a :class:`MountInputs` (the paths a handler gathered) into bwrap's
  arguments, laid so that no later mount undoes a hidden or read-only path.
- :func:`sandbox_environment` is the environment a sandboxed process gets, and
  :func:`withheld_variables` the names it does not.
- :class:`SandboxPreset` is what an agent CLI needs: its folders under ``$HOME`` and its
  variables (each CLI's module in ``pipeline.core.agents`` declares its own).

Nothing here reads a file, the environment or the clock: :mod:`pipeline.handlers.sandbox`
gathers every input and starts bwrap.
"""

from pipeline.core.sandbox._endpoint import Endpoint, parse_endpoint
from pipeline.core.sandbox._environment import (
    DOCUMENTED_VARIABLES,
    RALPH_ONLY_VARIABLES,
    SECRET_VARIABLES,
    EnvironmentRules,
    sandbox_environment,
    with_account,
    withheld_variables,
)
from pipeline.core.sandbox._inputs import (
    DEFAULT_PROTECT,
    DENY_LIST,
    GIT_CONFIG_PATHS,
    ConfigFolder,
    DataFile,
    Hidden,
    MountInputs,
    PresetPaths,
    SandboxPreset,
    empty_form,
    preset_paths,
)
from pipeline.core.sandbox._paths import SandboxError, expand_home
from pipeline.core.sandbox._plan import (
    INDEX_MOUNT,
    MANDATORY_FLAGS,
    RELAY_MOUNT,
    in_place_paths,
    mount_plan,
)
from pipeline.core.sandbox._policy import (
    DEFAULT_UID,
    MAX_UID,
    NetworkMode,
    SandboxMode,
    SandboxPolicy,
    path_problem,
    pattern_problem,
    protect_problem,
)

__all__ = [
    "DEFAULT_PROTECT",
    "DEFAULT_UID",
    "DENY_LIST",
    "DOCUMENTED_VARIABLES",
    "GIT_CONFIG_PATHS",
    "INDEX_MOUNT",
    "MANDATORY_FLAGS",
    "MAX_UID",
    "RALPH_ONLY_VARIABLES",
    "RELAY_MOUNT",
    "SECRET_VARIABLES",
    "ConfigFolder",
    "DataFile",
    "Endpoint",
    "EnvironmentRules",
    "Hidden",
    "MountInputs",
    "NetworkMode",
    "PresetPaths",
    "SandboxError",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxPreset",
    "empty_form",
    "expand_home",
    "in_place_paths",
    "mount_plan",
    "parse_endpoint",
    "path_problem",
    "pattern_problem",
    "preset_paths",
    "protect_problem",
    "sandbox_environment",
    "with_account",
    "withheld_variables",
]
