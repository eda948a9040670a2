"""python scripts/bench.py: throughput figures as one JSON object (see azero/throughput.py)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import torch

from ..checkpoint import atomic_write_text
from ..errors import UserError, cli_entry
from . import writable_folder_problem

RAY_GROUPS = ("ray", "ray_scaling")  # azero/distributed/throughput.py


@cli_entry
def main(argv=None) -> int:
    from .. import throughput

    parser = argparse.ArgumentParser(
        prog="bench.py",
        description="Measure throughput (game steps, UCT iterations, ...) and print one JSON object. "
        "Ratios of ours over the plain-Python baselines are measured in the same run.",
    )
    parser.add_argument("--only", action="append", metavar="GROUP",
                        help=f"run only this group (repeatable): {', '.join(throughput.GROUPS)} ({', '.join(throughput.NAMED_ONLY)} "
                        f"only when named: minutes); and, with Ray installed, {', '.join(RAY_GROUPS)} (only when "
                        "named: they start a local Ray instance)")
    parser.add_argument("--seconds", type=float, default=2.0, help="minimum length of each timed repeat (default 2)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per figure; the median is reported (default 3)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's choice)")
    parser.add_argument("--plot", metavar="SVG", help="with ray_scaling: draw positions/s against actors to this file")
    args = parser.parse_args(argv)
    if not (math.isfinite(args.seconds) and 0 < args.seconds <= 3600):
        parser.error("--seconds must be above 0 and at most 3600")
    if not 1 <= args.repeats <= 1000:
        parser.error("--repeats must be in 1..1000")
    if args.threads is not None and not 1 <= args.threads <= 1024:
        parser.error("--threads must be in 1..1024")
    if args.plot:  # before the bench, not after its minutes
        if "ray_scaling" not in (args.only or []):
            parser.error("--plot draws the ray_scaling group's figures: add --only ray_scaling")
        problem = writable_folder_problem(str(Path(args.plot).parent))
        if problem:
            parser.error(f"--plot {args.plot}: {problem}")
    if args.threads:
        torch.set_num_threads(args.threads)
    ray_groups = [g for g in args.only or [] if g in RAY_GROUPS]
    if ray_groups:  # before the other groups' minutes, not after them
        from ..distributed.cluster import require_ray

        require_ray(f"--only {ray_groups[0]}")
    out = throughput.run([g for g in args.only if g not in RAY_GROUPS] if args.only else None, args.seconds,
                    args.repeats) if not args.only or len(ray_groups) < len(args.only) else {}
    if ray_groups:
        from ..distributed import throughput as ray_throughput
        from ..distributed.cluster import disconnect

        try:
            for group in ray_groups:
                out[group] = ray_throughput.GROUPS[group](args.seconds, args.repeats)
        finally:
            disconnect()
    print(json.dumps(out, indent=2), flush=True)  # the figures first: a failed write of the plot keeps them
    if args.plot:
        try:
            atomic_write_text(args.plot, ray_throughput.scaling_svg(out["ray_scaling"]))
        except OSError as error:
            raise UserError(f"could not write {args.plot}: {error.strerror or error}") from None
    return 0
