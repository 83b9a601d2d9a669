"""Property-based fuzzing (hypothesis) of every input boundary: records, record files, rules options, model
files, evaluation state files, command lines, and the three environments' ``reset`` and ``step``.

Each property states the contract of a boundary: whatever comes in, the
answer is a result or the package's own error (``RecordError``,
``RulesError``, ``ModelFileError``, ``PopeJoanError``; on the command line an
exit status of 0, 1 or 2 with one line on stderr), never another exception;
an environment call that is refused leaves the environment, its session or
deal and its generator exactly as they were, and every observation it hands
out lies in its observation space.

Budget: by default every property runs a small fixed number of examples
(derandomized, no example database), so the normal test command runs the
whole file in about 15 s and CI sees the same examples every time.  To fuzz
for real, give a number of examples per property; the examples are then
random and failures are kept in hypothesis's database (``.hypothesis/`` in the
current directory, so run it from a scratch directory) so that the next run
replays them first::

    cd /tmp && POPEJOAN_FUZZ_EXAMPLES=25000 python -m pytest /path/to/tests/test_fuzz.py   # about an hour

(1,000 examples per property take about 2.5 minutes on the 2-core machine;
the Gym and AEC ``step`` properties are the slowest, ~30 ms an example.)

A property that finds a bug is fixed at the bug, never loosened: the
properties on env ``reset``/``step``, extreme values in error messages and
``Rules.replace(self=...)`` found bugs that were fixed that way.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import gzip
import hashlib
import io
import json
import os
import pathlib
import re
import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from loopback import responder
from popejoan_env.__main__ import main
from popejoan_env.envs.pettingzoo_aec import env as aec_env
from popejoan_env.envs.pettingzoo_aec import raw_env
from popejoan_env.rules import parse_rules_options
from popejoan_env.engine import Deal
from popejoan_env.errors import PopeJoanError, RecordError, RulesError
from popejoan_env.envs.gymnasium_env import PopeJoanGymEnv
from popejoan_env.nets.model_file import ModelFileError
from popejoan_env.nets.policy import read_metadata
from popejoan_env.players.learned import LearnedPlayer, load_player
from popejoan_env.record import read_records, verify_record
from popejoan_env.rules import COMPARTMENTS, MAX_PLAYERS, MIN_PLAYERS, Rules
from test_edges import (  # the model-file and state-file builders of the regression tests
    GOLDEN, GOLDEN_LINES, GOLDEN_RECORDS, STATE_PLAN, a_view, plain_data, resume_from, tiny_metadata, tiny_state,
    weights_bytes, write_model, write_plain,
)

FUZZ_EXAMPLES = int(os.environ.get("POPEJOAN_FUZZ_EXAMPLES", "0") or 0)
"""Examples per property when set (long fuzzing); 0: each property's small default."""


def fuzz(examples: int, known_bug: bool = False) -> settings:
    """Hypothesis settings: ``examples`` by default (fixed, derandomized), ``POPEJOAN_FUZZ_EXAMPLES`` when set.

    ``known_bug``: a property that fails today (mark it xfail) stops at its first failure, without shrinking it,
    so that it costs no time.
    """
    extra: dict[str, Any] = {} if FUZZ_EXAMPLES else {"database": None, "derandomize": True}
    if known_bug:
        extra.update(phases=[Phase.explicit, Phase.reuse, Phase.generate], report_multiple_bugs=False)
    return settings(max_examples=FUZZ_EXAMPLES or examples, deadline=None, print_blob=True,
                    suppress_health_check=list(HealthCheck), **extra)


# ===================================================================== values
HUGE_INTS = [2**63, -(2**63) - 1, 2**64, 10**30, 10**4000, -(10**4000)]
CARDS = ["AS", "9D", "8D", "KH", "10C", "th", " 7d", "ZZ", "", "AS ", "1S", "QQ"]
SPECIAL_TEXT = CARDS + list(COMPARTMENTS) + ["modern", "victorian", "custom", "play", "turnup", "game",
                                                "x" * 5000, "\0", "é", "popejoan-record/1", "true", "null"]


