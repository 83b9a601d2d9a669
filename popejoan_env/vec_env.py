"""Deprecated alias: the Stable-Baselines3 VecEnv on the batch engine moved to ``popejoan_env.envs.sb3_vec_env``; this name stays for one version."""

from __future__ import annotations

import sys
import warnings

from popejoan_env.envs import sb3_vec_env

warnings.warn("popejoan_env.vec_env is deprecated: import from popejoan_env.envs.sb3_vec_env", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = sb3_vec_env
