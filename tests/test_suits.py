"""The ``suits`` actor: numpy and torch give the same logits, a trained one saves, loads and plays like an MLP
actor (the numpy player, the batch env's snapshots, SB3), and a damaged file is refused naming the weight."""

from __future__ import annotations

import io
import json
import os
import sys
import zipfile

import numpy as np
import pytest
import torch

from popejoan_env.batch import BatchDeals
from popejoan_env.batch_observation import encode_batch
from popejoan_env.observation import OBS_SIZE
from popejoan_env.nets import suits
from popejoan_env.players import make_player
from popejoan_env.nets.model_file import ModelFileError
from popejoan_env.players.learned import load_player
from popejoan_env.nets.model_file import META_NAME
from popejoan_env.tournament import run_duplicate
from popejoan_env.envs.sb3_vec_env import make_batch_vec_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def random_weights(net_arch: tuple[int, ...], seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {k: torch.randn(*shape, generator=gen) * 0.2 for k, shape in suits.shapes(net_arch).items()}


@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("net_arch", [(64, 128, 128), (8, 16), (4, 8, 8, 8)])
def test_numpy_and_torch_give_the_same_logits(net_arch: tuple[int, ...], activation: str) -> None:
    weights = random_weights(net_arch)
    batch = BatchDeals("victorian", players=5, num_deals=40, deal_seed=3)
    batch.step(batch.random_actions(np.random.default_rng(0)))
    obs = encode_batch(batch)
    want = suits.logits_torch(weights, torch.as_tensor(obs), activation).numpy()
    actor = suits.NumpyActor({k: v.numpy() for k, v in weights.items()}, activation)
    assert want.shape == (40, 52)
    assert np.allclose(actor.logits(obs), want, atol=1e-5)
    assert np.allclose(actor.logits(obs[7]), want[7], atol=1e-5)


def test_a_made_actor_has_its_compiled_loop_loaded_for_the_processes_forked_after_it(monkeypatch) -> None:
    # a tournament forks its workers after the players are made (a pool a block of deals in evaluate): with the
    # loop loaded at the first call instead, every worker imported numba and loaded it again (~0.5 s a worker)
    monkeypatch.setattr(suits, "_COMPILED", [])  # as in a process where no actor has run yet
    weights = {k: v.numpy() for k, v in random_weights((8, 16)).items()}
    suits.NumpyActor(weights, "tanh")
    assert suits._COMPILED and suits._COMPILED[0].signatures


def test_each_suit_is_scored_by_the_same_network_from_its_own_inputs() -> None:
    weights = random_weights((8, 16))
    actor = suits.NumpyActor({k: v.numpy() for k, v in weights.items()}, "tanh")
    obs = encode_batch(BatchDeals("modern", players=4, num_deals=1, deal_seed=9))[0]
    base = actor.logits(obs)
    moved = obs.copy()
    moved[suits.SUIT_INDEX[2]] = 1 - moved[suits.SUIT_INDEX[2]]  # change the hearts' inputs only
    # the glob layer reads every column: with it silenced, only the hearts' scores move
    quiet = {k: v.numpy().copy() for k, v in weights.items()}
    quiet["glob.weight"][:] = 0
    still = suits.NumpyActor(quiet, "tanh")
    a, b = still.logits(obs), still.logits(moved)
    assert not np.allclose(a[26:39], b[26:39])
    assert np.array_equal(a[:26], b[:26]) and np.array_equal(a[39:], b[39:])
    assert not np.allclose(base, actor.logits(moved))


@pytest.fixture(scope="module")
def suits_run(tmp_path_factory) -> str:
    """A tiny train_ppo.py run with the suits actor (and self-play, so snapshots of it play in the batch env)."""
    from popejoan_env.training import ppo as train_ppo

    out = tmp_path_factory.mktemp("suits")
    train_ppo.main([
        "--run-name", "s", "--output-dir", str(out), "--seed", "4", "--actor", "suits", "--actor-arch", "16,32",
        "--total-timesteps", "1024", "--n-envs", "32", "--n-steps", "16", "--batch-size", "256", "--n-epochs", "1",
        "--net-arch", "16", "--opponents", "random:0.5,self:0.5", "--snapshot-interval", "512", "--players", "3,5",
        "--imitate-deals", "0",
        "--eval-interval", "0", "--final-eval-deals", "2", "--final-eval-opponents", "random",
        "--checkpoint-interval", "0", "--no-progress", "--no-tensorboard", "--torch-threads", "1",
    ])
    return str(out / "s" / "model.zip")


def test_a_trained_suits_model_loads_and_plays_as_sb3_computes_it(suits_run: str) -> None:
    from sb3_contrib import MaskablePPO

    player = load_player(suits_run)
    meta = player.policy.metadata
    assert meta["architecture"] == "suits" and meta["net_arch"] == [16, 32] and meta["critic_arch"] == [16]
    model = MaskablePPO.load(suits_run, device="cpu")
    vec = make_batch_vec_env(16, 1, players="3,5", opponents="random")
    obs = vec.reset()
    policy = model.policy
    with torch.no_grad():
        want = policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(torch.as_tensor(obs))))
    assert np.allclose(player.policy.logits(obs), want.numpy(), atol=1e-5)
    # the batch env's opponents' path: act_batch picks the best legal logit SB3 computes
    tab = vec._tables[0]
    rows = vec._row[vec._table == 0]
    legal = tab.batch.legal_mask()[rows]
    from popejoan_env.batch_observation import encode_batch

    sb3 = policy.action_net(policy.mlp_extractor.forward_actor(torch.as_tensor(
        encode_batch(tab.batch, rows, tab.batch.to_act[rows])))).detach().numpy()
    assert (player.act_batch(tab.batch, rows, legal) == np.where(legal, sb3, -np.inf).argmax(axis=1)).all()
    result = run_duplicate([make_player(suits_run), make_player("random")], deals=4, seed=2, rules="modern",
                           seats=5)  # the tournament refuses an illegal card
    assert result.deals == 4