class Deep(list):  # type: ignore[type-arg]
    """A list nested many levels deep: a real list to the code under test, shown briefly in hypothesis's reports."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(f"deep({self.depth})")


def deep(depth: int, leaf: Any = 0) -> Any:
    """A list nested ``depth`` deep (built without recursion)."""
    for _ in range(depth - 1):
        leaf = [leaf]
    out = Deep([leaf])
    out.depth = depth  # type: ignore[attr-defined]
    return out


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-100, 100), st.integers(), st.sampled_from(HUGE_INTS),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 1.0, -19.0, 6.0, 0.5]),
    st.text(max_size=12), st.sampled_from(SPECIAL_TEXT),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10) | st.sampled_from(SPECIAL_TEXT),
                                                                 inner, max_size=5),
    max_leaves=15,
)
junk = json_values | st.builds(deep, st.sampled_from([9, 50, 5000]), scalars)
"""Anything a JSON file (or a careless caller) can hand over, deeply nested lists included."""


# ===================================================================== mutating nested values
def _paths(value: Any, prefix: tuple[Any, ...] = (), max_depth: int = 12) -> list[tuple[Any, ...]]:
    """Every path into a nested value (keys and indices) down to ``max_depth`` levels, the root included."""
    out = [prefix]
    stack = [(value, prefix)]
    while stack:
        item, path = stack.pop()
        if len(path) >= max_depth:
            continue
        children = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        for key, child in children:
            out.append(path + (key,))
            stack.append((child, path + (key,)))
    return out


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _swap_type(value: Any) -> list[Any]:
    """Values of other types that a careless writer might put in its place."""
    if isinstance(value, bool):
        return [int(value), float(value), str(value).lower(), None]
    if isinstance(value, int):
        return [float(value), bool(value % 2), str(value), [value], value + 1, -value - 1, value * 10**25]
    if isinstance(value, float):
        return [int(value) if value == value and abs(value) < 1e300 else 0, str(value)]
    if isinstance(value, str):
        return [value.lower(), value + "x", value[:1], value * 3, [value], 0, None]
    if isinstance(value, list):
        return [tuple(value), dict(enumerate(value)), value[:-1], value + value[:1], "[1, 2]", []]
    if isinstance(value, dict):
        return [list(value.values()), list(value), {}, {**value, "junk": 1}]
    return [0, "", []]


@st.composite
def mutated(draw: st.DrawFn, original: Any, max_changes: int = 3, extreme: bool = True) -> Any:
    """``original`` (deep-copied) with 1..``max_changes`` changes at random places.

    ``extreme``: the new values include lists nested 5,000 deep (else at most a dozen levels).
    """
    values = junk if extreme else json_values
    depths = [1, 2, 12, 5000] if extreme else [1, 2, 12]
    value = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, max_changes))):
        paths = _paths(value)
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "delete", "swap", "insert", "nest"]))
        target = _get(value, path)
        if op == "replace":
            new = draw(values)
        elif op == "swap":
            new = draw(st.sampled_from(_swap_type(target)))
        elif op == "nest":
            new = deep(draw(st.sampled_from(depths)), target)
        elif op == "insert" and isinstance(target, (list, dict)):
            if isinstance(target, list):
                target.insert(draw(st.integers(0, len(target))), draw(values))
            else:
                target[draw(st.text(max_size=10) | st.sampled_from(SPECIAL_TEXT))] = draw(values)
            continue
        else:  # delete (or insert into a scalar: delete it)
            if not path:
                continue
            parent = _get(value, path[:-1])
            del parent[path[-1]]
            continue
        if not path:
            value = new
        else:
            _get(value, path[:-1])[path[-1]] = new
    return value


def mutated_bytes(data: bytes, max_changes: int = 4) -> st.SearchStrategy[bytes]:
    """``data`` with bit flips, overwritten, deleted, inserted or duplicated ranges, or cut short."""

    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        out = bytearray(data)
        for _ in range(draw(st.integers(1, max_changes))):
            if not out:
                break
            op = draw(st.sampled_from(["flip", "flip", "write", "delete", "insert", "dup", "cut"]))
            i = draw(st.integers(0, len(out) - 1))
            n = draw(st.integers(1, 64))
            if op == "flip":
                out[i] ^= 1 << draw(st.integers(0, 7))
            elif op == "write":
                out[i:i + n] = draw(st.binary(min_size=n, max_size=n))
            elif op == "delete":
                del out[i:i + n]
            elif op == "insert":
                out[i:i] = draw(st.binary(min_size=1, max_size=n))
            elif op == "dup":
                out[i:i] = out[i:i + n]
            else:
                del out[i:]
        return bytes(out)

    return build()


# ===================================================================== records
@fuzz(300)
@given(data=st.data(), index=st.integers(0, len(GOLDEN_RECORDS) - 1))
def test_mutated_golden_records_verify_or_raise_record_error(data: st.DataObject, index: int) -> None:
    record = data.draw(mutated(GOLDEN_RECORDS[index]))
    try:
        verify_record(record)
    except RecordError:
        pass


@fuzz(150)
@given(data=st.data(), lines=st.lists(st.integers(0, len(GOLDEN_LINES) - 1), min_size=1, max_size=4),
       gz=st.booleans())
def test_mutated_record_files_read_or_raise_record_error(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, lines: list[int], gz: bool,
) -> None:
    text = "".join(GOLDEN_LINES[i] + "\n" for i in lines).encode()
    if gz:  # corrupt the compressed stream itself
        content = data.draw(mutated_bytes(gzip.compress(text, mtime=0)))
    else:
        content = data.draw(mutated_bytes(text))
    path = tmp_path_factory.getbasetemp() / ("fuzz.jsonl.gz" if gz else "fuzz.jsonl")
    path.write_bytes(content)
    try:
        for _, record in read_records(path):
            with contextlib.suppress(RecordError):
                verify_record(record)
    except RecordError:
        pass


@fuzz(100)
@given(content=st.binary(max_size=3000), gz=st.booleans())
def test_random_bytes_read_or_raise_record_error(
    tmp_path_factory: pytest.TempPathFactory, content: bytes, gz: bool,
) -> None:
    path = tmp_path_factory.getbasetemp() / ("random.jsonl.gz" if gz else "random.jsonl")
    path.write_bytes(gzip.compress(content, mtime=0) if gz and content[:1] == b"{" else content)
    try:
        for _, record in read_records(path):
            with contextlib.suppress(RecordError):
                verify_record(record)
    except RecordError:
        pass


# ===================================================================== rules options
OPTION_NAMES = ["lead", "deal", "pope_turnup", "pair_split", "ace_high", "dealer_sees_dead_hand", "pope_excused",
                "dressing", "start_counters", "allow_credit", "preset", "name"]
option_values = st.one_of(
    st.sampled_from(["lowest_of_suit", "any", "equal", "all_round", "fixed_stock", "pays_pope", "ends_deal",
                     "none", "halves", True, False, 0, 48, 3, -1, "modern", "victorian", "custom"]),
    st.dictionaries(st.sampled_from(list(COMPARTMENTS) + ["pot"]), scalars, max_size=9),
    st.lists(scalars, min_size=7, max_size=9),
    json_values,
)


@fuzz(200)
@given(options=st.dictionaries(st.sampled_from(OPTION_NAMES) | st.text(max_size=8), option_values, max_size=6))
def test_rules_from_dict_gives_rules_or_rules_error(options: dict[str, Any]) -> None:
    try:
        rules = Rules.from_dict(options)
    except RulesError:
        return
    assert Rules.from_dict(rules.to_dict()) == rules


@fuzz(20)
@given(key=st.sampled_from(OPTION_NAMES[:-1]), value=st.sampled_from([10**5000, -(10**5000)]) | st.builds(
    deep, st.just(5000)), in_dressing=st.booleans())
def test_rules_from_dict_extreme_values_give_rules_error(key: str, value: Any, in_dressing: bool) -> None:
    options = {"dressing": {"pope": value}} if in_dressing else {key: value}
    with contextlib.suppress(RulesError):
        Rules.from_dict(options)


def test_rules_option_named_self_is_a_rules_error() -> None:
    with pytest.raises(RulesError):
        Rules.from_dict({"self": "lowest_of_suit"})


def _option_text(draw: st.DrawFn) -> str:
    key = draw(st.sampled_from(OPTION_NAMES) | st.text(max_size=8))
    value = draw(option_values)
    try:
        text = draw(st.sampled_from([json.dumps(value), str(value)]))
    except (ValueError, RecursionError, TypeError):
        text = str(type(value))
    return draw(st.sampled_from([f"{key}={text}", f"{key}{text}", f" {key} = {text} ", text, f"={text}"]))


@fuzz(300)
@given(preset=st.sampled_from(["modern", "victorian"]) | st.text(max_size=8),
       options=st.lists(st.composite(lambda draw: _option_text(draw))(), max_size=4))
def test_parse_rules_options_gives_rules_or_rules_error(preset: str, options: list[str]) -> None:
    with contextlib.suppress(RulesError):
        assert isinstance(parse_rules_options(preset, options), Rules)


# ===================================================================== model files
@functools.cache
def model_parts() -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
    """The state_dict, metadata, zip bytes and policy.pth bytes of a small real model (8 hidden units);
    not a fixture, so that hypothesis does not print it with every failing example."""
    import tempfile

    state, meta = tiny_state((8,)), tiny_metadata((8,))
    weights = weights_bytes(state)
    with tempfile.TemporaryDirectory() as folder:
        path = write_model(pathlib.Path(folder) / "tiny.zip", weights, meta)
        return state, meta, path.read_bytes(), weights


@functools.cache
def _view() -> Any:
    return a_view()


def _loads_and_plays_or_refuses(path: pathlib.Path) -> None:
    """``load_player`` gives a player that plays a legal card at once, or a ModelFileError."""
    try:
        player = load_player(path)
    except ModelFileError:
        return
    assert isinstance(player, LearnedPlayer)
    view = _view()
    assert player.act(view) in view.legal


@fuzz(150)
@given(data=st.data())
def test_mutated_model_zip_loads_or_raises_model_file_error(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject,
) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz_model.zip"
    path.write_bytes(data.draw(mutated_bytes(model_parts()[2])))
    _loads_and_plays_or_refuses(path)


@fuzz(150)
@given(data=st.data())
def test_mutated_model_metadata_loads_or_raises_model_file_error(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject,
) -> None:
    _, meta, _, weights = model_parts()
    changed = data.draw(mutated(meta))
    try:
        text = json.dumps(changed).encode()
    except (ValueError, RecursionError):  # NaN is written; a huge or too deep value cannot be
        text = data.draw(st.sampled_from([b"[" * 5000, b"{" + b'"a":[' * 5000, b"\xff\xfe", b"1" * 5000]))
    path = write_model(tmp_path_factory.getbasetemp() / "fuzz_meta.zip", weights, text)
    _loads_and_plays_or_refuses(path)


def _tensor_like(draw: st.DrawFn, like: Any) -> Any:
    import torch

    kind = draw(st.sampled_from(["shape", "dtype", "nan", "scalar", "python", "empty", "transpose"]))
    if kind == "shape":
        shape = draw(st.lists(st.integers(0, 60), max_size=3))
        return torch.zeros(shape)
    if kind == "dtype":
        dtype = draw(st.sampled_from([torch.int64, torch.int8, torch.bool, torch.float16, torch.float64,
                                      torch.bfloat16, torch.complex64, torch.uint8]))
        return like.to(dtype)
    if kind == "nan":
        out = like.clone().reshape(-1)
        out[draw(st.integers(0, out.numel() - 1))] = draw(st.sampled_from([float("nan"), float("inf")]))
        return out.reshape(like.shape)
    if kind == "scalar":
        return torch.tensor(draw(st.floats(allow_nan=False)))
    if kind == "python":
        return draw(st.sampled_from([1, 1.5, "w", None, [1.0, 2.0], {"a": 1}, (3,)]))
    if kind == "empty":
        return like[:0]
    return like.T if like.dim() == 2 else like.reshape(1, -1)


@fuzz(120)
@given(data=st.data())
def test_mutated_model_weights_load_or_raise_model_file_error(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject,
) -> None:
    parts = model_parts()
    state = dict(parts[0])
    for _ in range(data.draw(st.integers(1, 3))):
        key = data.draw(st.sampled_from(sorted(state)) | st.sampled_from(
            ["mlp_extractor.policy_net.2.weight", "mlp_extractor.policy_net.1.bias", "action_net.extra"]))
        op = data.draw(st.sampled_from(["delete", "change", "change", "rename"]))
        if op == "delete":
            state.pop(key, None)
        elif op == "rename" and key in state:
            state[key + data.draw(st.sampled_from(["_", ".x", ""]))] = state.pop(key)
        else:
            state[key] = _tensor_like(data.draw, parts[0].get(key, parts[0]["action_net.bias"]))
    path = write_model(tmp_path_factory.getbasetemp() / "fuzz_weights.zip", weights_bytes(state), parts[1])
    _loads_and_plays_or_refuses(path)


@fuzz(150)
@given(data=st.data())
def test_mutated_plain_sb3_data_loads_or_raises_model_file_error(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject,
) -> None:
    weights = model_parts()[3]
    changed = data.draw(mutated(plain_data()))
    try:
        text = json.dumps(changed).encode()
    except (ValueError, RecursionError):  # a value too deep to write: what such a file would hold
        text = data.draw(st.sampled_from([b"[" * 5000, b'{"a":[' * 5000, b"\xff\xfe", b"1" * 5000]))
    path = write_plain(tmp_path_factory.getbasetemp() / "fuzz_plain" / "model.zip", text, weights)
    _loads_and_plays_or_refuses(path)


adopt_values = junk | st.sampled_from([[3], [4, 5], [9], "34", [4.0], [True], "modern", "victorian",
                                       {"preset": "modern", "pack": "small"}, ["modern", "victorian"]])


@fuzz(60)
@given(rules=adopt_values, players=adopt_values,
       extra=st.dictionaries(st.sampled_from(["note", "architecture", "net_arch", "seed", "timesteps", "format"]),
                             junk, max_size=2))
def test_adopt_writes_a_model_that_plays_or_refuses_writing_nothing(
    tmp_path_factory: pytest.TempPathFactory, rules: Any, players: Any, extra: dict[str, Any],
) -> None:
    from popejoan_env.nets.sb3_zip import adopt

    folder = tmp_path_factory.mktemp("adopt")
    source = write_plain(folder / "run" / "model.zip", plain_data(), model_parts()[3])
    out = folder / "adopted.zip"
    try:
        written = adopt(source, rules=rules, players=players, out=out, **extra)
    except PopeJoanError as err:
        assert not out.exists() and len(str(err).splitlines()) == 1
        return
    _loads_and_plays_or_refuses(pathlib.Path(written))
    assert "plain_sb3" not in read_metadata(written)


# ===================================================================== evaluate's state file
@functools.cache
def genuine_state() -> str:
    """The text of a real state file: ``STATE_PLAN`` (3 blocks against random) stopped after its first block."""
    import tempfile

    from popejoan_env.evaluate.command import evaluate_agent

    def stop(name: str, block: int) -> None:
        raise KeyboardInterrupt

    with tempfile.TemporaryDirectory() as folder:
        prefix = os.path.join(folder, "run")
        with contextlib.suppress(KeyboardInterrupt):
            evaluate_agent(STATE_PLAN["agent"], deals=STATE_PLAN["deals"], opponents=STATE_PLAN["opponents"],
                           out=prefix, on_block=stop)
        return pathlib.Path(prefix + ".state.json").read_text()


def _resumes_within_the_plan_or_refuses(path: pathlib.Path) -> None:
    """The state resumes with blocks of the plan that a deal can give, or is one ``StateFileError``."""
    from popejoan_env.evaluate.resume import SERIES, StateFileError, deal_bounds

    try:
        state = resume_from(path)
    except StateFileError as err:
        assert len(str(err).splitlines()) == 1 and str(err).count(str(path)) == 1
        return
    low, high = deal_bounds(Rules.preset("modern"), 4)
    for name, blocks in state.blocks.items():
        assert set(blocks) <= {0, 1, 2}, (name, sorted(blocks))
        for block in blocks.values():
            assert all(len(block[k]) == 50 and np.isfinite(block[k]).all() for k in SERIES)
            assert all(low <= x <= high for k in ("agent_net", "opponent_net") for x in block[k])


@fuzz(150)
@given(data=st.data())
def test_mutated_state_file_resumes_within_the_plan_or_is_refused(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject,
) -> None:
    changed = data.draw(mutated(json.loads(genuine_state())))
    try:
        text = json.dumps(changed)
    except (ValueError, RecursionError):  # a value too deep to write: what such a file would hold
        text = data.draw(st.sampled_from(["[" * 5000, '{"a":[' * 5000, "1" * 5000]))
    path = tmp_path_factory.getbasetemp() / "fuzz.state.json"
    path.write_text(text)
    _resumes_within_the_plan_or_refuses(path)


@fuzz(100)
@given(data=st.data())
def test_state_file_bytes_resume_within_the_plan_or_are_refused(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject,
) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz_bytes.state.json"
    path.write_bytes(data.draw(mutated_bytes(genuine_state().encode())))
    _resumes_within_the_plan_or_refuses(path)


# ===================================================================== the state of a run's rounds
@dataclasses.dataclass
class _RunFlags:
    """The flags of a training run that the rounds' state reads (``rounds.identity`` takes any dataclass)."""

    seed: int = 1
    imitate_deals: int = 40
    rollout_deals: int = 24
    imitate_lr: float = 1e-3
    actor_arch: str = "8,16,16"
    rules_option: list[str] = dataclasses.field(default_factory=list)
    eval_opponents: str = "random,pimc"
    rounds: int = 3
    resume: bool = True


