"""Deprecated alias: the Ray RLlib env moved to ``popejoan_env.envs.rllib_env`` and its policy side (the masking
module, the seat mapping, the export) to ``popejoan_env.envs.rllib_policy``; this name stays for one version."""

from __future__ import annotations

import warnings

from popejoan_env.envs.rllib_env import *  # noqa: F403
from popejoan_env.envs.rllib_env import __all__ as _ENV
from popejoan_env.envs.rllib_policy import *  # noqa: F403
from popejoan_env.envs.rllib_policy import __all__ as _POLICY

warnings.warn("popejoan_env.rllib_env is deprecated: import from popejoan_env.envs.rllib_env (the env) and "
              "popejoan_env.envs.rllib_policy (the module, the seat mapping, the export)", DeprecationWarning,
              stacklevel=2)
__all__ = [*_ENV, *_POLICY]
