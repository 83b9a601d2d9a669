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

Exit codes: 0 success, 1 a record does not verify, 2 bad usage or input
(unknown preset or option, missing file), 130 interrupted.

A new command is one more ``Command`` in ``COMMANDS``: a name, a help line, a
function that adds its arguments and a function that runs it.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from popejoan_env.checks import parse_rules_options
from popejoan_env.engine import Deal
from popejoan_env.errors import PopeJoanError, RecordError
from popejoan_env.files import check_writable
from popejoan_env.record import RecordWriter, deal_record, read_records, verify_record
from popejoan_env.rules import PRESETS, Rules, check_players
from popejoan_env.session import Session

if TYPE_CHECKING:
    import numpy as np

    from popejoan_env.batch import Finished

PROG = "popejoan"


class UsageError(Exception):
    """Bad command-line input: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (plus a hint) and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _integer(text: str) -> int:
    """An argparse ``type``: ``int(text)``, with a short message for text that is not an integer or is absurdly long."""
    shown = repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text):,} characters)"
    if len(text) > 100:  # Python converts no more than 4,300 digits anyway; no count here needs 100
        raise argparse.ArgumentTypeError(f"invalid int value: {shown}: too long")
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {shown}") from None


@dataclasses.dataclass(frozen=True)
class Command:
    """A subcommand: its name, one-line help, an argument builder and the function that runs it."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""


# --------------------------------------------------------------------- simulate
BATCH_SIZE = 4096
"""Default ``--batch-size``: deals in flight with ``--engine batch``."""
MAX_BATCH_SIZE = 1_000_000
"""Largest ``--batch-size`` (about 1 kB of state per deal in flight)."""


def _add_simulate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--players", type=_integer, default=4, help="seats at the table, 3..8 (default 4)")
    parser.add_argument(
        "--preset", default="modern", help=f"rules preset: {', '.join(sorted(PRESETS))} (default modern)"
    )
    parser.add_argument(
        "--rules-option", action="append", default=[], metavar="KEY=VALUE",
        help="change one rules option, e.g. pair_split=halves, ace_high=true, "
        'dressing=\'{"pope": 8}\' (JSON values; repeatable)',
    )
    parser.add_argument("--deals", type=_integer, default=1000, help="number of deals to play (default 1000)")
    parser.add_argument(
        "--session-length", type=_integer, default=None, metavar="N",
        help="deals per session (default 2*players, each player deals twice); sessions run back to back, "
        "each starting with fresh balances and an empty board, the deal still passing left",
    )
    parser.add_argument(
        "--seed", type=_integer, default=0,
        help="seed of the single numpy Generator that deals every deal and draws every random lead (default 0)",
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
        "--batch-size", type=_integer, default=None, metavar="N",
        help=f"with --engine batch: deals in flight at once, 1..{MAX_BATCH_SIZE:,} (default {BATCH_SIZE:,}, "
        "fewer when --deals needs fewer sessions); the deals played depend on it as on --seed",
    )


class RandomLeads:
    """Random legal play: forced cards as they come, each lead uniform among the legal ones."""

    def __init__(self, rng: np.random.Generator, block: int = 65536) -> None:
        # One rng.random() call per lead would cost more than the engine's move;
        # a block of uniforms drawn at once keeps the same Generator and seed.
        self.rng = rng
        self.block = block
        self._uniforms: list[float] = []
        self._next = 0

    def __call__(self, deal: Deal, legal: list[int]) -> int:
        """A lead drawn uniformly from ``legal`` (two or more cards)."""
        if self._next >= len(self._uniforms):
            self._uniforms, self._next = self.rng.random(self.block).tolist(), 0
        u = self._uniforms[self._next]
        self._next += 1
        return legal[int(u * len(legal))]


def run_simulate(args: argparse.Namespace) -> int:
    """Play ``--deals`` deals with random legal play and write their records."""
    import numpy as np

    check_players(args.players)
    rules = parse_rules_options(args.preset, args.rules_option)
    if args.deals < 1:
        raise UsageError(f"--deals must be at least 1, got {args.deals}")
    if args.seed < 0:
        raise UsageError(f"--seed must be 0 or more, got {args.seed}")
    length = args.session_length if args.session_length is not None else 2 * args.players
    if length < 1:
        raise UsageError(f"--session-length must be at least 1, got {length}")
    if args.engine != "batch" and args.batch_size is not None:
        raise UsageError("--batch-size applies only to --engine batch")
    batch_size = BATCH_SIZE if args.batch_size is None else args.batch_size
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise UsageError(f"--batch-size must be 1..{MAX_BATCH_SIZE:,}, got {batch_size}")
    if not rules.allow_credit and rules.start_counters < sum(rules.dressing):
        # Every session starts with fresh balances: no session could ever start a deal.
        raise UsageError(
            f"no deal can start: with allow_credit=false a dealer needs {sum(rules.dressing)} "
            f"counters for the dressing and start_counters is {rules.start_counters}"
        )
    _check_out(args.out)
    rng = np.random.default_rng(args.seed)
    progress = _progress(total=args.deals, unit="deal", quiet=args.quiet)
    start = time.perf_counter()
    with RecordWriter(args.out) as writer:
        try:
            if args.engine == "batch":
                plays, how = _simulate_batch(args, rules, length, batch_size, rng, writer, progress)
            else:
                plays, how = _simulate_scalar(args, rules, length, rng, writer, progress), ""
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


