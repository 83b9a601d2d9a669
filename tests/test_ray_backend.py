"""``--backend ray``: the duplicate tournament and ``popejoan simulate`` played as Ray tasks give the local results.

One local Ray (2 CPUs, no dashboard) serves the whole module; the refusals that
need a process without Ray (an unreachable address) run the commands as
subprocesses.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the ray backend needs Ray: pip install -e '.[ray]'")

from popejoan_env.__main__ import main as popejoan  # noqa: E402
from popejoan_env.cluster import ClusterError, check_address, connected, map_tasks  # noqa: E402
from popejoan_env.players import SHIPPED_MODEL  # noqa: E402
from popejoan_env.tournament import TournamentResult, run_duplicate  # noqa: E402
from popejoan_env.training import benchmark  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODEL = Path(SHIPPED_MODEL)


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    """One local Ray for the module (a Ray this process already has is used and left running)."""
    # The workers cannot import this test module: its task functions travel by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    if ray.is_initialized():
        yield
        return
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
    try:
        yield
    finally:
        ray.shutdown()


def _numbers(result: TournamentResult) -> dict[str, Any]:
    """Everything a tournament result says but its timings."""
    data = result.to_dict()
    data.pop("timing", None)
    for row in data["stats"]:
        row.pop("ms_per_decision")
    return data


# ---------------------------------------------------------------- the tournament
@pytest.mark.parametrize(
    ("entrants", "seats", "deals"),
    [
        (["stops_first", "pool_hunter", "pimc:samples=4", "random"], 4, 4),
        ([str(MODEL), "stops_first"], 4, 3),
        (["random", "lowest", "stops_first", "pool_hunter", "pimc:samples=2"], 3, 5),
        (["lowest", "stops_first", "pool_hunter"], 6, 9),
    ],
    ids=["4-seats-pimc", "4-seats-model", "3-seats-subsets", "6-seats-field"],
)
def test_ray_tournament_equals_the_local_one(entrants: list[str], seats: int, deals: int) -> None:
    local = run_duplicate(entrants, deals=deals, seed=11, seats=seats)
    spread = run_duplicate(entrants, deals=deals, seed=11, seats=seats, backend="ray")
    assert _numbers(spread) == _numbers(local)
    assert np.array_equal(spread.per_deal, local.per_deal, equal_nan=True)
    assert np.array_equal(spread.pair, local.pair, equal_nan=True)
    assert (spread.games, spread.decisions) == (local.games, local.decisions)
    assert spread.games > 0 and min(spread.decisions) > 0


def test_ray_tournament_refuses_workers_and_a_stray_address() -> None:
    with pytest.raises(ValueError, match="workers=2 applies to the local backend"):
        run_duplicate(["random", "lowest"], deals=2, seed=1, backend="ray", workers=2)
    with pytest.raises(ValueError, match="applies only to the ray backend"):
        run_duplicate(["random", "lowest"], deals=2, seed=1, address="auto")
    with pytest.raises(ValueError, match="the backend must be local or ray"):
        run_duplicate(["random", "lowest"], deals=2, seed=1, backend="dask")


# ---------------------------------------------------------------- cluster.py itself
def _double_plus(common: int, item: int) -> int:
    return 2 * item + common


def _after_the_next(common: str, item: int) -> int:
    """Item 0 finishes only once item 1 has (they run side by side on the module's 2 CPUs)."""
    flag = Path(common) / "1.done"
    if item == 0:
        deadline = time.monotonic() + 60
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    else:
        flag.touch()
    return item


def _after_the_signal(common: str, item: int) -> int:
    """Item 0 finishes only once the caller has received a result and written the signal file: a task
    given as it finishes is given before it (item 1 returns at once)."""
    if item == 0:
        deadline = time.monotonic() + 60
        while not (Path(common) / "signal").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    return item


def _refuse_odd(common: None, item: int) -> int:
    if item % 2:
        raise ClusterError(f"item {item} is odd")
    return item


def test_map_tasks_keeps_the_order_or_gives_them_as_they_finish(tmp_path: Path) -> None:
    with connected() as cpus:
        assert cpus == 2  # the module's Ray, used as it is
        seen: list[int] = []
        assert list(map_tasks(_double_plus, 1, range(7), in_flight=3, on_finish=seen.append)) == [
            2 * i + 1 for i in range(7)
        ]
        assert sorted(seen) == list(range(7))
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        got = []
        for result in map_tasks(_after_the_signal, str(tmp_path / "a"), range(2), ordered=False):
            got.append(result)
            (tmp_path / "a" / "signal").touch()  # only now can item 0 finish
        assert got == [1, 0]
        assert list(map_tasks(_after_the_next, str(tmp_path / "b"), range(2), ordered=True)) == [0, 1]
        with pytest.raises(ClusterError, match="^item 1 is odd$"):  # a task's PopeJoanError, as it was raised
            list(map_tasks(_refuse_odd, None, range(4)))
    assert ray.is_initialized(), "a Ray that connected() did not start is left running"


def test_addresses_are_checked_before_anything_starts() -> None:
    assert check_address("auto") == "auto" and check_address("10.0.0.5:6379") == "10.0.0.5:6379"
    for bad in ("", "head", "head:0", "head:70000", "http://head:6379", 6379):
        with pytest.raises(ClusterError, match="a Ray address is auto, HOST:PORT"):
            check_address(bad)


# ---------------------------------------------------------------- simulate
def _simulate(path: Path, *flags: str) -> bytes:
    assert popejoan(["simulate", "--quiet", "--out", str(path), *flags]) == 0
    return path.read_bytes()


@pytest.mark.parametrize(
    "flags",
    [
        ["--players", "4", "--deals", "2500", "--shard-deals", "800"],
        ["--players", "5", "--deals", "1300", "--shard-deals", "500", "--engine", "batch", "--batch-size", "64"],
        ["--players", "3", "--deals", "900", "--shard-deals", "300",
         "--rules-option", "allow_credit=false", "--rules-option", "start_counters=20"],
    ],
    ids=["scalar", "batch", "scalar-no-credit"],
)
def test_simulate_on_ray_writes_the_local_sharded_file(
    tmp_path: Path, flags: list[str], capsys: pytest.CaptureFixture[str],
) -> None:
    local = _simulate(tmp_path / "local.jsonl", "--seed", "3", *flags)
    spread = _simulate(tmp_path / "ray.jsonl", "--seed", "3", "--backend", "ray", *flags)
    assert spread == local
    assert popejoan(["verify", "--quiet", str(tmp_path / "ray.jsonl")]) == 0
    records = [json.loads(line) for line in local.splitlines()]
    deals = int(flags[flags.index("--deals") + 1])
    players = int(flags[flags.index("--players") + 1])
    assert [r["deal_index"] for r in records] == list(range(deals))
    sessions = [r["session"] for r in records]
    assert sessions[0] == 0 and all(b - a in (0, 1) for a, b in zip(sessions, sessions[1:]))
    if "--engine" not in flags:  # the scalar engine passes the deal left through the whole file, across shards
        assert all(r["dealer"] == r["deal_index"] % players for r in records)
    if "allow_credit=false" in flags:  # sessions ended early: their numbers were carried across the shards
        assert sessions[-1] + 1 > deals // (2 * players)


def test_a_shard_does_not_depend_on_the_rest_of_the_file(tmp_path: Path) -> None:
    long = _simulate(tmp_path / "long.jsonl", "--deals", "1700", "--shard-deals", "800", "--seed", "5")
    short = _simulate(tmp_path / "short.jsonl", "--deals", "900", "--shard-deals", "800", "--seed", "5")
    assert long.splitlines()[:800] == short.splitlines()[:800]
    # numpy makes default_rng([5, 0]) the Generator default_rng(5): the first shard starts the unsharded file ...
    unsharded = _simulate(tmp_path / "plain.jsonl", "--deals", "900", "--seed", "5").splitlines()
    assert unsharded[:800] == short.splitlines()[:800]
    # ... and the next ones have Generators of their own.
    assert json.loads(unsharded[800])["hands"] != json.loads(short.splitlines()[800])["hands"]


def test_simulate_on_ray_shards_by_default(tmp_path: Path) -> None:
    # 10,000 rounded up to whole sessions of 6 (3 players): 10,002 deals a shard, so these 300 are one shard.
    spread = _simulate(tmp_path / "ray.jsonl", "--players", "3", "--deals", "300", "--backend", "ray")
    assert spread == _simulate(tmp_path / "local.jsonl", "--players", "3", "--deals", "300", "--shard-deals", "10002")


# ---------------------------------------------------------------- refusals: one line, exit 2, nothing written
def _one_line(err: str, says: str) -> None:
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and says in err, err


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--backend", "spark"], "invalid choice: 'spark'"),
        (["--address", "auto"], "--address applies only to --backend ray"),
        (["--backend", "ray", "--address", "head"], "a Ray address is auto, HOST:PORT"),
        (["--shard-deals", "10"], "--shard-deals must be a positive multiple of the session length (8)"),
        (["--shard-deals", "0"], "argument --shard-deals: invalid value: '0'"),
    ],
)
def test_simulate_refuses_bad_backend_flags(
    tmp_path: Path, flags: list[str], says: str, capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "x.jsonl"
    try:
        status = popejoan(["simulate", "--deals", "20", "--out", str(out), *flags])
    except SystemExit as exit_:  # argparse's refusals
        status = int(exit_.code or 0)
    assert status == 2
    _one_line(capsys.readouterr().err, says)
    assert not out.exists()


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--backend", "spark"], "invalid choice: 'spark'"),
        (["--address", "auto"], "applies only to the ray backend"),
        (["--backend", "ray", "--workers", "2"], "workers=2 applies to the local backend"),
        (["--backend", "ray", "--address", "ray://"], "a Ray address is auto, HOST:PORT"),
    ],
)
def test_benchmark_refuses_bad_backend_flags(
    tmp_path: Path, flags: list[str], says: str, capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        benchmark.main(["--players", "random,lowest", "--deals", "2", "--no-progress",
                        "--out", str(tmp_path / "out" / "x"), *flags])
    assert exit_.value.code == 2
    _one_line(capsys.readouterr().err, says)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [
    ["train", "--backend", "ray", "--address", ""],
    ["train", "--quick", "--backend", "ray", "--address="],
    ["train", "--address", ""],
    ["train-rllib", "--address", ""],
], ids=["train", "train --quick", "train without --backend", "train-rllib"])
def test_the_training_commands_refuse_an_address_given_empty(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str],
) -> None:
    # left out, --address means a local Ray; given empty it names no cluster, refused as simulate refuses it (it
    # started a local Ray and trained)
    with pytest.raises(SystemExit) as exit_:
        popejoan([*command, "--output-dir", str(tmp_path / "runs")])
    assert exit_.value.code == 2
    _one_line(capsys.readouterr().err, "a Ray address is auto, HOST:PORT")
    assert not (tmp_path / "runs").exists()


