"""OpenSpiel on Pope Joan: exact NashConv on the small game, NFSP training, and the duplicate tournament.

Run from the repository root (the numbers of docs/openspiel.md come from these commands)::

    python benchmarks/bench_openspiel.py exploitability --network models/ppo_small_3p/model.zip
    python benchmarks/bench_openspiel.py train-nfsp --minutes 20 --out nfsp_4p.pt
    python benchmarks/bench_openspiel.py tournament --nfsp nfsp_4p.pt --deals 100
    python benchmarks/bench_openspiel.py tree
    python benchmarks/bench_openspiel.py no-decision --deals 20000

``exploitability`` computes, for each policy of the small game (``python_pope_joan_small``: ``pack=small``,
3 players, dealer seat 0), the exact NashConv twice: with OpenSpiel's ``exploitability.nash_conv`` (Python best
responses over the game tree) and with ``popejoan_env.evaluate.exploitability.nash_conv`` (the engine alone), and the
seconds each took; a scripted player is its deterministic policy re-seeded per information state
(``exploitability.player_policy``).  The CFR-family policy is CFR+ (OpenSpiel's ``cfr.CFRPlusSolver``) run on
each turn-up's subgame (the turn-up is public before any decision, so the ten subgames are independent and the
game's NashConv is their mean).  ``train-nfsp`` trains OpenSpiel's PyTorch NFSP on ``python_pope_joan`` (one
agent per seat, the dealer at seat 0) and saves the average policies for ``openspiel_nfsp:path=...``.
``tournament`` plays ``openspiel_ismcts`` and ``openspiel_nfsp`` against ``pimc`` and ``shipped`` in a
duplicate tournament (subsets of 4 entrants at 4 seats) and prints the table with 95% intervals and ms per
decision.  ``tree`` walks the small game's OpenSpiel tree (every deal, every legal action) and counts its player
nodes, the stops of the deals without a decision and each seat's information states; ``no-decision`` counts, on
random full deals of every table size and both presets, those that give no seat a choice.  Speed is never
asserted by a test; read the times ±30% on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

import popejoan_env.envs.openspiel_game as openspiel_game  # registers the two games
import pyspiel
from popejoan_env.cli import SEED, TABLE_SIZE, Integer, Number, OneLineParser, file_name
from popejoan_env.errors import PopeJoanError
from popejoan_env.files import check_writable
from popejoan_env.evaluate import exploitability
from popejoan_env.cards import parse_card
from popejoan_env.players import make_player
from popejoan_env.players.openspiel_players import PopejoanPolicy, check_nfsp_networks, save_nfsp
from popejoan_env.rules import Rules

SMALL = Rules(pack="small")
TURNUPS = ("9D", "TD", "JD", "QD", "KD", "9S", "TS", "JS", "QS", "KS")


def openspiel_nash_conv(game: Any, policy: Any) -> tuple[float, list[float]]:
    """OpenSpiel's NashConv and per-seat improvements."""
    from open_spiel.python.algorithms import exploitability as os_exploitability

    out = os_exploitability.nash_conv(game, policy, return_only_nash_conv=False)
    return float(out.nash_conv), [float(x) for x in out.player_improvements]


def cfr_policy(iterations: int) -> tuple[Any, float]:
    """CFR+ on each turn-up's subgame, as one OpenSpiel policy of the whole small game; and the seconds taken."""
    from open_spiel.python import policy as openspiel_policy
    from open_spiel.python.algorithms import cfr

    start = time.perf_counter()
    solvers = {}
    for turnup in TURNUPS:
        solver = cfr.CFRPlusSolver(pyspiel.load_game(openspiel_game.SMALL_GAME_NAME, {"turnup": turnup}))
        for _ in range(iterations):
            solver.evaluate_and_update_policy()
        solvers[parse_card(turnup)] = solver.average_policy()

    class ByTurnup(openspiel_policy.Policy):
        """The CFR+ average policy of the state's turn-up subgame."""

        def action_probabilities(self, state: Any, player_id: int | None = None) -> dict[int, float]:
            return solvers[state.deal.turnup].action_probabilities(state, player_id)

    game = pyspiel.load_game(openspiel_game.SMALL_GAME_NAME)
    return ByTurnup(game, [0, 1, 2]), time.perf_counter() - start


