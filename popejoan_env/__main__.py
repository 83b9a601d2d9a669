"""Command line: ``python -m popejoan_env <command>`` (installed as ``popejoan``).

Commands:

* ``simulate`` – play many deals with random legal play and write one game
  record per deal (JSON Lines, ``popejoan-record/1``), a dataset for offline RL
  and for checking other implementations.
* ``verify`` – replay every record of a file with this engine and check the
  recorded outcome; exits 1 naming the first record and field that differ.
* ``play`` – a human at one seat of the AEC environment, against scripted
  players or a saved model (``players/human.py``).
* ``serve`` – the web app (``popejoan_env/web``): play in the browser against
  the agents, and replay game records.
* ``evaluate`` – an agent against the reference panel on the frozen deal set:
  the report to quote (``popejoan_env/evaluate``, ``docs/evaluation.md``).
* ``exploit`` – what one seat wins by deviating from an agent: a search best
  response (or a PPO learner) on the frozen deals, its budget in work.

Exit codes: 0 success, 1 a record does not verify, 2 bad usage or input
(unknown preset or option, missing file), 130 interrupted.

A new command is one more ``Command`` in ``COMMANDS``: a name, a help line, a
function that adds its arguments and a function that runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from popejoan_env import __version__
from popejoan_env.cli import EPISODE_DEALS, SEED, TABLE_SIZE, Integer, file_failed, interrupted, reader_gone

PROG = "popejoan"

try:  # a Ctrl-C while the command's modules load is one line and status 130, as anywhere else in it
    from popejoan_env.rules import parse_rules_options
    from popejoan_env.cluster import check_address, connected, import_ray
    from popejoan_env.errors import PopeJoanError, RecordError
    from popejoan_env.files import check_writable
    from popejoan_env.record import RecordWriter, read_records, verify_record
    from popejoan_env.rules import MAX_PLAYERS, PRESETS, check_players
    from popejoan_env.simulate import BATCH_SIZE, MAX_BATCH_SIZE, SHARD_DEALS, write_batch, write_scalar, write_sharded
    from popejoan_env.training import COMMANDS as TRAINING_COMMANDS
    from popejoan_env.training import run_command
except KeyboardInterrupt:
    sys.exit(interrupted(PROG))


class UsageError(Exception):
    """Bad command-line input: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (plus a hint) and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


PLAYERS = TABLE_SIZE
"""Seats at a table."""
MAX_COMMAND_DEALS = 10**9
"""Most deals ``simulate`` writes in one command (a billion deals is about a day of it)."""
DEALS = Integer(1, MAX_COMMAND_DEALS)
"""A count of deals (or of deals per session or per shard)."""
PORT = Integer(1, 65535)
"""A TCP port."""