def _simulate_scalar(
    args: argparse.Namespace, rules: Rules, length: int, rng: np.random.Generator, writer: RecordWriter, progress: Any,
) -> int:
    """``--engine scalar``: sessions one after another, each deal played out by ``RandomLeads``; the cards played."""
    choose = RandomLeads(rng)
    plays = 0
    dealer, session_index = 0, 0
    while writer.count < args.deals:
        session = Session(rules, args.players, rng, deals=min(length, args.deals - writer.count), first_dealer=dealer)
        while not session.over:
            deal = session.next_deal()
            deal.play_out(choose)
            plays += len(deal.plays)
            record = deal_record(deal)
            record.update(seed=args.seed, deal_index=writer.count, session=session_index)
            writer.write(record)
            progress.update()
        dealer = session.dealer
        session_index += 1
    return plays


def _simulate_batch(
    args: argparse.Namespace, rules: Rules, length: int, batch_size: int, rng: np.random.Generator,
    writer: RecordWriter, progress: Any,
) -> tuple[int, str]:
    """``--engine batch``: slots of ``BatchDeals`` each play sessions of ``length`` deals, every lead random
    (``random_actions``); the cards played of the deals written, and a note for the summary.

    The one Generator ``rng`` deals (whenever the batch deals a slot again) and draws the leads.  The file
    holds whole sessions in the order they started (the batch's ``session_ids``), each session's deals in
    order, the last session cut short at ``--deals``, as the scalar engine writes them: ``deal_index`` is the
    position in the file, ``session`` the session's number.  The deal passes left within a session and, in each
    slot, from one session to the next.
    """
    from popejoan_env.batch import BatchDeals

    # Each session holds `length` deals, or (without credit) at least one: more slots would play unused sessions.
    shortest = length if rules.allow_credit else 1
    size = min(batch_size, -(-args.deals // shortest))
    batch = BatchDeals(rules, args.players, size, rng=rng, session_length=length, record=True)
    finished: dict[int, list[dict[str, Any]]] = {}  # session number -> its deals reported so far
    plays = next_session = 0  # the number of the next session to write (every session is written, in order)

    def write_sessions(report: Finished) -> None:
        nonlocal plays, next_session
        for record, session in zip(report.records or [], report.sessions.tolist()):
            finished.setdefault(session, []).append(record)
        playing = set(batch.session_ids.tolist())
        while writer.count < args.deals and next_session in finished and next_session not in playing:
            for record in finished.pop(next_session)[:args.deals - writer.count]:
                record.update(seed=args.seed, deal_index=writer.count, session=next_session)
                plays += len(record["plays"])
                writer.write(record)
                progress.update()
            next_session += 1

    write_sessions(batch.advance())  # deals that ended at their turn-up
    while writer.count < args.deals:
        # Sessions from `needed` on cannot reach the file: their slots wait (their first deal dealt, not played).
        needed = next_session + -(-(args.deals - writer.count) // shortest)
        live = batch.session_ids < needed
        assert live.any(), "a session the file needs is neither played nor finished"
        write_sessions(batch.step(batch.random_actions(rng), which=live))
    return plays, f", batch engine ({batch.engine}, {size:,} deals in flight)"


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
    finally:
        progress.close()
    files = f" in {len(args.files)} files" if len(args.files) > 1 else ""
    if failed:
        print(f"{verified} records verified, {failed} failed{files}", file=sys.stderr)
        return 1
    print(f"{verified} records verified{files}")
    return 0


def _add_play_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--players", type=_integer, default=4, help="players at the table, 3..8 (default 4)")
    parser.add_argument("--preset", default="modern", help=f"rules preset: {', '.join(PRESETS)} (default modern)")
    parser.add_argument("--rules-option", action="append", default=[], metavar="KEY=VALUE",
                        help="change one rules option (JSON value), repeatable")
    parser.add_argument("--opponents", default="stops_first",
                        help="player spec for every other seat: a scripted name or a model path (default stops_first)")
    parser.add_argument("--seat", type=_integer, default=0, help="your seat (default 0)")
    parser.add_argument("--deals", type=_integer, default=1, help="deals with play in the session (default 1)")
    parser.add_argument("--seed", type=_integer, default=None, help="seed of the deal, 0 or more (default: fresh entropy)")


def run_play(args: argparse.Namespace) -> int:
    """Play at a terminal against scripted players or a model; forced cards are played for everyone."""
    from popejoan_env.aec import raw_env
    from popejoan_env.players import make_player
    from popejoan_env.players.human import HumanPlayer

    rules = parse_rules_options(args.preset, args.rules_option)
    check_players(args.players)
    if not 0 <= args.seat < args.players:
        raise UsageError(f"--seat must be a seat 0..{args.players - 1}, got {args.seat}")
    if args.deals < 1:
        raise UsageError(f"--deals must be at least 1, got {args.deals}")
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed must be 0 or more, got {args.seed}")
    game = raw_env(players=args.players, rules=rules, render_mode="ansi", auto_forced=True, deals=args.deals)
    game.reset(seed=args.seed)
    you = f"player_{args.seat}"
    seats = {agent: make_player(args.opponents, seed=i) for i, agent in enumerate(game.possible_agents)}
    seats[you] = HumanPlayer(show_view=False)  # the rendered table below shows more
    totals = {agent: 0.0 for agent in game.possible_agents}
    for agent in game.agent_iter():
        obs, reward, terminated, truncated, _ = game.last()
        totals[agent] += reward
        if terminated or truncated:
            game.step(None)
            continue
        if agent == you:
            print(game.render())
        game.step(seats[agent].act(game.seat_view(agent)))
    for record in game.records():
        print(f"deal: {len(record['plays'])} cards played, winner seat {record['winner']}, counters {record['delta']}")
    print(f"you (seat {args.seat}) won {totals[you]:+.0f} counters")
    return 0


# --------------------------------------------------------------------- serve
def _add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=_integer, default=8000, help="port to listen on, 1..65535 (default 8000)")
    parser.add_argument("--records", default=None, metavar="FILE",
                        help="a records file (JSON Lines, .gz too) the replay page offers; no other file is read")
    parser.add_argument("--models", default="models", metavar="DIR",
                        help="directory of saved models (each run's model.zip) offered as opponents (default models)")


def run_serve(args: argparse.Namespace) -> int:
    """Run the web app (``popejoan_env.web``) with uvicorn until interrupted."""
    if not 1 <= args.port <= 65535:
        raise UsageError(f"--port must be 1..65535, got {args.port}")
    if not args.host or any(c.isspace() for c in args.host):
        raise UsageError(f"--host {args.host!r} is not an address")
    if args.records is not None:
        if not args.records or "\0" in args.records:
            raise UsageError(f"--records {args.records!r} is not a file name")
        open(args.records, "rb").close()  # a missing or unreadable file exits 2 now, not at the first replay
    if args.models != "models" and not os.path.isdir(args.models):
        raise UsageError(f"--models {args.models}: not a directory")
    try:
        import uvicorn

        from popejoan_env.web.app import create_app
        app = create_app(records=args.records, models_dir=args.models)
    except ImportError as err:
        raise UsageError(f"the web app needs the web extra ({err.name} is missing): pip install -e '.[web]'") from None
    _check_port(args.host, args.port)
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"Pope Joan at http://{host}:{args.port}/", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
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


# --------------------------------------------------------------------- the table
COMMANDS: list[Command] = [
    Command(
        "simulate", "play random legal deals and write one game record per deal (JSON Lines)",
        _add_simulate_arguments, run_simulate,
        """Play deals with random legal play (forced cards as they come, each lead
uniform among the legal leads) in sessions back to back, and write one
game record per deal (format popejoan-record/1, one JSON object a line).
--engine batch plays --batch-size deals at once with the batch engine.

examples:
  popejoan simulate --players 4 --preset modern --deals 10000 --seed 1 --out deals.jsonl
  popejoan simulate --engine batch --deals 100000 --seed 1 --out deals.jsonl.gz""",
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
with a choice: type a card such as 5D or th.

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
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one subparser per entry of ``COMMANDS``."""
    parser = _Parser(prog=PROG, description="Pope Joan: simulate deals, verify game records, play at a terminal.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        p = sub.add_parser(
            command.name, help=command.help, description=command.description or command.help,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(p)
        p.set_defaults(run=command.run)
    return parser


def _progress(total: int | None, unit: str, quiet: bool) -> Any:
    """A tqdm bar on stderr, disabled with --quiet or when stderr is not a terminal."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, disable=quiet or not sys.stderr.isatty(), file=sys.stderr, mininterval=0.5)


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (UsageError, PopeJoanError) as err:
        print(f"{PROG} {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of stdout went away (e.g. `| head`): stop quietly, and keep
        # the interpreter's final flush from complaining.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as err:
        where = f": {err.filename}" if getattr(err, "filename", None) else ""
        print(f"{PROG} {args.command}: error: {err.strerror or err}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG} {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