@functools.lru_cache(maxsize=1)
def genuine_rounds() -> dict[str, bytes]:
    """The files of a run's ``rounds/`` directory after round 0 and two rounds, as ``Rounds.finish`` writes them
    (stand-in network files: the checks read their SHA-256, not their weights)."""
    import tempfile

    from popejoan_env.training.rounds import Rounds

    flags = _RunFlags()
    row = {"deals": 2, "model_mean": 1.0, "model_ci95": 2.0, "opponent_mean": -1.0, "opponent_ci95": 2.0,
           "diff_mean": 2.0, "diff_ci95": 3.0, "significant": False}
    with tempfile.TemporaryDirectory() as run:
        state = Rounds.start(run, flags)
        for k in range(3):
            deals = flags.imitate_deals if k == 0 else flags.rollout_deals
            record = {"deals": deals, "decisions": 9 * deals, "epochs": [{"epoch": 1, "held_out_value_loss": None}],
                      "seconds": 2.5}
            evals = [{"timesteps": 0, "train_seconds": 2.5 * k + e, "stage": "imitation" if k == 0 else f"round {k}",
                      "epoch": e, "results": {"random": dict(row), "pimc": dict(row)}} for e in (0, 1)]
            state.finish(k, lambda path, k=k: pathlib.Path(path).write_bytes(b"round %d" % k), record, evals)
        return {name: (pathlib.Path(state.directory) / name).read_bytes() for name in os.listdir(state.directory)}


