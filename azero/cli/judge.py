"""python scripts/judge.py (also `azero judge`): players judged move by move by an exact solver."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import cli_entry
from ..judge import DEFAULT_MAX_PLIES, DEFAULT_MIN_PLIES, DEFAULT_POSITIONS, MAX_CANDIDATES
from . import check_batch, torch_device, writable_folder_problem

MAX_PLIES = 10_000  # random plies before a judged position, at most
MAX_RUN_SIMULATIONS = 100_000  # --sims of --run, at most
MAX_SNAPSHOTS = 1000


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
    parser.add_argument("--player", action="append", metavar="SPEC",
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
    parser.add_argument("--run", metavar="RUN_DIR", default=None,
                        help="with --pons: judge a training run's saved networks (checkpoints/iter-*.pt) instead of "
                        "--player, each searched with --sims simulations, against the run's training hours")
    parser.add_argument("--sims", type=int, default=600, help="with --run: simulations a move (default 600, as "
                        "AlphaZero.jl's benchmark)")
    parser.add_argument("--snapshots", type=int, default=6, metavar="K",
                        help="with --run: judge K saved networks, evenly spread, the last included (default 6)")
    parser.add_argument("--network-alone", action="store_true",
                        help="with --run: judge each network's policy alone too (policy:), as AlphaZero.jl reports")
    parser.add_argument("--plot", metavar="SVG", default=None,
                        help="with --run: draw the error rates against training hours into this SVG file")
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
    run_flags = [flag for flag, given in (("--plot", args.plot), ("--network-alone", args.network_alone)) if given]
    if args.run is None and run_flags:
        parser.error(f"{run_flags[0]} goes with --run")
    if args.run is not None and args.pons is None:
        parser.error("--run judges a run's networks on Pons' sets: add --pons FOLDER")
    if (args.run is None) == (not args.player):
        parser.error("give the players to judge (--player SPEC), or a run's networks (--run RUN_DIR with --pons)")
    if not 1 <= args.sims <= MAX_RUN_SIMULATIONS or not 1 <= args.snapshots <= MAX_SNAPSHOTS:
        parser.error(f"--sims must be in 1..{MAX_RUN_SIMULATIONS:,} and --snapshots in 1..{MAX_SNAPSHOTS}")
    if args.plot:
        problem = writable_folder_problem(str(Path(args.plot).parent))
        if problem:
            parser.error(f"--plot {args.plot}: {problem}")
    game = games.make_from_spec(args.game)
    oracle = make_oracle(game)
    if args.run is not None:
        return judge_run(args, game, oracle)
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


def judge_run(args, game, oracle) -> int:
    """A run's saved networks on every Pons set: error rates against training hours (a table, JSON
    lines with --json, and a picture with --plot)."""
    from ..errors import UserError
    from ..judge import judge, pons_label, pons_sets, read_pons_set
    from ..loop import snapshot_iterations, snapshot_path
    from ..metrics import read_metrics
    from ..players import make

    run = Path(args.run)
    iterations = snapshot_iterations(run) if run.is_dir() else []
    if not iterations:
        raise UserError(f"--run {run}: no saved networks (checkpoints/iter-*.pt) there")
    hours = {int(r["iteration"]): float(r["charts/hours"]) for r in read_metrics(run)
             if isinstance(r.get("iteration"), int) and isinstance(r.get("charts/hours"), (int, float))}
    chosen = sorted({iterations[round(i * (len(iterations) - 1) / max(args.snapshots - 1, 1))]
                     for i in range(min(args.snapshots, len(iterations)))})
    sets = [(path.name, *read_pons_set(game, path, args.pons_limit)) for path in pons_sets(Path(args.pons))]
    kinds = [("search", f":sims={args.sims}")] + ([("network alone", None)] if args.network_alone else [])
    rows = []  # (kind, iteration, hours, name, result)
    for iteration in chosen:
        path = snapshot_path(run, iteration)
        for kind, options in kinds:
            spec = f"az:{path}{options}" if options else f"policy:{path}"
            player = make(spec, game, device=args.device, seed=args.seed)
            try:
                for name, positions, scores in sets:
                    result = judge(player, positions.to(args.device), oracle, seed=args.seed, batch=args.batch,
                                   source=f"of Pons' {name}", expected=scores.sign())
                    rows.append((kind, iteration, hours.get(iteration, float("nan")), name, result))
                    if args.json:
                        print(json.dumps({"set": name, "iteration": iteration, "hours": rows[-1][2], "kind": kind,
                                          **result.to_dict()}), flush=True)
            finally:
                player.close()
    if not args.json:
        names = [name for name, _, _ in sets]
        print(f"{run.name} on Pascal Pons' test sets (error rate, %; search: {args.sims} simulations a move)")
        print(f"{'iteration':>9} {'hours':>6} {'':<13} " + " ".join(f"{name[5:]:>7}" for name in names))
        for kind, _ in kinds:
            for iteration in chosen:
                found = {name: r for k, i, _, name, r in rows if k == kind and i == iteration}
                print(f"{iteration:>9} {hours.get(iteration, float('nan')):>6.2f} {kind:<13} "
                      + " ".join(f"{100 * (1 - found[name].share):>7.1f}" for name in names))
    if args.plot:
        from ..checkpoint import atomic_write_text
        from ..svg import Series, line_chart

        series = []
        for index, (name, _, _) in enumerate(sets):
            for kind, _ in kinds:
                points = [(h, r) for k, _, h, n, r in rows if k == kind and n == name]
                series.append(Series(f"{name} ({pons_label(name)})" + (" (network)" if kind != "search" else ""),
                                     [h for h, _ in points], [100 * (1 - r.share) for _, r in points],
                                     low=[100 * r.error_interval[0] for _, r in points],
                                     high=[100 * r.error_interval[1] for _, r in points],
                                     dashed=kind != "search", dots=True, colour=index))
        atomic_write_text(Path(args.plot), line_chart(series, f"{run.name}: Pons' test sets", "training hours",
                                                      "error rate (%)", y_from_zero=True))
    return 0