@dataclasses.dataclass(frozen=True)
class Command:
    """A subcommand: its name, one-line help, an argument builder and the function that runs it."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""


# --------------------------------------------------------------------- simulate
def _add_simulate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--players", type=PLAYERS, default=4,
                        help=f"seats at the table, {PLAYERS.low}..{PLAYERS.high} (default 4)")
    parser.add_argument(
        "--preset", default="modern", help=f"rules preset: {', '.join(sorted(PRESETS))} (default modern)"
    )
    parser.add_argument(
        "--rules-option", action="append", default=[], metavar="KEY=VALUE",
        help="change one rules option, e.g. pair_split=halves, ace_high=true, "
        'dressing=\'{"pope": 8}\' (JSON values; repeatable)',
    )
    parser.add_argument("--deals", type=DEALS, default=1000,
                        help=f"number of deals to play, 1..{MAX_COMMAND_DEALS:,} (default 1000)")
    parser.add_argument(
        "--session-length", type=DEALS, default=None, metavar="N",
        help="deals per session (default 2*players, each player deals twice); sessions run back to back, "
        "each starting with fresh balances and an empty board, the deal still passing left",
    )
    parser.add_argument(
        "--seed", type=SEED, default=0,
        help="seed of the single numpy Generator that deals every deal and draws every random lead "
        "(with --shard-deals, shard j has its own, default_rng([seed, j])) (default 0)",
    )
    parser.add_argument(
        "--out", required=True, help="output JSON Lines file (.gz compresses; - writes to stdout)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    parser.add_argument(
        "--engine", choices=("scalar", "batch"), default="scalar",
        help="scalar (default): one deal after another with the engine module; batch: --batch-size deals at once "
        "with the batch engine (batch.BatchDeals, card for card the same rules; building the records takes "
        "most of its time). The same seed gives the same file for each engine, but not the same deals in both",
    )
    parser.add_argument(
        "--batch-size", type=Integer(1, MAX_BATCH_SIZE), default=None, metavar="N",
        help=f"with --engine batch: deals in flight at once, 1..{MAX_BATCH_SIZE:,} (default {BATCH_SIZE:,}, "
        "fewer when --deals (or --shard-deals) needs fewer sessions); the deals played depend on it as on --seed",
    )
    parser.add_argument(
        "--shard-deals", type=DEALS, default=None, metavar="K",
        help="play the file in shards of K deals, K a multiple of the session length (no session crosses a "
        "shard): shard j holds deals j*K to j*K+K-1, dealt and played from its own Generator "
        "default_rng([seed, j]), so shards can be played anywhere and in any order and the file stays the "
        "same; deal_index and session still count through the whole file. Past the first shard the deals "
        f"differ from an unsharded run's. Default: no shards (one Generator), or with --backend ray "
        f"{SHARD_DEALS:,} rounded up to whole sessions",
    )
    parser.add_argument(
        "--backend", choices=("local", "ray"), default="local",
        help="local (default): every deal in this process; ray: the shards run as Ray tasks (a local Ray on "
        "this machine's CPUs, or the cluster at --address) and this process writes them in order: the file "
        "is byte for byte the one --backend local writes with the same --shard-deals",
    )
    parser.add_argument(
        "--address", default=None, metavar="ADDRESS",
        help="with --backend ray, the running Ray cluster to join: auto (the cluster this machine is a node "
        "of), HOST:PORT of its head node (ray start --head, port 6379) or ray://HOST:10001 (Ray client); "
        "default: start a local Ray for this run",
    )


def run_simulate(args: argparse.Namespace) -> int:
    """Play ``--deals`` deals with random legal play and write their records."""
    import numpy as np

    check_players(args.players)
    rules = parse_rules_options(args.preset, args.rules_option)
    length = args.session_length if args.session_length is not None else 2 * args.players
    if args.engine != "batch" and args.batch_size is not None:
        raise UsageError("--batch-size applies only to --engine batch")
    batch_size = BATCH_SIZE if args.batch_size is None else args.batch_size
    rules.check_startable()  # every session starts with fresh balances: else none could deal
    shard_deals = _shard_deals(args, length)
    if args.backend == "ray":
        check_address(args.address)
        import_ray()
    elif args.address is not None:
        raise UsageError("--address applies only to --backend ray")
    _check_out(args.out)
    with contextlib.ExitStack() as ray_session:
        # Ray is started (or joined) before the output file is opened: a cluster that cannot be reached writes nothing.
        cpus = ray_session.enter_context(connected(args.address)) if args.backend == "ray" else None
        progress = _progress(total=args.deals, unit="deal", quiet=args.quiet)
        start = time.perf_counter()
        with RecordWriter(args.out) as writer:
            try:
                if shard_deals is not None:
                    plays, how = write_sharded(args, rules, length, batch_size, shard_deals, cpus, writer, progress)
                elif args.engine == "batch":
                    plays, how = write_batch(args, rules, length, batch_size, np.random.default_rng(args.seed),
                                             writer, progress)
                else:
                    plays, how = write_scalar(args, rules, length, np.random.default_rng(args.seed), writer,
                                              progress), ""
            finally:
                progress.close()
        seconds = time.perf_counter() - start
    if not args.quiet:
        # With --out - the records own stdout; the summary goes to stderr.
        out = sys.stderr if args.out == "-" else sys.stdout
        print(
            f"{writer.count:,} deals ({args.players} players, rules {rules.name}, seed {args.seed}{how}), "
            f"{plays:,} card plays in {seconds:.2f} s: {plays / seconds:,.0f} plays/s, "
            f"{writer.count / seconds:,.0f} deals/s (recording included) -> {args.out}",
            file=out,
        )
    return 0


def _shard_deals(args: argparse.Namespace, length: int) -> int | None:
    """The deals per shard: ``--shard-deals`` (checked), the default with ``--backend ray``, or None (no shards)."""
    if args.shard_deals is None:
        return length * -(-SHARD_DEALS // length) if args.backend == "ray" else None
    if args.shard_deals % length:
        raise UsageError(
            f"--shard-deals must be a positive multiple of the session length ({length}), so that no session "
            f"crosses a shard; got {args.shard_deals}"
        )
    return int(args.shard_deals)


def _check_out(path: str) -> None:
    """Refuse an ``--out`` that cannot be written, before any deal is played.

    The records then go to a temporary file that replaces ``--out`` only once
    every deal is written (``RecordWriter``): an interrupt leaves it as it was.
    """
    if path == "-":
        return
    if not path or "\0" in path:
        raise UsageError(f"--out {path!r} is not a file name")
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        return  # a device or a pipe (/dev/null): written in place
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        # check_writable would create it; a typo in --out should not make directories.
        part = os.path.dirname(path)
        while part and not os.path.lexists(part) and os.path.dirname(part) != part:
            part = os.path.dirname(part)  # up to the nearest that exists: a file there is the mistake to name
        if part and os.path.exists(part) and not os.path.isdir(part):
            raise UsageError(f"--out {path}: {part} is a file, not a directory")
        raise UsageError(f"--out {path}: No such file or directory: {os.path.dirname(path) or folder}")
    check_writable([path])


# --------------------------------------------------------------------- verify
def _add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="JSON Lines record files (.gz too)")
    parser.add_argument(
        "--keep-going", action="store_true",
        help="report every record that fails instead of stopping at the first",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run_verify(args: argparse.Namespace) -> int:
    """Replay every record of the files; 0 if all verify, 1 naming the first failure."""
    for path in args.files:
        # Checked up front so a typo exits 2 before minutes of verifying other files.
        if not path or "\0" in path:
            raise UsageError(f"not a file name: {path!r}")
        open(path, "rb").close()
    progress = _progress(total=None, unit="record", quiet=args.quiet)
    verified = failed = 0
    try:
        for path in args.files:
            number = 0
            try:
                for lineno, record in read_records(path):
                    number += 1
                    try:
                        verify_record(record)
                    except RecordError as err:
                        failed += 1
                        print(f"{path}: record {number} (line {lineno}): {err}", file=sys.stderr)
                        if not args.keep_going:
                            return 1
                    else:
                        verified += 1
                    progress.update()
            except RecordError as err:
                # The file itself is corrupt from here on; nothing after it can be read.
                failed += 1
                print(f"{err}", file=sys.stderr)
                if not args.keep_going:
                    return 1
            except OSError as err:
                if isinstance(err, BrokenPipeError) or err.filename is not None:
                    raise
                # A read that failed once the file was open (EIO from /proc/self/mem, a bad disk) names no file.
                raise OSError(err.errno, err.strerror or str(err), path) from None
    finally:
        progress.close()
    files = f" in {len(args.files)} files" if len(args.files) > 1 else ""
    if failed:
        print(f"{verified} records verified, {failed} failed{files}", file=sys.stderr)
        return 1
    print(f"{verified} records verified{files}")
    return 0


def _add_play_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--players", type=PLAYERS, default=4,
                        help=f"players at the table, {PLAYERS.low}..{PLAYERS.high} (default 4)")
    parser.add_argument("--preset", default="modern", help=f"rules preset: {', '.join(PRESETS)} (default modern)")
    parser.add_argument("--rules-option", action="append", default=[], metavar="KEY=VALUE",
                        help="change one rules option (JSON value), repeatable")
    parser.add_argument("--opponents", default="stops_first",
                        help="one player spec, which plays every other seat: a scripted name or a model path "
                             "(default stops_first)")
    parser.add_argument("--seat", type=Integer(0, MAX_PLAYERS - 1), default=0, help="your seat (default 0)")
    parser.add_argument("--deals", type=EPISODE_DEALS, default=1,
                        help=f"deals with play in the session, 1..{EPISODE_DEALS.high:,} (default 1)")
    parser.add_argument("--seed", type=SEED, default=None,
                        help="seed of the deal, 0..2,147,483,647 (default: fresh entropy)")


def run_play(args: argparse.Namespace) -> int:
    """Play at a terminal against scripted players or a model; forced cards are played for everyone."""
    from popejoan_env.envs import register_for
    from popejoan_env.envs.pettingzoo_aec import raw_env
    from popejoan_env.players import make_player
    from popejoan_env.players.base import ask
    from popejoan_env.players.human import HumanPlayer
    from popejoan_env.players.lists import split_specs

    specs = split_specs(args.opponents, "--opponents")
    if len(specs) > 1:  # evaluate's and train's --opponents are lists; here one spec plays every other seat
        raise UsageError(f"--opponents takes one player spec, which plays every other seat; got a list of "
                         f"{len(specs)}: {', '.join(specs)}")
    rules = parse_rules_options(args.preset, args.rules_option)
    check_players(args.players)
    if not 0 <= args.seat < args.players:
        raise UsageError(f"--seat must be a seat 0..{args.players - 1}, got {args.seat}")
    game = raw_env(players=args.players, rules=rules, render_mode="ansi", auto_forced=True, deals=args.deals)
    game.reset(seed=args.seed)
    you = f"player_{args.seat}"
    register_for([args.opponents])  # the adapters the opponents may need (an openspiel_* player's game)
    seats = {agent: make_player(args.opponents, seed=i) for i, agent in enumerate(game.possible_agents)}
    seats[you] = HumanPlayer(show_view=False)  # the rendered table below shows more
    totals = {agent: 0.0 for agent in game.possible_agents}
    current, shown = game.deal, 0
    for agent in game.agent_iter():
        obs, reward, terminated, truncated, _ = game.last()
        totals[agent] += reward
        if terminated or truncated:
            game.step(None)
            continue
        if agent == you:
            print(game.render())
        game.step(ask(seats[agent], game.seat_view(agent)))
        if current.done:  # a deal ended (and any that ended at their turn-up after it): its result now
            for record in game.records()[shown:]:
                shown += 1
                print(f"deal {shown}: {len(record['plays'])} cards played, winner seat {record['winner']}, "
                      f"counters {record['delta']} (you {record['delta'][args.seat]:+d})", flush=True)
            current = game.deal
    print(f"you (seat {args.seat}) won {totals[you]:+.0f} counters")
    return 0


# --------------------------------------------------------------------- serve
def _add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=PORT, default=8000, help="port to listen on, 1..65535 (default 8000)")
    parser.add_argument("--records", default=None, metavar="FILE",
                        help="a records file (JSON Lines, .gz too) the replay page offers; no other file is read")
    parser.add_argument("--models", default="models", metavar="DIR",
                        help="directory of saved models (each run's model.zip) offered as opponents (default models)")


def run_serve(args: argparse.Namespace) -> int:
    """Run the web app (``popejoan_env.web``) with uvicorn until interrupted."""
    if not args.host or any(c.isspace() for c in args.host):
        raise UsageError(f"--host {args.host!r} is not an address")
    if args.records is not None:
        if not args.records or "\0" in args.records:
            raise UsageError(f"--records {args.records!r} is not a file name")
    if args.models != "models" and not os.path.isdir(args.models):
        raise UsageError(f"--models {args.models}: not a directory")
    try:
        import uvicorn  # noqa: F401  (checked here: without the web extra the message below names it)

        from popejoan_env.web.app import create_app, serve
        app = create_app(records=args.records, models_dir=args.models, host=args.host)  # a pipe is refused there
    except ImportError as err:
        raise UsageError(f"the web app needs the web extra ({err.name} is missing): pip install 'popejoan[web]'") from None
    _check_port(args.host, args.port)
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"Pope Joan at http://{host}:{args.port}/", flush=True)
    serve(app, args.host, args.port)
    return 0


def _check_port(host: str, port: int) -> None:
    """Refuse an address that cannot be listened on (in use, not this machine's) before anything is printed."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as err:
        raise UsageError(f"--host {host}: {err.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as err:
            raise UsageError(f"cannot listen on {host} port {port}: {err.strerror}") from None


# --------------------------------------------------------------------- evaluate, exploit
def _add_evaluate_arguments(parser: argparse.ArgumentParser) -> None:
    from popejoan_env.evaluate.command import add_arguments

    add_arguments(parser)


def run_evaluate(args: argparse.Namespace) -> int:
    """Evaluate an agent against the reference panel on the frozen deals (``popejoan_env.evaluate``)."""
    from popejoan_env.evaluate.command import run

    return run(args)


def _add_exploit_arguments(parser: argparse.ArgumentParser) -> None:
    from popejoan_env.evaluate.exploit import add_arguments

    add_arguments(parser)


def run_exploit(args: argparse.Namespace) -> int:
    """Measure a best response against an agent and report what it wins (``popejoan_env.evaluate.exploit``)."""
    from popejoan_env.evaluate.exploit import run

    return run(args)


# --------------------------------------------------------------------- the table
COMMANDS: list[Command] = [
    Command(
        "simulate", "play random legal deals and write one game record per deal (JSON Lines)",
        _add_simulate_arguments, run_simulate,
        """Play deals with random legal play (forced cards as they come, each lead
uniform among the legal leads) in sessions back to back, and write one
game record per deal (format popejoan-record/1, one JSON object a line).
--engine batch plays --batch-size deals at once with the batch engine.
--shard-deals K plays the file in shards of K deals, each from its own
Generator; --backend ray plays the shards as Ray tasks (the same file).

examples:
  popejoan simulate --players 4 --preset modern --deals 10000 --seed 1 --out deals.jsonl
  popejoan simulate --engine batch --deals 100000 --seed 1 --out deals.jsonl.gz
  popejoan simulate --deals 1000000 --seed 1 --backend ray --address auto --out deals.jsonl.gz""",
    ),
    Command(
        "verify", "replay every record of JSON Lines files and check the recorded outcome",
        _add_verify_arguments, run_verify,
        """Replay each record's plays with this engine and compare turnup, awards,
payments, winner, delta and board_after.  Exit 0 if every record verifies,
1 naming the first record (and line) and the first field that differs.

example:
  popejoan verify deals.jsonl""",
    ),
    Command(
        "play", "play at a terminal against scripted players or a saved model",
        _add_play_arguments, run_play,
        """You take one seat; every other seat is the --opponents player.  Forced
continuations are played for everyone, so you are asked only when you lead
with a choice: type a card such as 5D or th.  Each deal's result is printed
as the deal ends.  The first pimc game of a fresh install first compiles the
search (numba, about 20 s, said on stderr); later runs load it from the cache.

example:
  popejoan play --players 4 --opponents pimc --seed 3""",
    ),
    Command(
        "serve", "play in the browser against the agents, and replay game records",
        _add_serve_arguments, run_serve,
        """Run the web app: the play page at / (you at seat 0 against scripted players,
pimc or saved models, with hints from the shipped network and pimc) and the
replay page at /replay (any records file, step by step, seen by all or one
seat, with a model's move probabilities).  Listens on 127.0.0.1 by default;
only the --records file and the model files in --models are ever read.

example:
  popejoan serve --records deals.jsonl --port 8000""",
    ),
    Command(
        "evaluate", "evaluate an agent against the reference panel on the frozen deal set (a citable report)",
        _add_evaluate_arguments, run_evaluate,
        """Play AGENT in duplicate (field lineups, every rotation) against each player of
panel/2 on the frozen deals of popejoan-evalset/1, and write one report
(text, JSON, Markdown: format popejoan-evaluation/1) with the margin per
opponent and its 95% interval, the deal win rate, the counters and go-out
rates, the exact command, the versions and the deal set's SHA-256.
Interrupted, the same command resumes from PREFIX.state.json.  How to read
and quote it: docs/evaluation.md.

examples:
  popejoan evaluate models/my_run/model.zip --quick
  popejoan evaluate mypackage.agent:make_agent --seats 5 --opponents stops_first,pimc
  popejoan evaluate shipped --backend ray --address auto""",
    ),
    Command(
        "exploit", "how much one seat wins by deviating from an agent: a search best response on the frozen deals",
        _add_exploit_arguments, run_exploit,
        """One seat deviates, every other seat plays AGENT.  The default method is a
search best response (exploit:AGENT): at each decision it weighs the worlds
consistent with the play by how likely AGENT's policy makes the other seats'
leads there, plays every legal card out with AGENT at the other seats, and
plays the best.  On the frozen deals, every seat in turn, it reports the gain
per deal over AGENT in the same seat (95% CI): a lower bound of AGENT's
exploitability, with its budget in work (--deals, --worlds, --draws), so the
same command gives the same figure on any machine.  --small checks it against
the exact best response of the small game; --method learn trains a PPO
learner for --steps instead.  How to quote it: docs/evaluation.md.

examples:
  popejoan exploit stops_first
  popejoan exploit shipped --worlds 64 --draws 1024 --deals 400 --workers 2
  popejoan exploit pool_hunter --small""",
    ),
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one subparser per entry of ``COMMANDS``."""
    parser = _Parser(prog=PROG, description="Pope Joan: simulate deals, verify game records, play at a terminal or in the browser, train and benchmark players.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        p = sub.add_parser(
            command.name, help=command.help, description=command.description or command.help,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(p)
        p.set_defaults(run=command.run)
    for name, training in TRAINING_COMMANDS.items():  # listed here; main() hands their flags to their own parser
        extras = f" (needs the {training.extras} extra{'s' if ',' in training.extras else ''})" if training.extras else ""
        p = sub.add_parser(name, help=training.help + extras, add_help=False)
        p.add_argument("flags", nargs=argparse.REMAINDER)
    return parser


def _progress(total: int | None, unit: str, quiet: bool) -> Any:
    """A tqdm bar on stderr, disabled with --quiet or when stderr is not a terminal."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, disable=quiet or not sys.stderr.isatty(), file=sys.stderr, mininterval=0.5)


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; returns the exit status (130 and one line for a Ctrl-C, while its modules load too)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:  # in the parser's imports (evaluate, exploit) or before a command began
        return interrupted(PROG)


def _main(argv: Sequence[str] | None) -> int:
    """``main`` but a Ctrl-C outside a command's run."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in TRAINING_COMMANDS:
        return run_command(argv[0], argv[1:], prog=f"{PROG} {argv[0]}")
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (UsageError, PopeJoanError) as err:
        print(f"{PROG} {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return reader_gone()
    except OSError as err:
        print(f"{PROG} {args.command}: error: {file_failed(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return interrupted(f"{PROG} {args.command}")


if __name__ == "__main__":
    sys.exit(main())
