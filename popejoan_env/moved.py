"""What moved in 0.3.0: an import of an old module or name is refused in one line that names the new place.

0.3.0 gave the search machinery and the networks rooms of their own (``search/``, ``nets/``), moved the exact
best responses to ``evaluate/`` and ended the adapters' old top-level names (deprecated in 0.2.0 for one
version).  Nothing old is kept working under its old name: ``import popejoan_env.players.worlds`` raises a
``ModuleNotFoundError`` saying ``popejoan_env.search.worlds``, and ``from popejoan_env.players.learned import
load_policy`` an ``ImportError`` saying ``popejoan_env.nets.policy``.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from types import ModuleType

VERSION = "0.3.0"
"""The release that moved them."""

MODULES: dict[str, str] = {
    "popejoan_env.aec": "popejoan_env.envs.pettingzoo_aec",
    "popejoan_env.gym_env": "popejoan_env.envs.gymnasium_env",
    "popejoan_env.vec_env": "popejoan_env.envs.sb3_vec_env",
    "popejoan_env.vector_env": "popejoan_env.envs.gymnasium_vector_env",
    "popejoan_env.rllib_env": "popejoan_env.envs.rllib_env (the env) and popejoan_env.envs.rllib_policy (the module)",
    "popejoan_env.wrappers": "popejoan_env.envs.gymnasium_env (PopeJoanGymEnv, make_vec_env) and "
                             "popejoan_env.opponents (parse_mix, SELF)",
    "popejoan_env.players.worlds": "popejoan_env.search.worlds",
    "popejoan_env.players.world_kernels": "popejoan_env.search.world_kernels",
    "popejoan_env.players.search": "popejoan_env.search.decision",
    "popejoan_env.players.search_kernels": "popejoan_env.search.decision_kernels",
    "popejoan_env.players.batch_rollout": "popejoan_env.search.playouts",
    "popejoan_env.players.rollout_kernels": "popejoan_env.search.playout_kernels",
    "popejoan_env.players.vectorised": "popejoan_env.search.scripted_kernels",
    "popejoan_env.players.kernel_cache": "popejoan_env.search.kernel_cache",
    "popejoan_env.players.model_file": "popejoan_env.nets.model_file",
    "popejoan_env.players.sb3_zip": "popejoan_env.nets.sb3_zip",
    "popejoan_env.players.suits": "popejoan_env.nets.suits",
    "popejoan_env.players.shipped": "popejoan_env.nets.shipped",
    "popejoan_env.players.exploitability": "popejoan_env.evaluate.exploitability "
                                          "(small_deals: popejoan_env.small_game)",
}
"""Old module -> where its contents are now."""

NAMES: dict[str, dict[str, str]] = {
    "popejoan_env.players.learned": {
        **dict.fromkeys(("Policy", "load_policy", "policy_from_state", "read_any_model", "read_metadata"),
                        "popejoan_env.nets.policy"),
        **dict.fromkeys(("ModelFileError", "ModelMismatchError", "model_metadata", "rules_field", "save_model",
                         "save_state_dict", "trained_rules"), "popejoan_env.nets.model_file"),
        "adopt": "popejoan_env.nets.sb3_zip",
    },
}
"""Old module -> {name it offered: the module that has it now}, for modules that stayed but gave names away."""


class _Moved(importlib.abc.MetaPathFinder):
    """Refuses the old modules (a finder consulted before the file system, so no old file can answer)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> None:
        """None for every module but the old ones, which raise."""
        if fullname in MODULES:
            raise ModuleNotFoundError(f"{fullname} is gone since popejoan {VERSION}: import from {MODULES[fullname]}",
                                      name=fullname)
        return None


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _Moved) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Moved())


def moved_name(module: str, name: str) -> ImportError:
    """The error for ``module.name`` where that name moved away (an ImportError, so ``from module import name``
    shows its message), or an AttributeError where it never was."""
    new = NAMES.get(module, {}).get(name)
    if new is None:
        return AttributeError(f"module {module!r} has no attribute {name!r}")  # type: ignore[return-value]
    return ImportError(f"{module}.{name} moved in popejoan {VERSION}: import it from {new}", name=module)
