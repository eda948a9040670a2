"""python scripts/planning.py EXPERIMENT (also `azero planning`): one of the book's chapter-8 planning
experiments (Dyna-Q, Dyna-Q+, prioritized sweeping, expected and sample updates, trajectory
sampling, RTDP), written as an SVG plot and a Markdown table with 95% intervals."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..checkpoint import atomic_write_text
from ..errors import UserError, cli_entry, regular_file
from ..tabular import EXPERIMENTS, PlanningError, parse_maze
from . import writable_folder_problem

MAX_RUNS = 1000  # (trajectory sampling holds every task in memory: 1,000 tasks of 10,000 states take about 240 MB)


def cpu_model() -> str:
    """The processor's name as /proc/cpuinfo gives it ('unknown processor' elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown processor"


def build_parser() -> argparse.ArgumentParser:
    listing = "; ".join(f"{name}: {entry.description} (default {entry.runs} {entry.repeats})"
                        for name, entry in EXPERIMENTS.items())
    parser = argparse.ArgumentParser(
        prog="planning.py", description=__doc__,
        epilog=f"Experiments: {listing}. `all` runs them one after the other. Example: "
        "python scripts/planning.py dyna-maze --runs 30 --out docs/img")
    parser.add_argument("experiment", metavar="EXPERIMENT", help=f"one of {', '.join(EXPERIMENTS)}, or all")
    parser.add_argument("--runs", type=int, help="repetitions to average over (default: the book's count, or ours "
                        "where the book gives none; see below); at least 2, for the intervals")
    parser.add_argument("--out", type=Path, default=Path("planning"),
                        help="folder for the pictures and tables (default ./planning)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random numbers (default 0)")
    parser.add_argument("--maze", type=Path, help="a text map (. open, # wall, S start, G goal) instead of the "
                        "Dyna maze, for dyna-maze and sweeping")
    return parser


def run_one(name: str, args, maze) -> Path:
    """Run one experiment, write its files, print its table; the table's path."""
    entry = EXPERIMENTS[name]
    runs = args.runs or entry.runs
    options = {"runs": runs, "seed": args.seed}
    if maze is not None:
        options["maze"] = maze
    began = time.perf_counter()
    result = entry.run(**options)
    seconds = time.perf_counter() - began
    command = f"python scripts/planning.py {name} --runs {runs} --seed {args.seed}" + \
        (f" --maze {args.maze}" if maze is not None else "")
    duration = f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    text = (f"# {result.title}\n\n{result.table}\n`{command}`: {duration} on an "
            f"{cpu_model()}.\n")
    try:
        for file_name, svg in result.pictures.items():
            atomic_write_text(args.out / file_name, svg)
        table = args.out / f"planning-{name}.md"
        atomic_write_text(table, text)
    except OSError as error:
        raise UserError(f"could not write into {args.out}: {error.strerror or error}") from None
    print(text)
    for file_name in [*result.pictures, table.name]:
        print(args.out / file_name)
    return table


@cli_entry
def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    names = list(EXPERIMENTS) if args.experiment == "all" else [args.experiment]
    if names[0] not in EXPERIMENTS:
        parser.error(f"unknown experiment {args.experiment!r}; choose from {', '.join(EXPERIMENTS)} or all")
    if args.runs is not None and not 2 <= args.runs <= MAX_RUNS:
        parser.error(f"--runs must be in 2..{MAX_RUNS:,}")
    if args.seed < 0:
        parser.error("--seed must be 0 or more")
    maze = None
    if args.maze is not None:
        if not all(EXPERIMENTS[name].takes_maze for name in names):
            parser.error("--maze is for dyna-maze and sweeping only")
        regular_file(args.maze, "maze map")
        try:
            maze = parse_maze(args.maze.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise UserError(f"{args.maze} is not a text file") from None
        except PlanningError as error:
            raise UserError(f"{args.maze}: {error}") from None
    problem = writable_folder_problem(str(args.out))
    if problem:
        parser.error(f"--out {args.out}: {problem}")
    try:
        for name in names:
            run_one(name, args, maze)
    except PlanningError as error:
        raise UserError(str(error)) from None
    return 0
