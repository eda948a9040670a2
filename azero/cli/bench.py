"""python scripts/bench.py: throughput figures as one JSON object (see azero/bench.py)."""

from __future__ import annotations

import argparse
import json

import torch

from ..errors import cli_entry


@cli_entry
def main(argv=None) -> int:
    from .. import bench

    parser = argparse.ArgumentParser(
        prog="bench.py",
        description="Measure throughput (game steps, UCT iterations, ...) and print one JSON object. "
        "Ratios of ours over the plain-Python baselines are measured in the same run.",
    )
    parser.add_argument("--only", action="append", metavar="GROUP",
                        help=f"run only this group (repeatable): {', '.join(bench.GROUPS)}")
    parser.add_argument("--seconds", type=float, default=2.0, help="minimum length of each timed repeat (default 2)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per figure; the median is reported (default 3)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's choice)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(json.dumps(bench.run(args.only, args.seconds, args.repeats), indent=2))
    return 0
