"""Playing an evaluation: the agent against each opponent of the panel, block by block of the frozen deals.

Each block of ``dealset.BLOCK`` deals is one duplicate tournament of two entrants in field lineups
(``popejoan_env.tournament.run_duplicate`` with the block's seed): the agent alone against ``seats-1``
copies of the opponent, and the opponent alone against copies of the agent, each in every rotation of
every deal.  What a block gives (``Block``: per deal, the margin and both sides' counters and go-outs) is
written to the state file atomically as soon as it is played, so an interrupted evaluation resumes at
the first block it has not finished; a state file of another evaluation (another agent, table, set of
deals or opponents), or one whose blocks do not fit this evaluation's plan (``resume``), is refused rather
than mixed in.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import popejoan_env.cluster as cluster
from popejoan_env.errors import PopeJoanError
from popejoan_env.evaluate import dealset, panel
from popejoan_env.evaluate.resume import SERIES, STATE_FORMAT, TIMING, pair_key, read_state
from popejoan_env.files import file_sha256, held_versions, write_atomic
from popejoan_env.players import Player, make_player, model_files
from popejoan_env.rules import Rules
from popejoan_env.tournament import NET, WENT_OUT, run_duplicate


@dataclasses.dataclass(frozen=True)
class Settings:
    """What identifies an evaluation: a state file resumes only the evaluation with the same settings."""

    agent: str
    agent_sha256: str | None
    preset: str
    seats: int
    deals: int
    opponents: tuple[str, ...]
    deal_set: str = dealset.VERSION
    deal_set_sha256: str = dealset.SHA256
    panel: str = panel.VERSION
    aivat: bool = False
    """Whether the agent's games record the AIVAT corrections (``aivat.play_block``)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly: ``aivat`` is the value function's name and version when it is on (corrections made with
        another value function belong to another evaluation), left out when it is off (so a state file written
        before it resumes)."""
        out = dataclasses.asdict(self)
        out["opponents"] = list(self.opponents)
        if self.aivat:
            from popejoan_env.evaluate.aivat import VALUE

            out["aivat"] = VALUE
        else:
            del out["aivat"]
        return out


def settings(agent: str, preset: str, seats: int, deals: int, opponents: list[str], aivat: bool = False) -> Settings:
    """The settings of an evaluation, checked: a deal count that is whole blocks of the set, a known preset."""
    Rules.preset(preset)
    if not isinstance(deals, int) or not dealset.BLOCK <= deals <= dealset.DEALS or deals % dealset.BLOCK:
        raise PopeJoanError(f"an evaluation plays a multiple of {dealset.BLOCK} deals of {dealset.VERSION}, from "
                            f"{dealset.BLOCK} to {dealset.DEALS:,}; got {deals!r}")
    return Settings(agent, agent_sha256(agent), preset, seats, deals, tuple(opponents), aivat=aivat)


def agent_sha256(agent: str) -> str | None:
    """The SHA-256 of the files the agent's spec plays from (``players.model_files``: a model file, or one named in
    the spec, as ``pimc_net:model=FILE`` or ``exploit:FILE``), so a state file resumes only with the same files:
    one file's own SHA-256, several files' the SHA-256 of theirs in order, None for a spec that names no file."""
    files = model_files(agent)
    if len(files) <= 1:
        return file_sha256(files[0]) if files else None
    return hashlib.sha256("".join(file_sha256(f) + "\n" for f in files).encode()).hexdigest()


class State:
    """The blocks played so far, per opponent, kept in a JSON file written atomically after every block."""

    def __init__(self, path: str | None, settings: Settings, references: tuple[tuple[str, str], ...] = ()) -> None:
        self.path = path
        self.settings = settings
        self.references = references
        """Reference pairs also played on the deals (``variance.REFERENCE_PAIRS``), kept as ``pair_key(a, b)``."""
        keys = [*settings.opponents, *(pair_key(a, b) for a, b in references)]
        self.blocks: dict[str, dict[int, dict[str, Any]]] = {key: {} for key in keys}
        self.kept: dict[str, Any] = {}
        """The versions the resumed state file names: its blocks were played with them, and it keeps naming them."""
        if path is not None and os.path.exists(path):
            self._resume(path)

    def _resume(self, path: str) -> None:
        """Load the blocks a state file holds, each checked against this evaluation's plan (``resume``)."""
        self.blocks, self.kept = read_state(path, self.settings, self.blocks)

    def done(self, opponent: str, block: int) -> bool:
        """Whether this block against this opponent has been played."""
        return block in self.blocks[opponent]

    def add(self, opponent: str, block: int, data: dict[str, Any]) -> None:
        """Keep a played block, and write the state file (atomically) when there is one."""
        self.blocks[opponent][block] = data
        if self.path is not None:
            # the report names one version of each: a state of others is not resumed, and a resumed one still
            # names those its blocks were played with (torch's, though no network is loaded in this process)
            body = {"format": STATE_FORMAT, "settings": self.settings.to_dict(),
                    "blocks": {n: {str(b): d for b, d in sorted(bl.items())} for n, bl in self.blocks.items()},
                    **held_versions(self.kept)}
            write_atomic(self.path, json.dumps(body) + "\n")

    def series(self, opponent: str) -> dict[str, np.ndarray]:
        """Per deal against ``opponent``, each of ``SERIES`` (all blocks, in deal order: the plan's deals, no more
        and no fewer), and ``aivat`` (the margin's AIVAT correction) when every block has it."""
        blocks = [self.blocks[opponent][b] for b in self._planned(opponent)]
        keys = [*SERIES, "aivat"] if blocks and all("aivat" in blk for blk in blocks) else SERIES
        return {k: np.array([x for blk in blocks for x in blk[k]], dtype=np.float64) for k in keys}

    def timing(self, opponent: str) -> dict[str, float]:
        """Decisions and thinking seconds of the agent and the opponent, and wall seconds, summed over blocks."""
        blocks = [self.blocks[opponent][b] for b in self._planned(opponent)]
        return {k: float(sum(blk[k] for blk in blocks)) for k in TIMING}

    def _planned(self, opponent: str) -> range:
        """The blocks of the plan, refused unless every one of them, and no other, has been played."""
        planned = range(self.settings.deals // dealset.BLOCK)
        if sorted(self.blocks[opponent]) != list(planned):
            raise PopeJoanError(f"the evaluation against {opponent} holds blocks {sorted(self.blocks[opponent])}, "
                                f"not the {len(planned)} blocks 0 to {len(planned) - 1} of its plan")
        return planned


def play_block(agent: Player, opponent: Player, block: int, rules: Rules, seats: int, workers: int,
               backend: str, address: str | None) -> dict[str, Any]:
    """One block of deals in duplicate, agent against one opponent: what ``State`` keeps of it."""
    result = run_duplicate([agent, opponent], deals=dealset.BLOCK, seed=dealset.block_seed(block), rules=rules,
                           seats=seats, lineups="field", workers=workers, backend=backend, address=address)
    return {
        "margin": result.pair[0, 1].tolist(),
        "agent_net": result.per_deal[0, :, NET].tolist(),
        "opponent_net": result.per_deal[1, :, NET].tolist(),
        "agent_out": result.per_deal[0, :, WENT_OUT].tolist(),
        "opponent_out": result.per_deal[1, :, WENT_OUT].tolist(),
        "agent_decisions": result.decisions[0], "agent_seconds": result.think_seconds[0],
        "opponent_decisions": result.decisions[1], "opponent_seconds": result.think_seconds[1],
        "wall_seconds": result.wall_seconds,
    }


@contextlib.contextmanager
def _ray_once(backend: str, address: str | None) -> Iterator[None]:
    """With the ray backend, one Ray for the whole evaluation (each block's tournament uses it as it is)."""
    if backend != "ray":
        yield
        return
    with cluster.connected(address):
        yield


def play(settings: Settings, state: State, seed: int = 0, workers: int = 1, backend: str = "local",
         address: str | None = None, on_block: Callable[[str, int], None] | None = None) -> State:
    """Play every block the state lacks (the agent against each opponent, then the state's reference pairs),
    calling ``on_block`` after each."""
    orders = dealset.load()
    dealset.check_dealing(orders, settings.deals)
    rules = Rules.preset(settings.preset)
    agent = make_player(settings.agent, seed=seed)
    blocks = settings.deals // dealset.BLOCK
    matches: list[tuple[str, Player | str, str]] = [(name, agent, name) for name in settings.opponents]
    matches += [(pair_key(a, b), a, b) for a, b in state.references]
    mine = set(settings.opponents)  # the agent's matches: the AIVAT corrections are recorded in these
    with _ray_once(backend, address):
        for key, first, second in matches:
            todo = [b for b in range(blocks) if not state.done(key, b)]
            if not todo:
                continue
            one = make_player(first, seed=seed) if isinstance(first, str) else first
            two = make_player(second, seed=seed)
            for b in todo:
                start = time.perf_counter()
                if settings.aivat and key in mine:
                    from popejoan_env.evaluate import aivat

                    data = aivat.play_block(one, two, settings.agent, second, b, rules, settings.seats)
                else:
                    data = play_block(one, two, b, rules, settings.seats, workers, backend, address)
                data["wall_seconds"] = time.perf_counter() - start
                state.add(key, b, data)
                if on_block is not None:
                    on_block(key, b)
    return state