def _rounds_resume_or_refuse(run: pathlib.Path, state: bytes) -> None:
    """``Rounds.resume`` on a run whose state file holds ``state``: a ResumeError of one line, or rounds whose
    records and learning-curve points the recipe, run.json and the learning curve can use."""
    from popejoan_env.training.rounds import ResumeError, Rounds

    directory = run / "rounds"
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in genuine_rounds().items():
        (directory / name).write_bytes(content)
    (directory / "state.json").write_bytes(state)
    try:
        back = Rounds.resume(str(run), _RunFlags())
    except ResumeError as err:
        assert len(str(err).splitlines()) == 1 and len(str(err)) < 600, str(err)
        return
    seconds = sum(entry["record"]["seconds"] for entry in back.done)
    assert 0 <= round(seconds + 0.5, 1) < float("inf")
    assert all(entry["record"]["decisions"] >= 0 for entry in back.done)
    json.dumps({"done": back.done}, allow_nan=False)  # the next state file and run.json can be written
    for entry in back.done:
        for row in entry["evals"]:
            assert row["train_seconds"] / 60 >= 0 and row["stage"] and sorted(row["results"]) == ["pimc", "random"]
            assert all(np.isfinite([r["diff_mean"], r["diff_ci95"]]).all() for r in row["results"].values())


@fuzz(150)
@given(data=st.data())
def test_mutated_rounds_state_resumes_usable_rounds_or_is_refused(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject,
) -> None:
    changed = data.draw(mutated(json.loads(genuine_rounds()["state.json"])))
    try:
        text = json.dumps(changed)
    except (ValueError, RecursionError):  # a value too deep to write: what such a file would hold
        text = data.draw(st.sampled_from(["[" * 5000, '{"a":[' * 5000, "1" * 5000]))
    _rounds_resume_or_refuse(tmp_path_factory.getbasetemp() / "fuzz_rounds", text.encode())


@fuzz(100)
@given(data=st.data())
def test_rounds_state_bytes_resume_usable_rounds_or_are_refused(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject,
) -> None:
    state = data.draw(mutated_bytes(genuine_rounds()["state.json"]))
    _rounds_resume_or_refuse(tmp_path_factory.getbasetemp() / "fuzz_rounds_bytes", state)


# ===================================================================== gymnasium.make and the environments' arguments
GYM_ARGUMENTS = ("players", "rules", "opponents", "max_snapshots", "deals", "reward_scale", "balance_range",
                 "illegal_action", "illegal_reward", "lone_leads", "render_mode")
"""The arguments of ``gymnasium.make("popejoan/PopeJoan-v2", ...)`` whose values the env checks (``render_mode``
too: the registered builder is a function, so Gymnasium no longer judges it first)."""
AEC_ARGUMENTS = ("players", "rules", "render_mode", "auto_forced", "deals", "dealer")
"""The AEC env's arguments."""


@fuzz(120)
@given(kwargs=st.dictionaries(st.sampled_from(GYM_ARGUMENTS), junk, min_size=1, max_size=3))
def test_gymnasium_make_builds_a_playable_env_or_refuses_in_one_line(kwargs: dict[str, Any]) -> None:
    import gymnasium as gym

    import popejoan_env

    gym.register_envs(popejoan_env)
    try:
        env = gym.make("popejoan/PopeJoan-v2", **kwargs)
    except PopeJoanError as err:
        assert len(str(err).splitlines()) == 1 and len(str(err)) < 1000
        return
    observation, _ = env.reset(seed=0)
    assert env.observation_space.contains(observation)
    base = env.unwrapped
    assert 0 < base.reward_scale <= 1000 and base.pool.max_snapshots >= 1
    _, reward, _, _, _ = env.step(int(np.flatnonzero(base.action_masks())[0]))
    assert np.isfinite(reward)


@fuzz(80)
@given(kwargs=st.dictionaries(st.sampled_from(AEC_ARGUMENTS), junk | st.sampled_from(["ansi", "human", 10**4, 1001]),
                              min_size=1, max_size=3))
def test_the_aec_env_builds_a_playable_env_or_refuses_in_one_line(kwargs: dict[str, Any]) -> None:
    try:
        env = raw_env(**kwargs)
    except PopeJoanError as err:
        assert len(str(err).splitlines()) == 1 and len(str(err)) < 1000
        return
    assert 1 <= env.deals_per_episode <= 1000 and env.render_mode in (None, "ansi", "human")
    env.reset(seed=0)
    check_aec_spaces(env)


@fuzz(60)
@given(hidden=st.integers(1, 65536), critic=st.integers(1, 65536), frames=st.integers(1, 10**7),
       players=st.integers(3, 8))
def test_train_mappo_networks_are_refused_or_fit_a_model_file(hidden: int, critic: int, frames: int,
                                                             players: int) -> None:
    mappo = pytest.importorskip("popejoan_env.training.mappo", exc_type=ImportError)
    from popejoan_env.nets.model_file import MAX_NETWORK_VALUES

    args = mappo.Args(hidden=hidden, critic_hidden=critic, frames_per_batch=max(frames, 2), minibatch_size=2,
                      players=players, eval_deals=0)
    try:
        mappo.check_args(args)
    except PopeJoanError as err:
        assert len(str(err).splitlines()) == 1
        return
    counted = mappo.mlp_values([mappo.OBS_SIZE, hidden, hidden, 52])
    assert counted <= MAX_NETWORK_VALUES
    assert counted == sum(p.numel() for p in mappo.Actor(hidden).parameters()) if hidden <= 256 else True


# ===================================================================== exploit:AGENT specs
EXPLOIT_KEYS = ("worlds", "draws", "rounds", "confidence", "posterior", "decisions", "continuation")
EXPLOIT_VALUES = ("0", "1", "2", "8", "64", "65", "4096", "4097", "-1", "nan", "inf", "1e3", "8.0", "٣", "1_0", "",
                  "9" * 4000, "agent", "sampled", "none", "random", "exploit", "pimc", "x.zip", "True", "100", "100.5")
EXPLOIT_AGENTS = ("random", "stops_first", "lowest", "exploit:random", "exploit", "no_such", "x.zip", "", "random:a=1",
                  "pimc:samples=2", "os:getcwd", "EXPLOIT:random", "y" * 5000)


@fuzz(150)
@given(options=st.lists(st.tuples(st.sampled_from(EXPLOIT_KEYS) | st.text(max_size=6),
                                  st.sampled_from(EXPLOIT_VALUES) | st.text(max_size=6)), max_size=5),
       agent=st.sampled_from(EXPLOIT_AGENTS) | st.text(max_size=8), spaces=st.booleans())
def test_an_exploit_spec_builds_a_bounded_best_response_or_is_refused_in_one_line(
        options: list[tuple[str, str]], agent: str, spaces: bool) -> None:
    from popejoan_env.players import make_player
    from popejoan_env.players.best_response import (MAX_CONFIDENCE, MAX_DECISIONS, MAX_ROUNDS, MAX_WORLDS,
                                                    BestResponsePlayer)

    glue = " : " if spaces else ":"
    spec = glue.join(["exploit", *(f"{k}={v}" for k, v in options), agent])
    try:
        player = make_player(spec, seed=0)
    except PopeJoanError as err:
        assert len(str(err).splitlines()) == 1 and len(str(err)) < 1000, spec
        return
    assert isinstance(player, BestResponsePlayer)
    assert 1 <= player.worlds <= player.draws <= MAX_WORLDS and 1 <= player.rounds <= MAX_ROUNDS
    assert 1 <= player.decisions <= MAX_DECISIONS and 0 <= player.confidence <= MAX_CONFIDENCE
    assert not isinstance(player.others, BestResponsePlayer) and not isinstance(player.own, BestResponsePlayer)


# ===================================================================== module:factory players
@fuzz(60)
@given(name=st.sampled_from(["mine", "", "a\nb", "n" * 101, 10**5000, None, b"x"]) | st.text(max_size=12),
       answer=st.sampled_from([0, 22.7, "AS", None, True, -1, 99, 10**100, [1], "x" * 10_000, "legal"]),
       raises=st.sampled_from([None, ValueError("a\nb"), SystemExit(0), GeneratorExit(), MemoryError()]),
       in_reset=st.booleans())
