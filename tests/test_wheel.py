"""The wheel is the product: built from this checkout, checked as a package index would, installed into a clean
venv without ``-e`` and run from a directory that is not the checkout — the shipped network plays, the command
line answers, ``popejoan serve`` gives the page and a network hint, and a tiny training run makes a model that
plays in a tournament."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import re
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VERSION = re.search(r'(?m)^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text())[1]
"""The version pyproject.toml gives (its one source), which the wheel and its run files must carry."""

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from the checkout (through its sdist, so the sdist is complete too)."""
    pytest.importorskip("build", reason="the wheel test needs the test extra: pip install -e '.[test]'")
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], cwd=out)
    (built,) = out.glob("popejoan-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean venv (no system site-packages) with the wheel and its train and web extras installed, not editable."""
    where = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", str(where)], cwd=where)
    pip = [str(where / "bin" / "python"), "-m", "pip", "install", "-q"]
    _run([*pip, "torch==2.13.0"], cwd=where)  # first: any other torch request pulls a CUDA build
    _run([*pip, f"{wheel}[train,web]"], cwd=where, timeout=1200)
    return where


def test_the_wheel_carries_the_shipped_network_the_web_assets_and_the_training_commands(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("popejoan_env/nets/data/shipped.zip", "popejoan_env/web/static/index.html",
                   "popejoan_env/web/static/play.js", "popejoan_env/training/ppo.py", "popejoan_env/py.typed",
                   "popejoan_env/evaluate/data/evalset-1.bin.gz", "popejoan_env/evaluate/exploit.py"):
        assert needed in names, needed
    assert not [n for n in names if "__pycache__" in n or n.endswith((".nbi", ".nbc"))]
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert f"Version: {VERSION}" in meta and "License-Expression: MIT" in meta
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "[console_scripts]\npopejoan = popejoan_env.__main__:main" in zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()


def test_twine_check_passes(wheel: Path) -> None:
    pytest.importorskip("twine", reason="the wheel test needs the test extra: pip install -e '.[test]'")
    sdists = list(wheel.parent.glob("popejoan-*.tar.gz"))
    done = _run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), *map(str, sdists)], cwd=wheel.parent)
    assert done.stdout.count("PASSED") == 1 + len(sdists), done.stdout


def test_the_installed_package_is_the_wheels_and_knows_its_version(venv: Path, tmp_path: Path) -> None:
    code = "import popejoan_env, sys; print(popejoan_env.__file__); print(popejoan_env.__version__)"
    where, version = _run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path).stdout.split()
    assert where.startswith(str(venv)) and "site-packages" in where
    assert version == VERSION
    assert "train" in _run([str(venv / "bin" / "popejoan"), "--help"], cwd=tmp_path).stdout


def test_the_shipped_network_plays_a_deal_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    code = ("import numpy as np\n"
            "from popejoan_env import Deal, Rules\n"
            "from popejoan_env.players import make_player\n"
            "from popejoan_env.seat_view import seat_view\n"
            "player = make_player('shipped', seed=0)\n"
            "deal = Deal.new(Rules.preset('modern'), 4, 0, np.random.default_rng(1))\n"
            "deal.play_out(lambda d, legal: player.act(seat_view(d, d.to_act)))\n"
            "print(deal.done, len(deal.delta))\n")
    assert _run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path).stdout.split() == ["True", "4"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(url: str, body: dict | None = None) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, response.read()


def test_popejoan_serve_from_the_wheel_answers_the_page_and_the_network_hint(venv: Path, tmp_path: Path) -> None:
    port = _free_port()
    server = subprocess.Popen([str(venv / "bin" / "popejoan"), "serve", "--port", str(port)], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                status, page = _request(base + "/")
                break
            except OSError:
                assert server.poll() is None, server.stdout.read()
                time.sleep(0.1)
        assert status == 200 and b"Pope Joan" in page
        for seed in range(20):  # a deal where seat 0 must choose (a lone legal card is played for it)
            _, body = _request(base + "/api/games", {"players": 4, "opponents": ["shipped"] * 3})
            game = json.loads(body)
            if not game["state"]["over"]:
                break
        _, body = _request(f"{base}/api/games/{game['game_id']}/hint")
        hint = json.loads(body)
        assert hint["network_reason"] is None, hint
        assert sorted(hint["network"]["probs"]) == sorted(game["state"]["legal"])
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_tiny_training_run_from_the_wheel_makes_a_model_that_plays(venv: Path, tmp_path: Path) -> None:
    popejoan = str(venv / "bin" / "popejoan")
    _run([popejoan, "train", "--run-name", "tiny", "--output-dir", str(tmp_path), "--imitate-deals", "30",
          "--imitate-epochs", "1", "--imitate-workers", "1", "--rollout-deals", "20", "--rollout-epochs", "1", "--eval-deals", "2", "--eval-opponents", "random",
          "--final-eval-deals", "2", "--final-eval-opponents", "random", "--no-progress"], cwd=tmp_path)
    run = json.loads((tmp_path / "tiny" / "run.json").read_text())
    assert run["command"].startswith("popejoan train ") and run["package_version"] == VERSION
    done = _run([popejoan, "benchmark", "--players", f"{tmp_path}/tiny/model.zip,random", "--deals", "4",
                 "--out", str(tmp_path / "b")], cwd=tmp_path)
    assert "wrote" in done.stdout and (tmp_path / "b.json").is_file()
