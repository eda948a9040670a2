"""python scripts/judge.py (also `azero judge`): players judged move by move by an exact solver."""

from __future__ import annotations

import argparse
import json

from ..errors import cli_entry
from ..judge import DEFAULT_MAX_PLIES, DEFAULT_MIN_PLIES, DEFAULT_POSITIONS, MAX_CANDIDATES
from . import check_batch, torch_device

MAX_PLIES = 10_000  # random plies before a judged position, at most


def build_parser() -> argparse.ArgumentParser:
    from ..arena import MAX_GAMES_AT_ONCE
    from ..players import spec_help

    parser = argparse.ArgumentParser(
        prog="judge.py",
        description="Judge players by an exact solver: on a fixed, seeded set of positions from random play, "
        "the share of each player's moves that keep the position's game-theoretic value (win, draw or loss "
        "with best play), with its 95% interval; also over the positions where some move would change the "
        "value. 6x7 Connect Four is solved by BitBully (pip install -e '.[yardsticks]'); games small enough "
        "(tic-tac-toe, Nim, tiny boards) by exhaustive search. With --pons, Connect Four players are judged "
        "on Pascal Pons' six test sets instead, reported as error rates (the share of moves worse than the "
        "best move, AlphaZero.jl's measure).",
        epilog=f"{spec_help()}. Example: --game connect4 --player az:runs/connect4-60/latest.pt --player uct:1000; "
        "--game connect4 --pons PATH --player az:runs/RUN/latest.pt:sims=600 --player policy:runs/RUN/latest.pt",
    )
    parser.add_argument("--game", required=True, help="game spec, e.g. connect4, tictactoe")
    parser.add_argument("--player", action="append", required=True, metavar="SPEC",
                        help="a player to judge, e.g. az:runs/RUN/latest.pt:sims=100 (repeatable)")
    parser.add_argument("--positions", type=int, default=DEFAULT_POSITIONS,
                        help=f"positions to judge (default {DEFAULT_POSITIONS}, at most {MAX_CANDIDATES:,})")
    parser.add_argument("--min-plies", type=int, default=DEFAULT_MIN_PLIES,
                        help=f"fewest random moves before a position (default {DEFAULT_MIN_PLIES})")
    parser.add_argument("--max-plies", type=int, default=DEFAULT_MAX_PLIES,
                        help=f"most random moves before a position (default {DEFAULT_MAX_PLIES})")
    parser.add_argument("--pons", metavar="FOLDER", default=None,
                        help="judge on Pascal Pons' Connect Four test sets in FOLDER (the files Test_L1_R1 .. "
                        "Test_L3_R1 of his test protocol, also in AlphaZero.jl's games/connect-four/benchmark) "
                        "instead of positions from random play")
    parser.add_argument("--pons-limit", type=int, default=None, metavar="N",
                        help="with --pons: the first N positions of each set (default all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the positions and the players (default 0)")
    parser.add_argument("--batch", type=int, default=None, help="positions given to a player at once (default all; at most "
                        f"{MAX_GAMES_AT_ONCE:,})")
    parser.add_argument("--device", default="cpu", type=torch_device, help="torch device for networks (default cpu)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per player instead of text")
    return parser


@cli_entry
def main(argv=None) -> int:
    import games

    from ..judge import judge, judge_positions
    from ..oracle import make_oracle
    from ..players import make

    parser = build_parser()
    args = parser.parse_args(argv)
    if not 1 <= args.positions <= MAX_CANDIDATES:
        parser.error(f"--positions must be in 1..{MAX_CANDIDATES:,}")
    if not 0 <= args.min_plies <= args.max_plies <= MAX_PLIES:
        parser.error(f"need 0 <= --min-plies <= --max-plies <= {MAX_PLIES:,}")
    check_batch(parser, args.batch)
    if args.pons_limit is not None and (args.pons is None or not 1 <= args.pons_limit <= MAX_CANDIDATES):
        parser.error(f"--pons-limit needs --pons and must be in 1..{MAX_CANDIDATES:,}")
    game = games.make_from_spec(args.game)
    oracle = make_oracle(game)
    if args.pons is not None:
        return judge_pons(args, game, oracle)
    positions = judge_positions(game, args.positions, min_plies=args.min_plies, max_plies=args.max_plies,
                                seed=args.seed)
    for spec in args.player:
        player = make(spec, game, device=args.device, seed=args.seed)
        try:
            result = judge(player, positions.to(args.device), oracle, seed=args.seed, min_plies=args.min_plies,
                           max_plies=args.max_plies, batch=args.batch)
        finally:
            player.close()
        print(json.dumps(result.to_dict()) if args.json else result.table(), flush=True)
    return 0


def judge_pons(args, game, oracle) -> int:
    """Every player on every Pons set found in args.pons: a table of error rates per player."""
    from pathlib import Path

    from ..judge import judge, pons_label, pons_sets, read_pons_set
    from ..players import make

    sets = [(path.name, *read_pons_set(game, path, args.pons_limit)) for path in pons_sets(Path(args.pons))]
    for spec in args.player:
        player = make(spec, game, device=args.device, seed=args.seed)
        results = []
        try:
            for name, positions, scores in sets:
                results.append(judge(player, positions.to(args.device), oracle, seed=args.seed, batch=args.batch,
                                     source=f"of Pons' {name} ({pons_label(name)})", expected=scores.sign()))
                if args.json:
                    print(json.dumps({"set": name, **results[-1].to_dict()}), flush=True)
        finally:
            player.close()
        if not args.json:
            print(pons_table(player.spec, oracle.name, [name for name, _, _ in sets], results), flush=True)
    return 0


def pons_table(player: str, solver: str, names: list[str], results) -> str:
    """The error rates of one player on the Pons sets, a row a set."""
    from ..judge import pons_label

    lines = [f"{player} on Pascal Pons' test sets, judged by {solver}: error = a move worse than the best "
             "(win > draw > loss)",
             f"{'set':<11} {'stage, difficulty':<18} {'positions':>9} {'errors':>6} {'rate':>6}  95% interval"]
    for name, result in zip(names, results):
        low, high = result.error_interval
        lines.append(f"{name:<11} {pons_label(name):<18} {result.positions:>9} {result.errors:>6} "
                     f"{1 - result.share:>6.1%}  {low:>5.1%} .. {high:.1%}")
    return "\n".join(lines)