def test_a_factory_player_plays_or_is_refused_in_one_line_whatever_it_does(
        name: Any, answer: Any, raises: BaseException | None, in_reset: bool, tmp_path_factory: Any) -> None:
    import sys

    from popejoan_env.players import make_player
    from popejoan_env.tournament import run_duplicate

    class Own:
        def reset(self, seed: Any = None) -> None:
            if raises is not None and in_reset:
                raise raises

        def act(self, view: Any) -> Any:
            if raises is not None and not in_reset:
                raise raises
            return min(view.legal) if answer == "legal" else answer

    player = Own()
    player.name = name  # type: ignore[attr-defined]
    module = types.ModuleType("fuzz_own_agent")
    module.make = lambda seed=None: player  # type: ignore[attr-defined]
    sys.modules["fuzz_own_agent"] = module
    try:
        result = run_duplicate(["fuzz_own_agent:make", "random"], deals=1, seed=1, seats=3)
    except PopeJoanError as err:
        assert len(str(err).splitlines()) == 1 and len(str(err)) < 600, str(err)[:300]
        return
    finally:
        del sys.modules["fuzz_own_agent"]
    assert answer == "legal" and raises is None and result is not None


# ===================================================================== Ray addresses that are not Ray
@fuzz(8)
@given(reply=st.binary(max_size=64) | st.builds(lambda tail: bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]) + tail,
                                                 st.binary(max_size=64)),
       close=st.booleans(), client=st.booleans())
def test_an_address_answering_anything_but_ray_is_refused_within_the_probe_time(
        reply: bytes, close: bool, client: bool) -> None:
    import time

    from popejoan_env import cluster

    from unittest import mock

    # A shorter probe time, so the examples that wait for it run quickly; the time bound is the same rule.
    with responder(reply, close) as port, mock.patch.object(cluster, "PROBE_SECONDS", 0.5):
        start = time.perf_counter()
        with pytest.raises(cluster.ClusterError, match="is not Ray") as refused:
            cluster._probe(f"{'ray://' if client else ''}127.0.0.1:{port}")
        assert time.perf_counter() - start < 2 * cluster.PROBE_SECONDS + 2
        assert len(str(refused.value).splitlines()) == 1


