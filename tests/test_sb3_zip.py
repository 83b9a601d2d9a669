"""A MaskablePPO zip saved the ordinary SB3 way (``model.save``) joins the tournament, the web app and self-play;
what cannot be played is refused clearly, nothing in it is unpickled, and ``adopt`` records its rules."""

from __future__ import annotations

import base64
import json
import pickle
import re
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="pip install torch==2.13.0 && pip install -e '.[train]'")
sb3_contrib = pytest.importorskip("sb3_contrib", reason="pip install -e '.[train]'")

from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv  # noqa: E402
from popejoan_env.errors import PopeJoanError  # noqa: E402
from popejoan_env.observation import OBS_SIZE  # noqa: E402
from popejoan_env.players import make_player  # noqa: E402
from popejoan_env.nets.model_file import META_NAME, ModelFileError, ModelMismatchError  # noqa: E402
from popejoan_env.nets.policy import load_policy, read_metadata  # noqa: E402
from popejoan_env.nets.sb3_zip import adopt  # noqa: E402
from popejoan_env.tournament import run_duplicate  # noqa: E402

ANY_LEAD = {"preset": "modern", "lead": "any"}


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """256 steps of MaskablePPO on the Gym view, saved with ``model.save`` as ``models/mine/model.zip``."""
    torch.set_num_threads(1)
    path = tmp_path_factory.mktemp("plain") / "models" / "mine" / "model.zip"
    model = sb3_contrib.MaskablePPO("MlpPolicy", PopeJoanGymEnv(players=4, opponents="random"), n_steps=128,
                                    batch_size=64, n_epochs=1, seed=0, device="cpu",
                                    policy_kwargs=dict(net_arch=[32, 16]))
    model.learn(256)
    path.parent.mkdir(parents=True)
    model.save(path)
    assert META_NAME not in zipfile.ZipFile(path).namelist()
    return path


