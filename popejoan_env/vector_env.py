"""Deprecated alias: the Gymnasium VectorEnv on the batch engine moved to ``popejoan_env.envs.gymnasium_vector_env``; this name stays for one version."""

from __future__ import annotations

import sys
import warnings

from popejoan_env.envs import gymnasium_vector_env

warnings.warn("popejoan_env.vector_env is deprecated: import from popejoan_env.envs.gymnasium_vector_env", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = gymnasium_vector_env
