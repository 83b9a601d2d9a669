"""E19 across processes: the same seed gives the same deals, choices and outcomes whatever the hash seed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile

import pytest

SCRIPT = r"""
import hashlib, sys
import numpy as np
from popejoan_env import Deal, Rules, Session

seed = int(sys.argv[1])
digest = hashlib.sha256()
rng = np.random.default_rng(seed)
variants = [Rules.preset("modern"), Rules.preset("victorian"),
            Rules(ace_high=True, pair_split="halves"), Rules(deal="all_round", lead="any")]
for i in range(400):
    rules = variants[i % len(variants)]
    players = 3 + i % 6
    deal = Deal.new(rules, players, i % players, rng)
    while not deal.done:
        legal = deal.legal_actions()
        deal.play(legal[int(rng.integers(len(legal)))])
    digest.update(repr((deal.initial_hands, deal.dead, deal.plays, deal.awards, deal.payments,
                        deal.delta, deal.board, deal.winner)).encode())
session = Session(Rules.preset("victorian"), 5, np.random.default_rng(seed))
while not session.over:
    deal = session.next_deal()
    while not deal.done:
        deal.play(deal.legal_actions()[-1])
digest.update(repr((session.balances, session.board)).encode())
print(digest.hexdigest())
"""


def _digest(seed: int, hash_seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(seed)], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    return out.stdout.strip()


def test_e19_same_seed_same_digest_across_processes() -> None:
    first = _digest(2024, "0")
    assert len(first) == 64
    assert _digest(2024, "12345") == first
    assert _digest(2025, "0") != first


def test_a_model_file_is_the_same_bytes_whenever_it_is_written(tmp_path, monkeypatch) -> None:
    """The same network and metadata give the same model file (its SHA-256 names it in evaluate's state and train's
    resume): the zip members popejoan writes carry no clock (train-cleanrl and train-mappo differed by it alone)."""
    import time

    torch = pytest.importorskip("torch")
    from popejoan_env.nets.model_file import model_metadata, read_model, save_state_dict

    gen = torch.Generator().manual_seed(3)
    state = {"mlp_extractor.policy_net.0.weight": torch.randn(4, 1285, generator=gen),
             "mlp_extractor.policy_net.0.bias": torch.zeros(4), "action_net.weight": torch.randn(52, 4, generator=gen),
             "action_net.bias": torch.zeros(52)}
    meta = model_metadata(["modern"], [4], [4], algorithm="CleanRL PPO", seed=3)
    written = []
    for clock in (1_000_000_000.0, 1_800_000_000.0):  # 2001 and 2027: other seconds, minutes, days and years
        monkeypatch.setattr(time, "time", lambda clock=clock: clock)
        path = save_state_dict(state, tmp_path / f"at_{int(clock)}.zip", meta)
        written.append(open(path, "rb").read())
    assert written[0] == written[1]
    assert read_model(tmp_path / "at_1000000000.zip")[0]["algorithm"] == "CleanRL PPO"


def test_a_trained_sb3_model_is_the_same_bytes_whichever_run_saved_it(tmp_path) -> None:
    """Two runs of the same seeded MaskablePPO training save the same model file, and it loads back."""
    # SB3's own members carried the clock (zip times, start_time, each episode's seconds) and the process's memory
    # addresses (in the repr beside each pickled object): popejoan train's model.zip, rounds and snapshots differed.
    torch = pytest.importorskip("torch")
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from popejoan_env.envs.sb3_vec_env import make_batch_vec_env
    from popejoan_env.nets.model_file import MEMBER_TIME, model_metadata, read_model, save_model

    written = []
    for run in range(2):
        torch.manual_seed(0)
        env = make_batch_vec_env(2, 0, players="4", opponents="random")
        model = sb3_contrib.MaskablePPO("MlpPolicy", env, device="cpu", n_steps=32, batch_size=32, n_epochs=1,
                                        policy_kwargs=dict(net_arch=dict(pi=[8], vf=[8])), seed=0)
        model.learn(64)
        assert model.ep_info_buffer  # episodes ended: their seconds were in the file
        path = save_model(model, tmp_path / f"run_{run}.zip", model_metadata("modern", [4], [8]))
        with open(path, "rb") as f:
            written.append(f.read())
    assert written[0] == written[1]
    # One process: its functions' addresses are the same in both files; another process's are not, unless written 0x0.
    with zipfile.ZipFile(tmp_path / "run_0.zip") as archive:
        data = archive.read("data")
        assert {info.date_time for info in archive.infolist()} == {MEMBER_TIME}  # not the second both were saved in
    assert b"Policy.__init__ at 0x0>" in data and not re.search(rb" at 0x(?!0>)[0-9a-fA-F]+>", data)
    assert read_model(tmp_path / "run_0.zip")[0]["net_arch"] == [8]
    loaded = sb3_contrib.MaskablePPO.load(tmp_path / "run_0.zip", device="cpu")
    assert loaded.num_timesteps == model.num_timesteps