def rewritten(source: Path, target: Path, change: Any) -> Path:
    """A copy of an SB3 zip whose ``data`` JSON went through ``change(data)``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for name in src.namelist():
            body = src.read(name)
            if name == "data":
                data = json.loads(body)
                change(data)
                body = json.dumps(data).encode()
            dst.writestr(name, body)
    return target


def test_a_plain_zip_plays_the_network_sb3_would(plain: Path) -> None:
    meta = read_metadata(plain)
    assert meta["plain_sb3"] and meta["algorithm"] == "MaskablePPO" and meta["timesteps"] == 256
    assert meta["net_arch"] == [32, 16] and meta["activation"] == "tanh" and meta["players"] == [3, 4, 5, 6, 7, 8]
    player = make_player(str(plain), seed=0)
    sb3 = sb3_contrib.MaskablePPO.load(plain, device="cpu")
    env = PopeJoanGymEnv(players="3,4,6", opponents="random")
    for seed in range(30):
        obs, _ = env.reset(seed=seed)
        mask = env.action_masks()
        theirs, _ = sb3.predict(obs, action_masks=mask, deterministic=True)
        assert player.policy.pick(obs, np.flatnonzero(mask)) == int(theirs)


def test_a_plain_zip_joins_a_duplicate_tournament(plain: Path) -> None:
    for seats, rules in ((4, "modern"), (5, "victorian")):
        result = run_duplicate([str(plain), "random"], deals=2, seed=seats, seats=seats, rules=rules)
        assert result.decisions[0] > 0  # the tournament refuses any illegal card, so finishing is the proof


def test_the_web_app_offers_a_plain_zip_and_plays_it_as_an_opponent(plain: Path) -> None:
    pytest.importorskip("fastapi", reason="pip install -e '.[web]'")
    pytest.importorskip("httpx", reason="pip install httpx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        from fastapi.testclient import TestClient

    from popejoan_env.web.app import create_app

    client = TestClient(create_app(models_dir=str(plain.parent.parent), seed=1))
    options = client.get("/api/options").json()
    shown = "models/mine/model.zip"
    assert shown in options["opponents"]
    assert {"path": shown, "name": "mine", "players": [3, 4, 5, 6, 7, 8],
            "presets": ["modern", "victorian"]} in options["models"]
    rng = np.random.default_rng(0)
    r = client.post("/api/games", json={"players": 4, "preset": "modern", "opponents": [shown, "random", shown]})
    assert r.status_code == 201, r.text
    game_id, state = r.json()["game_id"], r.json()["state"]
    assert [s["name"] for s in state["seats"]] == ["you", "mine", "random", "mine"]
    while not state["over"]:
        card = state["legal"][int(rng.integers(len(state["legal"])))]
        r = client.post(f"/api/games/{game_id}/play", json={"card": card})
        assert r.status_code == 200, r.text
        state = r.json()


def test_a_plain_zip_is_a_self_play_snapshot(plain: Path) -> None:
    env = PopeJoanGymEnv(players=4, opponents="self", snapshots=[plain])
    env.reset(seed=0)
    assert all(name.startswith("self:") for k, name in enumerate(env._opponent_names) if k != env._learner)


def test_other_rules_are_refused_until_adopt_records_them(plain: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelMismatchError, match="plain Stable-Baselines3 zip.*adopt"):
        run_duplicate([str(plain), "random"], deals=2, seed=0, rules=ANY_LEAD)
    out = adopt(plain, rules=ANY_LEAD, players=[4], out=tmp_path / "adopted.zip")
    meta = read_metadata(out)
    assert "plain_sb3" not in meta and meta["players"] == [4] and meta["rules"]["lead"] == "any"
    assert run_duplicate([out, "random"], deals=2, seed=0, rules=ANY_LEAD).decisions[0] > 0
    np.testing.assert_array_equal(load_policy(out).logits(np.ones(OBS_SIZE, np.float32)),
                                  load_policy(plain).logits(np.ones(OBS_SIZE, np.float32)))
    sb3_contrib.MaskablePPO.load(out, device="cpu")  # still resumes training
    with pytest.raises(ModelFileError, match="not a zip Stable-Baselines3 saved without popejoan metadata"):
        adopt(out)
    with pytest.raises(PopeJoanError, match="players"):
        adopt(plain, players=[9], out=tmp_path / "bad.zip")


def _set(path: list[str], value: Any) -> Any:
    def change(data: dict[str, Any]) -> None:
        node = data
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return change


@pytest.mark.parametrize(("path", "value", "error", "says"), [
    (["observation_space", "_shape"], "[1284]", ModelMismatchError, "observations of shape [1284]"),
    (["observation_space", ":type:"], "<class 'gymnasium.spaces.dict.Dict'>", ModelFileError, "not the Gym view's Box"),
    (["action_space", "n"], "53", ModelFileError, "not Discrete(52)"),
    (["policy_class", "__init__"], "<function DQNPolicy.__init__ at 0x1>", ModelFileError,
     "policy class is DQNPolicy"),
    (["policy_class", "__module__"], "my.policies", ModelFileError, "from my.policies"),
    (["policy_kwargs", "activation_fn"], "<class 'torch.nn.modules.activation.GELU'>", ModelFileError,
     "activation is <class 'torch.nn.modules.activation.GELU'>"),
    (["policy_kwargs", "features_extractor_class"], "<class 'my.Extractor'>", ModelFileError, "features extractor"),
    (["policy_kwargs", "net_arch"], [16], ModelFileError, "does not match the weights"),
    (["policy_class"], "MlpPolicy", ModelFileError, "no readable 'policy_class'"),
])
def test_what_cannot_be_played_is_refused_clearly(plain: Path, tmp_path: Path, path: list[str], value: Any,
                                                 error: type, says: str) -> None:
    bad = rewritten(plain, tmp_path / "bad" / "model.zip", _set(path, value))
    with pytest.raises(error, match=re.escape(says)):
        make_player(str(bad))


def test_nothing_in_a_plain_zip_is_unpickled(plain: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self) -> tuple:
            return (Path.touch, (marker,))

    hostile = base64.b64encode(pickle.dumps(Payload())).decode()

    def plant(data: dict[str, Any]) -> None:
        for key in ("policy_class", "observation_space", "action_space"):
            data[key][":serialized:"] = hostile

    bad = rewritten(plain, tmp_path / "hostile.zip", plant)
    make_player(str(bad)).policy.logits(np.zeros(OBS_SIZE, np.float32))
    assert not marker.exists()


def test_a_zip_that_is_neither_says_what_it_lacks(tmp_path: Path) -> None:
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", "{}")
    with pytest.raises(ModelFileError, match="not a model file"):
        make_player(str(path))


def test_adopt_copies_members_it_does_not_read_without_unpacking_them(plain: Path, tmp_path: Path) -> None:
    """A member adopt does not check (64 MB of zeros, 64 kB packed) is copied as it is, never unpacked in memory."""
    import shutil
    import tracemalloc

    source = tmp_path / "big.zip"
    shutil.copyfile(plain, source)
    with zipfile.ZipFile(source, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("notes.bin", bytes(64 * 2**20))
    tracemalloc.start()
    try:
        out = adopt(source, players=[4], out=tmp_path / "adopted.zip")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, f"adopt held {peak:,} bytes"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(out) as dst:
        kept = [(i.filename, i.date_time, i.CRC) for i in dst.infolist() if i.filename != META_NAME]
        assert kept == [(i.filename, i.date_time, i.CRC) for i in src.infolist()]
