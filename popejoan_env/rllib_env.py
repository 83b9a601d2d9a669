"""Deprecated alias: the Ray RLlib environment and modules moved to ``popejoan_env.envs.rllib_env``; this name stays for one version."""

from __future__ import annotations

import sys
import warnings

from popejoan_env.envs import rllib_env

warnings.warn("popejoan_env.rllib_env is deprecated: import from popejoan_env.envs.rllib_env", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = rllib_env
