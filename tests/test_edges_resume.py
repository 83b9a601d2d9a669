"""Resumes, merges and reuses of earlier output (review hE): each test fails without its fix."""

from __future__ import annotations

import os
import re
import shutil

import numpy as np
import pytest

from popejoan_env.evaluate import dealset, runner
from popejoan_env.evaluate.resume import StateFileError


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUND1 = os.path.join(ROOT, "models", "round1", "model.zip")
ROUND2 = os.path.join(ROOT, "models", "round2", "model.zip")


def _block() -> dict:
    """A block of an evaluation that fits every plan (every deal level, no decisions)."""
    zeros = [0.0] * dealset.BLOCK
    return {"margin": zeros, "agent_net": zeros, "opponent_net": zeros, "agent_out": zeros, "opponent_out": zeros,
            "agent_decisions": 0, "agent_seconds": 0.0, "opponent_decisions": 0, "opponent_seconds": 0.0,
            "wall_seconds": 0.0}


@pytest.mark.parametrize("spec", ["pimc_net:model=m.zip,samples=2", "exploit:worlds=2:m.zip",
                                  "exploit:continuation=m.zip:random"])
def test_a_model_file_named_inside_the_agent_spec_is_held_to_its_sha256_on_resume(spec, tmp_path,
                                                                                 monkeypatch) -> None:
    """An evaluation of ``pimc_net:model=FILE`` (or a best response to FILE) interrupted, FILE replaced by another
    network, then resumed: the blocks of the first network must not be mixed with the second's."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROUND1, "m.zip")
    first = runner.settings(spec, "modern", 4, 100, ["random"])
    assert first.agent_sha256 is not None
    runner.State("ev.state.json", first).add("random", 0, _block())
    shutil.copy(ROUND2, "m.zip")  # the file is replaced between the run and its resume
    second = runner.settings(spec, "modern", 4, 100, ["random"])
    with pytest.raises(StateFileError, match="other settings"):
        runner.State("ev.state.json", second)
    shutil.copy(ROUND1, "m.zip")  # the same file again: it resumes
    again = runner.settings(spec, "modern", 4, 100, ["random"])
    assert sorted(runner.State("ev.state.json", again).blocks["random"]) == [0]


def test_a_plain_model_path_keeps_the_sha256_state_files_were_written_with(tmp_path) -> None:
    """A model file as the agent keeps its own SHA-256 (state files written before the fix still resume)."""
    from popejoan_env.files import file_sha256

    path = str(tmp_path / "m.zip")
    shutil.copy(ROUND1, path)
    assert runner.settings(path, "modern", 4, 100, ["random"]).agent_sha256 == file_sha256(path)
    assert runner.settings("pimc", "modern", 4, 100, ["random"]).agent_sha256 is None
    assert runner.settings("pimc_net", "modern", 4, 100, ["random"]).agent_sha256 is None



def test_a_start_model_inside_the_run_it_would_replace_is_refused_and_kept(tmp_path) -> None:
    """popejoan train --start-model <output-dir>/<run-name>/model.zip (go on from the last run of that name): the run
    removed the earlier run's output first, the start model with it, then failed on the missing file. It must be
    refused in one line before anything is removed."""
    from popejoan_env.errors import PopeJoanError
    from popejoan_env.files import file_sha256
    from popejoan_env.training import ppo

    flags = ["--quick", "--eval-interval", "0", "--final-eval-deals", "0", "--imitate-workers", "1", "--no-progress",
             "--no-tensorboard", "--output-dir", str(tmp_path)]
    ppo.main([*flags, "--imitate-deals", "100", "--rounds", "1", "--rollout-deals", "12", "--rollout-worlds", "2"])
    run = tmp_path / "quick"
    before = {name: file_sha256(str(run / name)) for name in ("model.zip", "run.json", "rounds/round_1.zip")}
    for start in ("model.zip", "rounds/round_1.zip"):
        with pytest.raises(PopeJoanError, match="--start-model"):
            ppo.main([*flags, "--start-model", str(run / start), "--rounds", "1", "--rollout-deals", "12",
                      "--rollout-worlds", "2"])
        assert {name: file_sha256(str(run / name)) for name in before} == before



def test_code_compiled_from_a_source_that_changed_since_is_never_loaded_from_numba_s_cache(tmp_path) -> None:
    """``kernel_cache.drop_stale`` with a job still running from the old source: the job saves its compiled code
    after a newer command flushed the cache and stamped the new source; that command (and every later one) must
    compile the new source, not load the job's code."""
    import subprocess
    import sys
    import textwrap
    import time

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")

    def write_dep(value: int) -> None:
        (pkg / "dep.py").write_text(textwrap.dedent(f"""
            import numba
            @numba.njit(cache=True, inline="always")
            def value():
                return {value}
            """))

    write_dep(1)
    (pkg / "user.py").write_text(textwrap.dedent("""
        import numba
        from pkg import dep
        from popejoan_env.search import kernel_cache
        @numba.njit(cache=True)
        def compute():
            return dep.value()
        kernel_cache.drop_stale((compute,), (dep,), "user.dep.stamp")
        """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), ROOT, os.environ.get("PYTHONPATH", "")])}
    env.pop("NUMBA_DISABLE_JIT", None)
    env.pop("NUMBA_CACHE_DIR", None)
    code = "from pkg import user; print('ready', flush=True); input(); print(user.compute(), flush=True)"

    def job() -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        return p

    first = job()
    first.communicate("\n")  # the old source compiled and cached
    old = job()  # a long job that imported the old source and compiles later
    time.sleep(0.05)
    write_dep(2)
    new = job()  # started after the change: flushes the cache and stamps the new source
    assert old.communicate("\n")[0].strip() == "1"  # the job runs what it imported, and caches it
    assert new.communicate("\n")[0].strip() == "2"
    later = subprocess.run([sys.executable, "-c", "from pkg import user; print(user.compute())"], env=env,
                           capture_output=True, text=True, check=True)
    assert later.stdout.strip() == "2"