def run_exploitability(args: argparse.Namespace) -> None:
    """The NashConv table of the small game."""
    game = pyspiel.load_game(openspiel_game.SMALL_GAME_NAME)
    rows = []
    entries: list[tuple[str, Any]] = [("uniform random", exploitability.uniform_policy)]
    for spec in ["lowest", "stops_first", "pool_hunter", f"pimc:samples={args.pimc_samples}"]:
        entries.append((spec, exploitability.player_policy(make_player(spec, seed=0))))
    if args.network:
        entries.append((f"network {args.network}", exploitability.player_policy(make_player(args.network, seed=0))))
    for name, policy in entries:
        start = time.perf_counter()
        own = exploitability.nash_conv(SMALL, policy)  # also fills a player's per-information-state cache
        own_s = time.perf_counter() - start
        start = time.perf_counter()
        nc, improvements = openspiel_nash_conv(game, PopejoanPolicy(game, policy))
        os_s = time.perf_counter() - start
        rows.append({"policy": name, "nash_conv": own.nash_conv, "improvements": list(own.improvements),
                     "on_policy": list(own.on_policy), "openspiel_nash_conv": nc, "own_seconds": own_s,
                     "openspiel_seconds": os_s})
        print(json.dumps(rows[-1]), flush=True)
    if args.cfr_iterations:
        policy, cfr_s = cfr_policy(args.cfr_iterations)
        start = time.perf_counter()
        nc, improvements = openspiel_nash_conv(game, policy)
        rows.append({"policy": f"CFR+ ({args.cfr_iterations} iterations per turn-up)", "nash_conv": nc,
                     "improvements": improvements, "openspiel_seconds": time.perf_counter() - start,
                     "cfr_seconds": cfr_s})
        print(json.dumps(rows[-1]), flush=True)
    print("\n| policy | NashConv | improvement per seat (dealer, eldest, third) | on-policy counters | "
          "seconds (ours / OpenSpiel) |")
    print("|---|---|---|---|---|")
    for r in rows:
        imp = ", ".join(f"{x:.3f}" for x in r["improvements"])
        onp = ", ".join(f"{x:.2f}" for x in r.get("on_policy", [])) or "—"
        own = f"{r['own_seconds']:.1f}" if "own_seconds" in r else "—"
        print(f"| {r['policy']} | {r['nash_conv']:.3f} | {imp} | {onp} | {own} / {r['openspiel_seconds']:.1f} |")


def nfsp_hidden(text: str) -> list[int]:
    """An argparse ``type``: the hidden widths of ``--hidden``, a comma list of whole numbers."""
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"a comma list of layer widths such as 256,256 is needed, got {text!r}") \
            from None


def run_train_nfsp(args: argparse.Namespace) -> None:
    """NFSP on the full game; the average policies saved for ``openspiel_nfsp``."""
    # refused before any training: networks whose checkpoint openspiel_nfsp would not read, an --out not writable
    check_nfsp_networks(args.players, args.hidden)
    check_writable([args.out])
    import torch
    from open_spiel.python import rl_environment
    from open_spiel.python.pytorch import nfsp

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)  # NFSP draws its modes and actions from numpy's global generator
    game = pyspiel.load_game(openspiel_game.GAME_NAME, {"players": args.players})
    # the deals follow --seed: Environment takes no seed= (its keywords are game settings, ignored for a game
    # object), so its chance sampler is seeded here
    env = rl_environment.Environment(game, chance_event_sampler=rl_environment.ChanceEventSampler(seed=args.seed))
    size = env.observation_spec()["info_state"][0]
    agents = [nfsp.NFSP(p, size, game.num_distinct_actions(), args.hidden, reservoir_buffer_capacity=200_000,
                        anticipatory_param=0.1, batch_size=128, rl_learning_rate=0.01, sl_learning_rate=0.01,
                        min_buffer_size_to_learn=1000, learn_every=64, optimizer_str="sgd",
                        replay_buffer_capacity=200_000, epsilon_start=0.06, epsilon_end=0.001,
                        seed=args.seed + p)
              for p in range(args.players)]
    start = time.perf_counter()
    episodes = steps = 0
    while time.perf_counter() - start < 60 * args.minutes and (not args.episodes or episodes < args.episodes):
        time_step = env.reset()
        while not time_step.last():
            player = time_step.observations["current_player"]
            time_step = env.step([agents[player].step(time_step).action])
            steps += 1
        for agent in agents:
            agent.step(time_step)
        episodes += 1
        if episodes % 1000 == 0:
            print(f"{episodes} episodes, {steps} decisions, {time.perf_counter() - start:.0f} s", flush=True)
    save_nfsp(args.out, [a._avg_network for a in agents], inputs=size, hidden=args.hidden,
              actions=game.num_distinct_actions())
    print(f"NFSP: {episodes} episodes ({steps} decisions) in {time.perf_counter() - start:.0f} s; saved {args.out}")


