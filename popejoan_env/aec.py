"""Deprecated alias: the PettingZoo AEC environment moved to ``popejoan_env.envs.pettingzoo_aec``; this name stays for one version."""

from __future__ import annotations

import sys
import warnings

from popejoan_env.envs import pettingzoo_aec

warnings.warn("popejoan_env.aec is deprecated: import from popejoan_env.envs.pettingzoo_aec", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = pettingzoo_aec