RLLIB_FLAGS = ["--num-env-runners", "0", "--num-cpus", "1", "--train-batch-size", "256", "--minibatch-size", "128",
               "--num-envs-per-env-runner", "8", "--num-epochs", "1", "--eval-deals", "0", "--no-tensorboard",
               "--checkpoint-interval", "2", "--snapshots", "1", "--snapshot-interval", "1000", "--net-arch", "32"]


def _rllib(args: list[str]):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "popejoan_env", "train-rllib", *RLLIB_FLAGS, *args],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)


def _snapshot_state(checkpoint: str) -> dict:
    import pickle

    with open(os.path.join(checkpoint, "learner_group", "learner", "rl_module", "snapshot_0", "module_state.pkl"),
              "rb") as fh:
        return pickle.load(fh)


@pytest.mark.slow
def test_train_rllib_restore_goes_on_with_the_run_s_iterations_league_and_throughput(tmp_path) -> None:
    """--restore of a run's second checkpoint into the run's own directory: its iterations go on (no checkpoint name
    taken twice, the abandoned continuation's removed), its snapshot keeps its weights, and steps/s counts this run's
    steps; a checkpoint of another setup is refused in one line before Ray starts."""
    import json

    import numpy as np

    pytest.importorskip("ray")
    out = str(tmp_path)
    first = _rllib(["--output-dir", out, "--run-name", "r", "--total-timesteps", "1000"])
    assert first.returncode == 0, first.stderr[-3000:]
    folder = tmp_path / "r" / "checkpoints"
    assert sorted(os.listdir(folder)) == ["iter_00002", "iter_00004"]
    start = str(folder / "iter_00002")
    before = _snapshot_state(start)
    again = _rllib(["--output-dir", out, "--run-name", "r", "--total-timesteps", "600", "--restore", start])
    assert again.returncode == 0, again.stderr[-3000:]
    run = json.loads((tmp_path / "r" / "run.json").read_text())
    assert run["iterations"] == 3 and [h["iteration"] for h in run["history"]] == [3]
    assert sorted(os.listdir(folder)) == ["iter_00002", "iter_00003"]  # iter_00004 was of another continuation
    ran = run["env_steps"] - run["restored"]["env_steps"]
    # steps/s is this run's steps over its seconds (run.json rounds the seconds to 0.1 s: that much leeway)
    assert 0 < ran < run["env_steps"]
    assert abs(run["steps_per_s"] * run["train_seconds"] - ran) <= 0.051 * run["steps_per_s"] + 1
    after = _snapshot_state(run["checkpoint"])
    assert all(np.array_equal(np.asarray(before[k]), np.asarray(after[k])) for k in before)  # the league kept
    for flags, says in ((["--net-arch", "64"], "--net-arch"), (["--preset", "victorian"], "--preset")):
        other = _rllib(["--output-dir", out, "--run-name", "x", "--total-timesteps", "600", "--restore", start, *flags])
        lines = other.stderr.strip().splitlines()
        assert other.returncode == 2 and len(lines) == 1 and says in lines[0] and "Traceback" not in other.stderr
        assert not (tmp_path / "x").exists()



