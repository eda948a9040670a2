"""Elo against training time of a run, as an SVG picture (from its metrics.jsonl)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..checkpoint import atomic_write_text
from ..errors import UserError, cli_entry
from ..plot import elo_svg, read_earlier_stages, read_elo, read_sittings
from . import writable_folder_problem


@cli_entry
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="plot_elo.py", description=__doc__)
    parser.add_argument("run_dir", type=Path, help="a run folder (runs/GAME-TIME)")
    parser.add_argument("-o", "--output", type=Path, help="the SVG file to write (default: RUN_DIR/elo.svg)")
    parser.add_argument("--title", help="picture title (default: the run folder's name)")
    parser.add_argument("--own-time", action="store_true",
                        help="a run begun from another run's network (train.py --init-from): its own training "
                             "time only (default: the earlier stages' hours first, shaded)")
    args = parser.parse_args(argv)
    earlier = [] if args.own_time else read_earlier_stages(args.run_dir)
    svg = elo_svg(read_elo(args.run_dir), args.title or args.run_dir.name, sittings=read_sittings(args.run_dir),
                  earlier=earlier)
    output = args.output or args.run_dir / "elo.svg"
    problem = writable_folder_problem(str(output.parent))
    if problem:
        parser.error(f"--output {output}: {problem}")
    try:
        atomic_write_text(output, svg)
    except OSError as error:  # e.g. a folder of that name, or the disk full
        raise UserError(f"could not write {output}: {error.strerror or error}") from None
    print(output)
    return 0