# ===================================================================== command lines
@pytest.fixture(scope="module")
def cli_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Files the argument strategies name: good, corrupt, missing, a directory, a model."""
    folder = tmp_path_factory.mktemp("cli")
    (folder / "folder").mkdir()
    good = (folder / "good.jsonl.gz")
    good.write_bytes(gzip.compress(GOLDEN.read_bytes(), mtime=0))
    bad = folder / "flipped.jsonl.gz"
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0x40
    bad.write_bytes(bytes(data))
    (folder / "junk.jsonl").write_bytes(b"\x00\xff{[\n" * 10)
    (folder / "model.zip").write_bytes(model_parts()[2])
    return {"folder": str(folder), "golden": str(GOLDEN), "good": str(good), "bad": str(bad),
            "junk": str(folder / "junk.jsonl"), "dir": str(folder / "folder"),
            "missing": str(folder / "missing.jsonl"), "model": str(folder / "model.zip")}


ints_text = st.one_of(
    st.integers(-3, 10).map(str), st.sampled_from(["x", "1.5", "1e3", "", " 4", "0x10", "-0", "9" * 120, "4_0",
                                                   "1" + "0" * 5000, "٣"]),
)


def _count(text: str) -> int:
    """The number a --deals text asks for (0 when it is not one): keeps the runs short."""
    try:
        return int(text) if len(text) < 20 else 10**20
    except ValueError:
        return 0


def _rules_options(draw: st.DrawFn) -> list[str]:
    options = draw(st.lists(st.sampled_from([
        "lead=any", "deal=all_round", "deal=fixed_stock", "pope_turnup=ends_deal", "pair_split=halves",
        "ace_high=true", "allow_credit=false", "start_counters=3", "start_counters=100001", "dressing={\"pope\": 9}",
        "dressing=" + "[" * 5000, "dressing=" + "[" * 20 + "]" * 20, "start_counters=1" + "0" * 5000, "colour=red",
        "lead", "=3", "pope_excused=0",
    ]) | st.composite(lambda d: _option_text(d))(), max_size=3))
    return [x for o in options for x in ("--rules-option", o)]


@st.composite
def argv_of(draw: st.DrawFn, files: dict[str, str]) -> tuple[list[str], str]:
    """A command line (mostly well-formed, often with bad values) and the text on stdin."""
    command = draw(st.sampled_from(["simulate", "verify", "play"] * 3 + ["other"]))
    if command == "other":
        command = draw(st.text(max_size=6))
    paths = st.sampled_from([files["golden"], files["good"], files["bad"], files["junk"], files["dir"],
                             files["missing"], "", "-"])
    argv = [command]
    stdin = ""
    if command == "simulate":
        out = draw(st.sampled_from(["out.jsonl", "out.jsonl.gz", "-", os.devnull, files["dir"],
                                    os.path.join(files["missing"], "x.jsonl"), "", "a\0b"]))
        argv += ["--deals", "2", "--out", out, "--quiet"]
        for _ in range(draw(st.integers(0, 4))):
            flag = draw(st.sampled_from(["--players", "--deals", "--session-length", "--seed", "--preset", "--bogus"]))
            value = draw(st.sampled_from(["modern", "victorian", "edwardian", ""])) if flag == "--preset" else (
                draw(ints_text.filter(lambda t: not (flag == "--deals" and _count(t) > 5))))
            argv += [flag, value]
        argv += _rules_options(draw)
    elif command == "verify":
        argv += draw(st.lists(paths, min_size=0, max_size=3))
        argv += draw(st.lists(st.sampled_from(["--keep-going", "--quiet", "--bogus", "-h"]), max_size=2))
    elif command == "play":
        argv += ["--deals", "1"]
        for _ in range(draw(st.integers(0, 4))):
            flag = draw(st.sampled_from(["--players", "--deals", "--seat", "--seed", "--opponents", "--preset"]))
            if flag == "--opponents":
                value = draw(st.sampled_from(["random", "lowest", "stops_first", "pool_hunter", "pimc:samples=2",
                                              "junk", "x.zip", files["model"], files["junk"], "./random",
                                              "pimc:samples=x", "random:foo=1", ""]))
            elif flag == "--preset":
                value = draw(st.sampled_from(["modern", "victorian", "edwardian"]))
            else:
                value = draw(ints_text.filter(lambda t: not (flag == "--deals" and _count(t) > 2)))
            argv += [flag, value]
        argv += _rules_options(draw)
        stdin = draw(st.sampled_from(["", "AS\n", "zz\n9D\n", "\n" * 5]))
    else:
        argv += draw(st.lists(st.text(max_size=6), max_size=3))
    return argv, stdin


@fuzz(120)
@given(data=st.data())
def test_command_line_exits_0_1_or_2_with_one_line(
    cli_files: dict[str, str], data: st.DataObject, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv, stdin = data.draw(argv_of(cli_files))
    monkeypatch.chdir(cli_files["folder"])
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse: --help (0) or a usage error (2)
        status = exit_.code
    out, err = capsys.readouterr()
    assert status in (0, 1, 2), (argv, status, err)
    assert "Traceback" not in err, (argv, err)
    if status == 2:
        assert len(err.strip().splitlines()) == 1, (argv, err)
    if status == 1:
        assert argv[0] == "verify" and err.strip(), (argv, err)


QUICK_CHOICES = {"run_name": ["ppo_modern_4p", "quick", "mine"], "imitate_deals": [60_000, 2_000, 0, 7],
                 "rollout_deals": [25_000, 500, 1, 5], "eval_deals": [200, 50, 2], "final_eval_deals": [300, 100, 0],
                 "final_eval_opponents": ["random,lowest,stops_first,pool_hunter,pimc", "random,stops_first,pimc",
                                          "lowest"]}
"""For each field ``--quick`` sets: its default, its quick value, and others."""


@fuzz(40)
@given(chosen=st.dictionaries(st.sampled_from(sorted(QUICK_CHOICES)), st.integers(0, 3), max_size=6),
       quick=st.booleans(), quick_first=st.booleans())
def test_quick_keeps_every_flag_given_and_sets_the_others(chosen: dict[str, int], quick: bool,
                                                         quick_first: bool) -> None:
    pytest.importorskip("sb3_contrib", reason="pip install -e '.[train]'")
    from popejoan_env.training import ppo

    given = {field: QUICK_CHOICES[field][k % len(QUICK_CHOICES[field])] for field, k in chosen.items()}
    flags = [word for field, value in given.items() for word in ("--" + field.replace("_", "-"), str(value))]
    flags = (["--quick"] + flags if quick_first else flags + ["--quick"]) if quick else flags
    args = ppo.apply_quick(*ppo.parse_given(ppo.Args, flags, ""))
    defaults = ppo.Args()
    for field in QUICK_CHOICES:
        expected = given[field] if field in given else ppo.QUICK[field] if quick else getattr(defaults, field)
        assert getattr(args, field) == expected, (field, flags)


SPEC_POOL = ["random", "lowest", "stops_first", "pimc:samples=8", "pimc:samples=8,rollout=greedy", "self"]


@fuzz(60)
@given(picks=st.lists(st.integers(0, len(SPEC_POOL) + 1), min_size=1, max_size=6), spaces=st.booleans())
def test_a_comma_list_of_specs_splits_into_them_or_names_a_path_with_a_comma(
        tmp_path_factory: pytest.TempPathFactory, picks: list[int], spaces: bool) -> None:
    from popejoan_env.players.base import UnknownPlayerError
    from popejoan_env.players.lists import split_specs

    folder = tmp_path_factory.getbasetemp() / "specs"
    plain, comma = folder / "plain" / "model.zip", folder / "x,y" / "model.zip"
    for path in (plain, comma):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    specs = [SPEC_POOL[k] if k < len(SPEC_POOL) else str(plain if k == len(SPEC_POOL) else comma) for k in picks]
    text = (", " if spaces else ",").join(specs)
    if str(comma) in specs:
        with pytest.raises(UnknownPlayerError, match=f"the model path {re.escape(repr(str(comma)))} holds a comma"):
            split_specs(text, "--players")
    else:
        assert split_specs(text, "--players") == specs


@fuzz(40)
@given(gz=st.booleans(), name_gz=st.booleans(), lines=st.lists(st.integers(0, len(GOLDEN_LINES) - 1), max_size=3))
def test_a_records_file_reads_when_its_name_says_gzip_as_its_bytes_do_or_names_the_mismatch(
        tmp_path_factory: pytest.TempPathFactory, gz: bool, name_gz: bool, lines: list[int]) -> None:
    text = "".join(GOLDEN_LINES[i] + "\n" for i in lines).encode()
    path = tmp_path_factory.getbasetemp() / ("fuzz_names.jsonl" + (".gz" if name_gz else ""))
    path.write_bytes(gzip.compress(text) if gz else text)
    if gz == name_gz or (name_gz and not text):
        assert [r for _, r in read_records(path)] == [json.loads(GOLDEN_LINES[i]) for i in lines]
    else:
        with pytest.raises(RecordError, match="is gzip-compressed" if gz else "is not gzip-compressed"):
            list(read_records(path))


# ===================================================================== environments: snapshots
_CACHES = {"_prev_obs", "_prev_info"}
"""Wrapper attributes that only cache what ``observe`` recomputes: not part of the state."""


def fingerprint(obj: Any) -> dict[str, Any]:
    """Everything reachable from ``obj`` as {path: value}: attributes, items, arrays, generators' states, aliasing.

    ``fingerprint(env) == fingerprint(env)`` holds while nothing changes; a change shows as the paths that differ
    (``_differences``).
    """
    flat: dict[str, Any] = {}
    seen: dict[int, str] = {}
    keep: list[Any] = []  # every visited object stays alive, so no id is reused during the walk
    stack: list[tuple[str, Any]] = [("env", obj)]
    while stack:
        path, x = stack.pop()
        if x is None or isinstance(x, (bool, int, str, bytes)):
            flat[path] = (type(x).__name__, x)
            continue
        if isinstance(x, float):
            flat[path] = ("float", repr(x))
            continue
        if isinstance(x, (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType)):
            flat[path] = ("code", getattr(x, "__qualname__", repr(x)))
            continue
        if id(x) in seen:
            flat[path] = ("same object as", seen[id(x)])
            continue
        seen[id(x)] = path
        keep.append(x)
        if isinstance(x, np.ndarray):
            flat[path] = ("ndarray", x.dtype.str, x.shape, hashlib.blake2b(x.tobytes()).hexdigest())
        elif isinstance(x, np.generic):
            flat[path] = ("np", x.dtype.str, x.tobytes())
        elif isinstance(x, memoryview):
            flat[path] = ("memoryview", hashlib.blake2b(x.tobytes()).hexdigest())
        elif isinstance(x, np.random.Generator):
            stack.append((f"{path}.state", x.bit_generator.state))
        elif isinstance(x, np.random.BitGenerator):
            stack.append((f"{path}.state", x.state))
        elif isinstance(x, types.MethodType):
            flat[path] = ("method", x.__func__.__qualname__)
            stack.append((f"{path}.__self__", x.__self__))
        elif isinstance(x, dict):
            flat[path] = ("dict", len(x))
            stack.extend((f"{path}[{k!r}]", v) for k, v in x.items() if k not in _CACHES)
        elif isinstance(x, (list, tuple)):
            flat[path] = (type(x).__name__, len(x))
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(x))
        elif isinstance(x, (set, frozenset)):
            flat[path] = ("set", sorted(map(repr, x)))
        else:
            fields: dict[str, Any] = {}
            if hasattr(x, "__dict__"):
                fields.update(vars(x))
            for cls in type(x).__mro__:
                for slot in getattr(cls, "__slots__", ()):
                    if isinstance(slot, str) and hasattr(x, slot):
                        fields[slot] = getattr(x, slot)
            flat[path] = ("object", type(x).__qualname__) if fields else ("object", type(x).__qualname__, repr(x))
            stack.extend((f"{path}.{k}", v) for k, v in fields.items() if k not in _CACHES)
    return flat


def _differences(before: dict[str, Any], after: dict[str, Any], limit: int = 6) -> str:
    """The first paths whose values differ, with both values (for the failure message)."""
    keys = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    shown = [f"{k}: {str(before.get(k, '<absent>'))[:80]} -> {str(after.get(k, '<absent>'))[:80]}"
             for k in keys[:limit]]
    return f"{len(keys)} differences: " + "; ".join(shown)


def assert_unchanged(env: Any, before: dict[str, Any], what: str) -> None:
    """Everything reachable from ``env`` is as in ``before`` (a ``fingerprint``)."""
    after = fingerprint(env)
    if after != before:  # no bare assert: pytest would try to print both fingerprints whole
        raise AssertionError(f"{what} was refused but changed the env: {_differences(before, after)}")


def assert_refused_unchanged(env: Any, call: Callable[[], Any], what: str) -> None:
    """``call()`` raises a PopeJoanError and leaves everything reachable from ``env`` as it was."""
    before = fingerprint(env)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call()
        except PopeJoanError:
            pass
        else:
            raise AssertionError(f"{what} was accepted")
    assert_unchanged(env, before, what)


def check_aec_spaces(env: Any) -> None:
    """Every live agent's observation lies in its observation space."""
    for agent in env.agents:
        obs = env.observe(agent)
        assert env.observation_space(agent).contains(obs), (agent, obs)