def _rewrite(src: str, dst: str, meta_change: dict | None = None, drop: str | None = None) -> None:
    """A copy of the model file with its metadata changed or one tensor of its weights left out."""
    from test_training import _rewrite as rewrite_members

    replace: dict[str, bytes | None] = {}
    with zipfile.ZipFile(src) as archive:
        if meta_change is not None:
            meta = json.loads(archive.read(META_NAME))
            meta.update(meta_change)
            replace[META_NAME] = json.dumps(meta).encode()
        if drop is not None:
            state = torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)
            del state[drop]
            buf = io.BytesIO()
            torch.save(state, buf)
            replace["policy.pth"] = buf.getvalue()
    rewrite_members(src, dst, replace)


@pytest.mark.parametrize(("change", "drop", "match"), [
    ({"architecture": "transformer"}, None, "architecture must be 'mlp' or 'suits'"),
    ({"net_arch": [16]}, None, "context width and at least one hidden width"),
    ({"net_arch": [16, 64]}, None, r"suit0.weight has shape \(32, 332\); net_arch \[16, 64\] needs \(64, 332\)"),
    (None, "mlp_extractor.actor.out.bias", "lacks mlp_extractor.actor.out.bias"),
])
def test_a_damaged_suits_model_is_refused_naming_what(suits_run: str, tmp_path, change, drop, match) -> None:
    bad = str(tmp_path / "bad.zip")
    _rewrite(suits_run, bad, change, drop)
    with pytest.raises(ModelFileError, match=match):
        load_player(bad)


def test_the_actor_reads_the_observation_only() -> None:
    assert suits.SUIT_INDEX.max() < OBS_SIZE and suits.SUIT_INDEX.shape == (4, 24 * 13)
    assert len(suits.CARD_PLANES) == 9 and suits.SUIT_INPUTS == 24 * 13 + 4


def test_sb3_resumes_a_suits_model_in_a_process_that_never_saw_the_training_script(suits_run: str) -> None:
    import subprocess

    code = ("import sys; from sb3_contrib import MaskablePPO; m = MaskablePPO.load(sys.argv[1], device='cpu'); "
            "print(type(m.policy).__module__, type(m.policy).__name__)")
    done = subprocess.run([sys.executable, "-c", code, suits_run], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["popejoan_env.sb3_policies", "SuitsPolicy"]