@pytest.mark.parametrize("module", ["cleanrl", "mappo"])
def test_a_run_stopped_in_its_final_evaluation_leaves_no_earlier_run_json_beside_its_model(module, tmp_path,
                                                                                          monkeypatch) -> None:
    """train-cleanrl / train-mappo write model.zip, evaluate it, then write run.json beside it: stopped (Ctrl-C) in
    the evaluation, the new model must not stand beside the earlier run's run.json (its flags, seed and results)."""
    import importlib
    import json

    if module == "mappo":
        pytest.importorskip("torchrl")
    trainer = importlib.import_module(f"popejoan_env.training.{module}")
    (tmp_path / "run.json").write_text(json.dumps({"args": {"seed": 99}, "evaluation": {"random": "an old one"}}))
    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "events.out.tfevents.1.old").write_text("")

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer, "evaluate", stop)
    flags = (["--total-timesteps", "128", "--num-envs", "4", "--num-steps", "32", "--update-epochs", "1"]
             if module == "cleanrl" else ["--total-frames", "64", "--frames-per-batch", "64", "--minibatch-size", "32",
                                          "--num-epochs", "1"])
    with pytest.raises(KeyboardInterrupt):
        trainer.main([*flags, "--model-path", str(tmp_path / "model.zip"), "--eval-deals", "2"])
    assert (tmp_path / "model.zip").exists()
    assert not (tmp_path / "run.json").exists() and not (tmp_path / "tb" / "events.out.tfevents.1.old").exists()



def test_an_evaluation_played_by_another_version_of_popejoan_is_not_resumed(tmp_path, monkeypatch) -> None:
    """The report names one version of popejoan (``report.versions``): blocks played by another version, kept in
    a state file across an upgrade, must not be finished by this one; a state file written before the version was
    kept (none named) still resumes."""
    import json

    import popejoan_env

    path = str(tmp_path / "ev.state.json")
    found = runner.settings("random", "modern", 4, 100, ["random"])
    monkeypatch.setattr(popejoan_env, "__version__", "0.0.1")
    runner.State(path, found).add("random", 0, _block())
    monkeypatch.setattr(popejoan_env, "__version__", "0.0.2")
    with pytest.raises(StateFileError, match="0.0.1"):
        runner.State(path, found)
    with open(path) as fh:
        body = json.load(fh)
    del body["popejoan"]
    with open(path, "w") as fh:
        json.dump(body, fh)
    assert sorted(runner.State(path, found).blocks["random"]) == [0]



@pytest.mark.parametrize("name, other", [("numpy", "1.0.0"), ("torch", "0.1.0")])
def test_an_evaluation_played_with_another_numpy_or_torch_is_not_resumed(tmp_path, name: str, other: str) -> None:
    """numpy deals and computes, torch runs the networks: blocks played with other versions of them (a state kept
    across an upgrade) are not finished by these, and the refusal names both; a state that does not name one (a
    scripted evaluation names no torch) is not held to it."""
    import json

    path = tmp_path / "ev.state.json"
    found = runner.settings("random", "modern", 4, 100, ["random"])
    runner.State(str(path), found).add("random", 0, _block())
    body = json.loads(path.read_text())
    assert body["numpy"] == np.__version__ and set(body) >= {"popejoan", "numpy", "torch"}
    path.write_text(json.dumps({**body, name: other}))
    with pytest.raises(StateFileError, match=rf"other versions \({name} '{re.escape(other)}' there, '\S+' here\)"):
        runner.State(str(path), found)
    for kept in (None, "absent"):
        changed = {**body, name: kept} if kept is None else {k: v for k, v in body.items() if k != name}
        path.write_text(json.dumps(changed))
        assert sorted(runner.State(str(path), found).blocks["random"]) == [0]


WRITER = """
import sys
from popejoan_env.files import replacing
with replacing(sys.argv[1]) as tmp:
    with open(tmp, "w") as fh:
        fh.write("half of a result")
    print("writing", flush=True)
    sys.stdin.readline()
"""


def test_a_killed_writer_s_temporary_file_is_removed_by_the_next_write_and_a_live_one_s_is_not(tmp_path) -> None:
    """kill -9 (or the out-of-memory killer) reaches no handler: the half-written temporary file stayed beside the
    destination for good (52 MB after 4 s of ``popejoan simulate``). The next write to the destination removes it,
    and never the temporary file of a writer still running."""
    import signal
    import subprocess
    import sys

    from popejoan_env import files

    target = tmp_path / "out.json"
    target.write_text("old")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}

    def writer() -> subprocess.Popen:
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=env)
        assert child.stdout is not None and child.stdout.readline() == "writing\n"
        return child

    def temporaries() -> set[str]:
        return {name for name in os.listdir(tmp_path) if name.endswith(".tmp")}

    killed = writer()
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    left = temporaries()
    assert len(left) == 1
    alive = writer()
    try:
        theirs = temporaries() - left
        old = os.path.getmtime(target) - 2 * getattr(files, "STALE_SECONDS", 60.0)
        for name in temporaries():
            os.utime(tmp_path / name, (old, old))
        files.write_atomic(str(target), "new")
        assert target.read_text() == "new"
        assert temporaries() == theirs  # the killed writer's is gone, the live writer's kept
    finally:
        alive.communicate("\n", timeout=30)
    assert target.read_text() == "half of a result" and not temporaries()



