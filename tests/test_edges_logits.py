"""A network whose finite weights overflow to infinite logits is refused by name: never an illegal card."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from popejoan_env import raw_env  # noqa: E402
from popejoan_env.nets.model_file import ModelFileError, model_metadata, save_state_dict  # noqa: E402
from popejoan_env.observation import OBS_SIZE  # noqa: E402
from popejoan_env.players.learned import load_player  # noqa: E402


@pytest.mark.parametrize("deterministic", [False, True])
def test_overflowing_logits_refused_not_played(tmp_path, deterministic):
    g = torch.Generator().manual_seed(0)
    state = {"mlp_extractor.policy_net.0.weight": torch.randn(16, OBS_SIZE, generator=g) * 3e37,
             "mlp_extractor.policy_net.0.bias": torch.zeros(16),
             "action_net.weight": torch.randn(52, 16, generator=g) * 3e37,
             "action_net.bias": torch.zeros(52)}
    path = save_state_dict(state, tmp_path / "huge.zip", model_metadata("modern", [4], [16], activation="relu"))
    player = load_player(path, seed=0, deterministic=deterministic)  # every weight is finite: it loads
    env = raw_env()
    for seed in range(10):
        env.reset(seed=seed)
        view = env.seat_view(env.agent_selection)
        try:
            card = player.act(view)
        except ModelFileError as err:
            assert "not finite" in str(err)
        else:
            pytest.fail(f"played {card} from infinite logits (legal: {view.legal})")