def run_tournament(args: argparse.Namespace) -> None:
    """``openspiel_ismcts`` and ``openspiel_nfsp`` against ``pimc`` and ``shipped``, duplicate deals."""
    from popejoan_env.tournament import run_duplicate

    entrants = [f"openspiel_ismcts:simulations={args.simulations}", "pimc", "shipped"]
    if args.nfsp:
        entrants.insert(1, f"openspiel_nfsp:path={args.nfsp}")
    start = time.perf_counter()
    result = run_duplicate(entrants, deals=args.deals, seed=args.seed, seats=4, workers=args.workers)
    print(f"{args.deals} duplicate deals, {time.perf_counter() - start:.0f} s")
    print(result.to_markdown())


def run_tree(args: argparse.Namespace) -> None:
    """The small game's OpenSpiel tree: player nodes, stops, information states per seat."""
    for params in ({}, {"deal": "all_round"}, {"preset": "victorian", "deal": "equal"}):
        game = pyspiel.load_game(openspiel_game.SMALL_GAME_NAME, params)
        nodes = stops = 0
        infosets: list[set[str]] = [set() for _ in range(game.num_players())]
        for index in range(len(game.deals)):
            state = game.new_initial_state()
            state.apply_action(index)
            stack = [state]
            while stack:
                state = stack.pop()
                if state.is_terminal():
                    continue
                seat = state.current_player()
                nodes += 1
                stops += state.stop
                infosets[seat].add(state.information_state_string(seat))
                stack.extend(state.child(a) for a in state.legal_actions())
        print(json.dumps({"params": params, "deals": len(game.deals), "player_nodes": nodes, "stops": stops,
                          "information_states_by_seat": [len(x) for x in infosets]}), flush=True)


def run_no_decision(args: argparse.Namespace) -> None:
    """How many random full deals give no seat a choice: ended by the turn-up, or every card forced or lone."""
    from popejoan_env.engine import Deal

    rng = np.random.default_rng(args.seed)
    for preset in ("modern", "victorian"):
        for players in range(3, 9):
            turnup = forced = 0
            for _ in range(args.deals):
                deal = Deal.new(preset, players, 0, rng)
                ended = deal.done
                if not deal.advance():
                    turnup += ended
                    forced += not ended
            print(json.dumps({"preset": preset, "players": players, "deals": args.deals,
                              "ended_by_the_turnup": turnup, "every_card_forced_or_a_lone_lead": forced}), flush=True)


def main(argv: list[str] | None = None) -> int:
    """The command line."""
    parser = OneLineParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("exploitability", help="exact NashConv of each policy on the small game")
    p.add_argument("--network", default="", help="a model file trained on the small game (popejoan train)")
    p.add_argument("--pimc-samples", type=int, default=32, help="worlds per pimc decision")
    p.add_argument("--cfr-iterations", type=int, default=20, help="CFR+ iterations per turn-up (0: none)")
    p = sub.add_parser("train-nfsp", help="train OpenSpiel's NFSP on the full game")
    p.add_argument("--players", type=TABLE_SIZE, default=4)
    p.add_argument("--minutes", type=Number(0.0, 10**6, low_open=True), default=20.0)
    p.add_argument("--episodes", type=Integer(0, 10**12), default=0,
                   help="stop after this many deals (0: the time alone)")
    p.add_argument("--hidden", type=nfsp_hidden, default=[256, 256], help="hidden layer widths (default 256,256)")
    p.add_argument("--seed", type=SEED, default=1)
    p.add_argument("--out", type=file_name, default="nfsp_4p.pt")
    p = sub.add_parser("tournament", help="the OpenSpiel players against pimc and shipped")
    p.add_argument("--nfsp", default="", help="the file train-nfsp wrote")
    p.add_argument("--simulations", type=int, default=100, help="ISMCTS simulations per decision")
    p.add_argument("--deals", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", type=int, default=1)
    sub.add_parser("tree", help="the small game's OpenSpiel tree: player nodes, stops, information states")
    p = sub.add_parser("no-decision", help="full deals that give no seat a choice, by table size and preset")
    p.add_argument("--deals", type=int, default=20_000, help="deals per table size and preset")
    p.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    commands = {"exploitability": run_exploitability, "train-nfsp": run_train_nfsp, "tournament": run_tournament,
                "tree": run_tree, "no-decision": run_no_decision}
    try:
        commands[args.command](args)
    except PopeJoanError as err:
        parser.exit(2, f"{parser.prog} {args.command}: error: {err}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