# ===================================================================== environments: strategies
env_configs = st.fixed_dictionaries({
    "players": st.integers(MIN_PLAYERS, MAX_PLAYERS),
    "rules": st.sampled_from(["modern", "victorian", {"preset": "modern", "lead": "any", "ace_high": True},
                              {"preset": "modern", "allow_credit": False, "pair_split": "halves"}]),
    "auto_forced": st.booleans(),
    "deals": st.integers(1, 3),
})
bad_actions = st.one_of(
    st.sampled_from([True, False, np.True_, None, 3.7, 3.0, float("nan"), float("inf"), -float("inf"), "5", "9D",
                     b"5", [1], (2,), {"a": 1}, np.float64(1.0), np.array([1, 2]), 52, 53, -1, 20, 2**70, -(2**70),
                     10**4000, np.int64(-1), np.uint8(200), complex(1, 0)]),
    st.integers(), st.floats(), st.text(max_size=3),
)
"""Actions that are never a card id of the pack (20, the 8D, is never legal either)."""


@st.composite
def action_plans(draw: st.DrawFn) -> list[Any]:
    """A sequence of proposals: ("legal", k) picks the k-th legal card; anything else is played as is."""
    legal = st.tuples(st.just("legal"), st.integers(0, 3), st.sampled_from([int, np.int64, np.int32]))
    # A run of legal cards first reaches the middle and the end of episodes; then legal and bad ones mixed.
    warmup = [("legal", 0, int)] * draw(st.integers(0, 80))
    return warmup + draw(st.lists(st.one_of(legal, legal, legal, bad_actions, st.integers(0, 51)),
                                  min_size=5, max_size=60))


def _legal_of(mask: np.ndarray) -> list[int]:
    return np.flatnonzero(mask).tolist()


def _resolve(proposal: Any, legal: list[int]) -> Any:
    if isinstance(proposal, tuple) and len(proposal) == 3 and proposal[0] == "legal":
        _, k, kind = proposal
        return kind(legal[k % len(legal)]) if legal else None
    return proposal


def _is_card_id(action: Any) -> bool:
    return (type(action) is int or isinstance(action, np.integer)) and not isinstance(action, (bool, np.bool_))


# ===================================================================== raw_env
@fuzz(40)
@given(config=env_configs, seed=st.integers(0, 2**32), plan=action_plans())
def test_raw_env_step_refuses_bad_actions_without_a_trace(config: dict[str, Any], seed: int, plan: list[Any]) -> None:
    env = raw_env(**config)
    env.reset(seed=seed)
    check_aec_spaces(env)
    for proposal in plan:
        if not env.agents:
            assert_refused_unchanged(env, lambda: env.step(None), "a step after the episode")
            break
        agent = env.agent_selection
        done = env.terminations[agent] or env.truncations[agent]
        legal = [] if done else _legal_of(env.observe(agent)["action_mask"])
        action = _resolve(proposal, legal)
        if (done and action is None) or (not done and _is_card_id(action) and int(action) in legal):
            env.step(action)
            check_aec_spaces(env)
        else:
            assert_refused_unchanged(env, lambda: env.step(action), f"step({action!r}) of {agent}")


