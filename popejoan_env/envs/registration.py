"""The environments' version and ids, and the Gymnasium id of the single-agent view — stdlib only.

``ENV_VERSION`` is the one number behind every name: PettingZoo's ``pope_joan_v2`` and ``popejoan/pope_joan-v2``
(``envs.pettingzoo_aec``) and Gymnasium's ``popejoan/PopeJoan-v2``; it changes only when what an agent sees or
is paid changes (the version history is on the environment page).

``import popejoan_env`` registers ``GYMNASIUM_ID`` with Gymnasium's registry, so both of Gymnasium 1.x's ways
of making a third-party env work::

    import gymnasium as gym
    import popejoan_env

    gym.register_envs(popejoan_env)  # a no-op that keeps the import from looking unused
    env = gym.make("popejoan/PopeJoan-v2", players=4)
    env = gym.make("popejoan_env:popejoan/PopeJoan-v2", players=4)  # imports popejoan_env itself

The engine imports no gymnasium (``tests/test_engine_purity.py``), so the package cannot register by importing
it: it registers at once when gymnasium is already imported, and otherwise when gymnasium's own import ends.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

ENV_VERSION = 2
"""The environments' version: the ``v2`` of every id (bumped when observations, actions or rewards change)."""
GYMNASIUM_ID = f"popejoan/PopeJoan-v{ENV_VERSION}"
"""Gymnasium id of ``PopeJoanGymEnv`` (``gymnasium.make(GYMNASIUM_ID, players=4, ...)``)."""
GYMNASIUM_ENTRY_POINT = "popejoan_env.envs.gymnasium_env:make_gym_env"
"""What ``gymnasium.make`` calls (``PopeJoanGymEnv``'s builder): imported only then."""


def register_gymnasium() -> None:
    """Register ``GYMNASIUM_ID`` with Gymnasium's registry (imports gymnasium; a second call does nothing)."""
    from gymnasium.envs.registration import register, registry

    if GYMNASIUM_ID not in registry:
        # No max_episode_steps: every episode ends (a deal has at most 51 cards), so no TimeLimit truncates one.
        register(id=GYMNASIUM_ID, entry_point=GYMNASIUM_ENTRY_POINT)


class _AfterGymnasiumLoads(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for ``gymnasium`` it returns the spec the other finders find, its loading followed by
    ``register_gymnasium``; once gymnasium is loaded it leaves ``sys.meta_path``.  (A spec is also asked for without
    loading, as ``importlib.util.find_spec`` does: so the finder stays until the module is really loaded.)"""

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        """Gymnasium's spec, found by the other finders, its loading followed by our registration."""
        if name != "gymnasium":
            return None
        spec = None
        for finder in list(sys.meta_path):
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            load(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            register_gymnasium()

        try:
            spec.loader.exec_module = exec_module  # type: ignore[method-assign]  # this module's loader only
        except AttributeError:  # a loader that cannot be followed: gymnasium is loaded without our id
            return None
        return spec


def register_when_gymnasium_loads() -> None:
    """Register ``GYMNASIUM_ID`` now if gymnasium is imported, or else as soon as it is (importing nothing)."""
    if "gymnasium" in sys.modules:
        register_gymnasium()
    elif not any(isinstance(finder, _AfterGymnasiumLoads) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasiumLoads())
