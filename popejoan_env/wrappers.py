"""Deprecated: the Gymnasium single-agent view moved to ``popejoan_env.envs.gymnasium_env`` (and the opponents mix to
``popejoan_env.opponents``); this alias stays for one version."""

from __future__ import annotations

import warnings

from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv, make_vec_env
from popejoan_env.opponents import SELF, OpponentMixError, parse_mix

warnings.warn(
    "popejoan_env.wrappers is deprecated: import PopeJoanGymEnv and make_vec_env from popejoan_env.envs.gymnasium_env, "
    "parse_mix and SELF from popejoan_env.opponents",
    DeprecationWarning, stacklevel=2,
)

__all__ = ["SELF", "OpponentMixError", "PopeJoanGymEnv", "make_vec_env", "parse_mix"]