@st.composite
def deal_options(draw: st.DrawFn, players: int, rules: Any) -> dict[str, Any]:
    """Valid reset options for a table: an explicit deal (notation, ids or numpy ints), a board, balances."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32)))
    deal = Deal.new(rules, players, draw(st.integers(0, players - 1)), rng)
    form = draw(st.sampled_from(["text", "id", "numpy"]))
    from popejoan_env.cards import CARD_NAMES, iter_cards

    def card(c: int) -> Any:
        return CARD_NAMES[c] if form == "text" else c if form == "id" else np.int64(c)

    options: dict[str, Any] = {}
    if draw(st.booleans()):
        options["deal"] = {"hands": [[card(c) for c in iter_cards(h)] for h in deal.initial_hands],
                           "dead": [card(c) for c in deal.dead], "dealer": deal.dealer}
    if draw(st.booleans()):
        counts = draw(st.lists(st.integers(0, 40), min_size=8, max_size=8))
        wrap = draw(st.sampled_from([int, np.int64]))
        options["board"] = dict(zip(COMPARTMENTS, map(wrap, counts))) if draw(st.booleans()) else [
            wrap(n) for n in counts]
    if draw(st.booleans()):
        wrap = draw(st.sampled_from([int, np.int64, np.int32]))
        options["balances"] = [wrap(b) for b in draw(st.lists(st.integers(-500, 500), min_size=players,
                                                               max_size=players))]
    return options


@fuzz(40)
@given(config=env_configs, data=st.data())
def test_raw_env_reset_accepts_every_valid_option(config: dict[str, Any], data: st.DataObject) -> None:
    env = raw_env(**config)
    options = data.draw(deal_options(config["players"], env.rules))
    if not env.rules.allow_credit and "balances" in options:
        options["balances"] = [abs(int(b)) + 20 for b in options["balances"]]  # every dealer can pay
    env.reset(seed=data.draw(st.none() | st.integers(0, 2**64)), options=options)
    assert env.agents
    check_aec_spaces(env)


def _bad_options(draw: st.DrawFn, players: int, rules: Any) -> Any:
    options = draw(deal_options(players, rules))
    kind = draw(st.sampled_from(["mutate", "mutate", "balances", "board", "junk"]))
    if kind == "junk":
        return draw(json_values)
    if kind == "balances":
        options["balances"] = draw(st.lists(st.sampled_from([-(10**9), 10**9, 2**20, -(2**20), 2**19 + 1, 0, 48,
                                                              1.5, True, "3", None, np.float64(2.0)]),
                                            min_size=players - 1, max_size=players + 1))
        return options
    if kind == "board":
        options["board"] = draw(st.dictionaries(st.sampled_from(list(COMPARTMENTS) + ["pot"]),
                                                st.sampled_from([-1, 0, 10**9, 2**19 + 1, 1.0, True, "2", None]),
                                                max_size=8) | json_values)
        return options
    return draw(mutated(options, extreme=False))


@fuzz(60)
@given(config=env_configs, seed=st.integers(0, 2**32), steps=st.integers(0, 8), data=st.data())
def test_raw_env_reset_refuses_bad_options_without_a_trace(
    config: dict[str, Any], seed: int, steps: int, data: st.DataObject,
) -> None:
    env = raw_env(**config)
    env.reset(seed=seed)
    for _ in range(steps):  # refused in the middle of an episode, too
        if not env.agents or env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
            break
        env.step(_legal_of(env.observe(env.agent_selection)["action_mask"])[0])
    options = data.draw(st.composite(lambda d: _bad_options(d, config["players"], env.rules))())
    reset_seed = data.draw(st.none() | st.integers(0, 2**32))
    before = fingerprint(env)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env.reset(seed=reset_seed, options=options)
    except PopeJoanError:
        assert_unchanged(env, before, "reset(options=...)")
        return
    assert env.agents
    check_aec_spaces(env)


def _place(options: dict[str, Any], where: str, value: Any) -> dict[str, Any]:
    """Valid options with ``value`` put at ``where``."""
    if where == "options":
        return value
    if where in ("deal", "board", "balances"):
        return {**options, where: value}
    deal = options.setdefault("deal", {"hands": [["AS"]] * 3, "dead": ["KS"]})
    if where == "hands":
        deal["hands"] = value
    elif where == "hand":
        deal["hands"] = [value] + list(deal["hands"][1:])
    elif where == "card":
        deal["hands"] = [[value] + list(deal["hands"][0][1:])] + list(deal["hands"][1:])
    elif where == "dead":
        deal["dead"] = [value]
    elif where == "dealer":
        deal["dealer"] = value
    elif where == "board_value":
        options["board"] = {"pope": value}
    else:  # a balance
        options["balances"] = [value] * 8
    return options


@fuzz(30)
@given(config=env_configs, data=st.data(),
       where=st.sampled_from(["options", "deal", "hands", "hand", "card", "dead", "dealer", "board", "board_value",
                              "balances", "balance"]),
       value=st.sampled_from([10**5000, -(10**5000)]) | st.builds(deep, st.just(5000)))
def test_raw_env_reset_refuses_extreme_options_without_a_trace(
    config: dict[str, Any], data: st.DataObject, where: str, value: Any,
) -> None:
    env = raw_env(**config)
    env.reset(seed=1)
    options = _place(data.draw(deal_options(config["players"], env.rules)), where, value)
    assert_refused_unchanged(env, lambda: env.reset(options=options), f"reset(options=<{where}: extreme>)")


bad_seeds = st.sampled_from([-1, -(2**70), 1.5, float("nan"), "3", b"3", True, False, [1, -2], {"a": 1},
                             np.float64(2.0), object()])


@fuzz(20)
@given(config=env_configs, seed=bad_seeds)
def test_raw_env_reset_refuses_bad_seeds_without_a_trace(config: dict[str, Any], seed: Any) -> None:
    env = raw_env(**config)
    env.reset(seed=7)
    assert_refused_unchanged(env, lambda: env.reset(seed=seed), f"reset(seed={seed!r})")


# ===================================================================== env(): the wrapped AEC env
@fuzz(30)
@given(config=env_configs, seed=st.integers(0, 2**32), plan=action_plans())
def test_wrapped_env_step_in_the_action_space(config: dict[str, Any], seed: int, plan: list[Any]) -> None:
    """Card ids 0..51 are in the action space: an illegal one ends the episode (TerminateIllegalWrapper)."""
    env = aec_env(**config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.reset(seed=seed)
        check_aec_spaces(env)
        for proposal in plan:
            if not env.agents:
                break
            agent = env.agent_selection
            done = env.terminations[agent] or env.truncations[agent]
            legal = [] if done else _legal_of(env.observe(agent)["action_mask"])
            action = _resolve(proposal, legal)
            if done:
                action = None
            elif not (_is_card_id(action) and 0 <= int(action) < 52):
                continue
            env.step(action)
            check_aec_spaces(env)


@fuzz(30)
@given(config=env_configs, seed=st.integers(0, 2**32), plan=action_plans())
def test_wrapped_env_step_refuses_actions_outside_the_space(
    config: dict[str, Any], seed: int, plan: list[Any],
) -> None:
    env = aec_env(**config)
    env.reset(seed=seed)
    for proposal in plan:
        if not env.agents:
            break
        agent = env.agent_selection
        done = env.terminations[agent] or env.truncations[agent]
        legal = [] if done else _legal_of(env.observe(agent)["action_mask"])
        action = _resolve(proposal, legal)
        if (done and action is None) or (not done and _is_card_id(action) and int(action) in legal):
            env.step(action)
        elif done or not (_is_card_id(action) and 0 <= int(action) < 52):
            assert_refused_unchanged(env, lambda: env.step(action), f"step({action!r}) of {agent}")


@fuzz(40)
@given(config=env_configs, seed=st.integers(0, 2**32), data=st.data())
def test_wrapped_env_reset_refuses_bad_options_without_a_trace(
    config: dict[str, Any], seed: int, data: st.DataObject,
) -> None:
    env = aec_env(**config)
    env.reset(seed=seed)
    options = data.draw(st.composite(lambda d: _bad_options(d, config["players"], Rules.from_dict(
        config["rules"]) if isinstance(config["rules"], dict) else Rules.preset(config["rules"])))())
    before = fingerprint(env)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env.reset(seed=data.draw(st.none() | st.integers(0, 2**32)), options=options)
    except PopeJoanError:
        assert_unchanged(env, before, "reset(options=...)")
        return
    check_aec_spaces(env)


# ===================================================================== the Gym view
gym_configs = st.fixed_dictionaries({
    "players": st.sampled_from([3, 4, 8, (3, 5), "4,6"]),
    "rules": st.sampled_from(["modern", "victorian", {"preset": "modern", "lead": "any"}]),
    "opponents": st.sampled_from(["random", "lowest", "stops_first:1,random:1"]),
    "deals": st.integers(1, 2),
    "lone_leads": st.booleans(),
    "balance_range": st.sampled_from([None, (-24, 72)]),
})


@fuzz(40)
@given(config=gym_configs, seed=st.integers(0, 2**32), plan=action_plans())
def test_gym_env_step_refuses_bad_actions_without_a_trace(config: dict[str, Any], seed: int, plan: list[Any]) -> None:
    env = PopeJoanGymEnv(**config, illegal_action="raise")  # illegal cards refused; "terminate": test_gym_env.py
    obs, _ = env.reset(seed=seed)
    assert env.observation_space.contains(obs)
    for proposal in plan:
        legal = _legal_of(env.action_masks())
        if not legal:
            assert_refused_unchanged(env, lambda: env.step(0), "a step after the episode")
            obs, _ = env.reset()
            assert env.observation_space.contains(obs)
            continue
        action = _resolve(proposal, legal)
        if _is_card_id(action) and int(action) in legal:
            obs, reward, terminated, truncated, info = env.step(action)
            assert env.observation_space.contains(obs)
            assert np.isfinite(reward)
        else:
            assert_refused_unchanged(env, lambda: env.step(action), f"step({action!r})")


@fuzz(30)
@given(config=gym_configs, seed=st.integers(0, 2**32), options=json_values,
       reset_seed=st.none() | st.integers(0, 2**32))
def test_gym_env_reset_options_accepted_or_refused_without_a_trace(
    config: dict[str, Any], seed: int, options: Any, reset_seed: int | None,
) -> None:
    env = PopeJoanGymEnv(**config)
    env.reset(seed=seed)
    before = fingerprint(env)
    try:
        obs, _ = env.reset(seed=reset_seed, options=options)
    except PopeJoanError:
        assert_unchanged(env, before, "reset(options=...)")
        return
    assert env.observation_space.contains(obs)


@fuzz(20)
@given(config=gym_configs, seed=bad_seeds)
def test_gym_env_reset_refuses_bad_seeds_without_a_trace(config: dict[str, Any], seed: Any) -> None:
    env = PopeJoanGymEnv(**config)
    env.reset(seed=7)
    assert_refused_unchanged(env, lambda: env.reset(seed=seed), f"reset(seed={seed!r})")


# ===================================================================== before reset
def _fresh(kind: str) -> Any:
    return {"raw": lambda: raw_env(players=4), "env": lambda: aec_env(players=4),
            "gym": lambda: PopeJoanGymEnv(players=4, opponents="random")}[kind]()


@pytest.mark.parametrize("kind", ["raw", "gym", "env"])
@fuzz(15)
@given(action=bad_actions | st.integers(0, 51))
def test_step_before_reset_is_refused_without_a_trace(kind: str, action: Any) -> None:
    env = _fresh(kind)
    assert_refused_unchanged(env, lambda: env.step(action), f"step({action!r}) before reset()")


# ===================================================================== the web app's per-client tables
@settings(max_examples=200, deadline=None)
@given(capacity=st.integers(1, 12), per_client=st.integers(1, 12),
       adds=st.lists(st.sampled_from("abcde"), max_size=80))
def test_a_client_table_never_lets_one_client_push_out_a_smaller_one(capacity: int, per_client: int,
                                                                     adds: list[str]) -> None:
    from popejoan_env.web.clients import ClientTable

    table: ClientTable[int] = ClientTable(capacity, per_client, idle_seconds=1e9, clock=lambda: 0.0)
    owners: dict[str, str] = {}
    for k, client in enumerate(adds):
        before = set(table.ids())
        counts = {c: table.held_by(c) for c in "abcde"}
        table.add(str(k), k, client)
        owners[str(k)] = client
        gone = before - set(table.ids())
        assert len(gone) <= 1 and len(table) <= capacity
        for entry in gone:
            victim = owners[entry]
            # Evicted: the newcomer's own entry, or one of a client holding strictly more than the newcomer.
            assert victim == client or counts[victim] > counts[client], (victim, client, counts)
        assert all(table.held_by(c) <= min(per_client, capacity) for c in "abcde")