def test_without_ray_the_ray_backend_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if it were not installed
    out = tmp_path / "x.jsonl"
    assert popejoan(["simulate", "--deals", "20", "--backend", "ray", "--out", str(out)]) == 2
    _one_line(capsys.readouterr().err, "pip install 'popejoan[ray]'")
    with pytest.raises(SystemExit) as exit_:
        benchmark.main(["--players", "random,lowest", "--deals", "2", "--backend", "ray", "--no-progress",
                        "--out", str(tmp_path / "out" / "x")])
    assert exit_.value.code == 2
    _one_line(capsys.readouterr().err, "pip install 'popejoan[ray]'")
    assert not out.exists() and not (tmp_path / "out").exists()
    assert popejoan(["simulate", "--deals", "20", "--quiet", "--out", str(out)]) == 0  # the local backend needs no Ray


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", ["simulate", "benchmark"])
def test_an_unreachable_cluster_is_refused_at_once(tmp_path: Path, command: str) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    out = tmp_path / "out"
    if command == "simulate":
        argv = ["-m", "popejoan_env", "simulate", "--deals", "20", "--out", str(tmp_path / "x.jsonl")]
    else:
        argv = [str(ROOT / "training" / "benchmark.py"), "--players", "random,lowest", "--deals", "2",
                "--no-progress", "--out", str(out / "x")]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *argv, "--backend", "ray", "--address", address],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2, done.stderr
    _one_line(done.stderr, f"cannot reach Ray at {address}")
    assert time.perf_counter() - start < 60, "refused by the probe, not after Ray's own minutes of retries"
    assert not (tmp_path / "x.jsonl").exists() and not out.exists()


