"""Deprecated alias: the single-agent Gymnasium view moved to ``popejoan_env.envs.gymnasium_env``; this name stays for one version."""

from __future__ import annotations

import sys
import warnings

from popejoan_env.envs import gymnasium_env

warnings.warn("popejoan_env.gym_env is deprecated: import from popejoan_env.envs.gymnasium_env", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = gymnasium_env