def test_the_web_app_loads_a_model_replaced_by_one_of_the_same_size_and_time(tmp_path) -> None:
    """The web app keeps each model's network while its file is unchanged. A model.zip replaced by another network of
    the same architecture (the same size) whose modification time was kept (cp -p, rsync -t, an archive) must be
    read again, not served as the old network."""
    import numpy as np

    from popejoan_env.web.games import ModelShelf

    run = tmp_path / "models" / "run"
    run.mkdir(parents=True)
    path = run / "model.zip"
    shutil.copy(ROUND1, path)
    assert os.path.getsize(ROUND1) == os.path.getsize(ROUND2)
    shelf = ModelShelf(str(tmp_path / "models"))
    real = shelf.resolve("models/run/model.zip")
    obs = np.zeros(1285, dtype=np.float32)
    first = np.asarray(shelf.policy(real).logits(obs))
    stamp = os.stat(path)
    replacement = tmp_path / "new.zip"
    shutil.copy(ROUND2, replacement)
    os.utime(replacement, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    os.replace(replacement, path)  # the same size and modification time, another network
    assert os.stat(path).st_mtime_ns == stamp.st_mtime_ns and os.stat(path).st_size == stamp.st_size
    from popejoan_env.nets.policy import load_policy

    expected = np.asarray(load_policy(ROUND2).logits(obs))
    assert not np.allclose(first, expected)
    assert np.allclose(np.asarray(shelf.policy(real).logits(obs)), expected)


def test_a_resumed_evaluation_keeps_the_torch_its_blocks_were_played_with(tmp_path, monkeypatch) -> None:
    """A scripted agent's evaluation loads torch for the panel's networks only: resumed after them (the reference
    pairs left), it loads none, and its state still names the torch their blocks were played with (was: None, so a
    later resume under another torch was accepted)."""
    import json
    import sys

    pytest.importorskip("torch")
    from popejoan_env.files import held_versions

    path = tmp_path / "ev.state.json"
    found = runner.settings("random", "modern", 4, 200, ["random"])
    runner.State(str(path), found).add("random", 0, _block())  # torch imported: a network's blocks
    torch = json.loads(path.read_text())["torch"]
    assert torch is not None
    monkeypatch.delitem(sys.modules, "torch")  # the process that resumes loads no network
    assert held_versions()["torch"] is None
    resumed = runner.State(str(path), found)
    resumed.add("random", 1, _block())
    assert json.loads(path.read_text())["torch"] == torch
    from popejoan_env.evaluate.report import versions

    assert versions(resumed.kept)["torch"] == torch  # the report names it too (was: None, "torch not used")
    path.write_text(json.dumps({**json.loads(path.read_text()), "torch": "0.1.0"}))
    with pytest.raises(StateFileError, match=r"other versions \(torch '0.1.0' there"):
        runner.State(str(path), found)


def test_a_state_file_over_the_limit_is_refused_once_naming_the_limit(tmp_path) -> None:
    # The refusal is a ValueError, and _load's own except wrapped it again, cut at 200 characters: the message said
    # "cannot resume from P: cannot resume from P: ..." and, with a longer path, lost MAX_STATE_BYTES and its value.
    from popejoan_env.evaluate import resume

    folder = tmp_path / ("long_directory_name_" * 5)
    folder.mkdir()
    path = folder / "r.state.json"
    with open(path, "wb") as fh:
        fh.truncate(resume.MAX_STATE_BYTES + 1)
    with pytest.raises(resume.StateFileError) as refused:
        resume._load(str(path))
    message = str(refused.value)
    assert message.count("cannot resume from") == 1 and message.count("remove it") == 1, message
    assert f"MAX_STATE_BYTES = {resume.MAX_STATE_BYTES:,}" in message, message
    os.remove(path)
    os.mkfifo(path)
    with pytest.raises(resume.StateFileError, match="not a regular file") as refused:
        resume._load(str(path))
    assert str(refused.value).count("cannot resume from") == 1, refused.value