def test_the_command_starts_a_local_ray_of_its_own(tmp_path: Path) -> None:
    # `python -m popejoan_env` runs the command line as __main__: the tasks find play_shard in popejoan_env.simulate.
    flags = ["--players", "4", "--deals", "600", "--seed", "2", "--shard-deals", "200"]
    done = subprocess.run([sys.executable, "-m", "popejoan_env", "simulate", *flags, "--backend", "ray",
                           "--out", str(tmp_path / "ray.jsonl")], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "3 shards of 200 deals as Ray tasks on" in done.stdout
    assert done.stderr == "", "Ray's own notices stay quiet"
    assert (tmp_path / "ray.jsonl").read_bytes() == _simulate(tmp_path / "local.jsonl", *flags)


# ---------------------------------------------------------------- the training's game stages
def test_the_training_games_on_ray_are_the_local_games_byte_for_byte() -> None:
    # popejoan train --backend ray: the imitated search's games and a round's rollout games, as Ray tasks, give the
    # very arrays the local run gives, in this process and in two forked workers
    from popejoan_env.nets.policy import load_policy
    from popejoan_env.rules import Rules
    from popejoan_env.training.expert_games import expert_games, tables_of
    from popejoan_env.training.rollout_games import rollout_games

    tables = tables_of([Rules.preset("modern"), Rules.preset("victorian")], [4, 5])
    games = {}
    for where in ({"workers": 1}, {"workers": 2}, {"backend": "ray"}):
        key = where["backend"] if "backend" in where else f"{where['workers']} worker(s)"
        expert = expert_games("pimc:samples=4", tables, 1_100, 5, balance_range=(-24, 72), reward_scale=0.1, **where)
        rollouts = rollout_games(load_policy(MODEL), tables, 300, 6, worlds=2, balance_range=None, reward_scale=0.1,
                                 **where)
        games[key] = (expert, rollouts)
    local = games["1 worker(s)"]
    for key, both in games.items():
        for mine, theirs in zip(both, local):
            for field in ("obs", "legal", "action", "value", "deal", "seat", "q"):
                assert np.array_equal(getattr(mine, field), getattr(theirs, field), equal_nan=True), (key, field)
    assert len(local[0].action) > 8_000 and len(local[1].action) > 2_000


def test_train_refuses_a_ray_backend_it_cannot_reach_before_any_work(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "training" / "train_ppo.py"), "--output-dir", str(tmp_path),
                           "--backend", "ray", "--address", "127.0.0.1:1", "--no-progress"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert not list(tmp_path.iterdir()), "nothing is written"
