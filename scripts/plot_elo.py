#!/usr/bin/env python
"""Elo against training time of a run, as an SVG picture (from its metrics.jsonl)."""

import argparse
import sys
from pathlib import Path

from azero.checkpoint import atomic_write_text
from azero.errors import cli_entry
from azero.plot import elo_svg, read_elo


@cli_entry
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="plot_elo.py", description=__doc__)
    parser.add_argument("run_dir", type=Path, help="a run folder (runs/GAME-TIME)")
    parser.add_argument("-o", "--output", type=Path, help="the SVG file to write (default: RUN_DIR/elo.svg)")
    parser.add_argument("--title", help="picture title (default: the run folder's name)")
    args = parser.parse_args(argv)
    svg = elo_svg(read_elo(args.run_dir), args.title or args.run_dir.name)
    output = args.output or args.run_dir / "elo.svg"
    atomic_write_text(output, svg)
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
