"""python scripts/ablate.py (also `azero ablate`): training arms of equal wall time, judged by fixed yardsticks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import cli_entry, exists
from . import writable_folder_problem


def build_parser() -> argparse.ArgumentParser:
    from ..ablation.plan import DEFAULT_OPENING_PLIES, DEFAULT_YARDSTICKS

    defaults = "; ".join(f"{preset}: {', '.join(sticks)}" for preset, sticks in DEFAULT_YARDSTICKS.items())
    parser = argparse.ArgumentParser(
        prog="ablate.py",
        description="Run an ablation: each arm (the game's preset plus --set overrides) trains for the same "
        "budget with each seed, one run after another (never two at once), then each final network is "
        "measured against the game's fixed yardsticks, with 95% intervals. Writes OUT/ablation.md (a "
        "Markdown table), OUT/elo.svg (Elo against training minutes, the arms side by side) and "
        "OUT/ablation.json, and prints every command it runs. Stop it at any time; run it again with "
        "--out OUT alone to continue (arms or seeds may also be added to the same plan, and head-to-head matches "
        "against the first arm).",
        epilog=f"Yardsticks by preset: {defaults}. Example: ablate.py --game connect4 --minutes 60 --seeds 0,1 "
        "--arm base: --arm gumbel:search.algorithm=gumbel --out runs/ablate-c4. "
        "One command at a time may run an ablation folder (a second is refused, naming the first). "
        "Exit status: 0 all steps done; 2 an error (one line); 130 stopped by Ctrl-C, 143 by SIGTERM "
        "(what finished is kept; run it again to continue).",
    )
    parser.add_argument("--out", type=Path, required=True, help="the ablation's folder (new, or one to continue)")
    parser.add_argument("--game", help="the preset every arm starts from (configs/GAME.toml)")
    parser.add_argument("--arm", action="append", default=[], metavar="NAME:KEY=VALUE,...",
                        help="an arm: a name and its --set overrides, e.g. base: or "
                        "gumbel:search.algorithm=gumbel,search.simulations=16 (repeatable)")
    parser.add_argument("--seeds", help="run.seed of each arm's runs, e.g. 0,1 (default 0)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--minutes", type=float, help="minutes of training per run")
    budget.add_argument("--iterations", type=int, help="iterations of training per run")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="an override for every arm, e.g. run.threads=2 (repeatable)")
    parser.add_argument("--yardstick", action="append", default=None, metavar="SPEC",
                        help="what the final networks are measured against, instead of the preset's: "
                        "judge[:positions=300,min_plies=6,max_plies=22] or a player spec to play a match "
                        "against (repeatable)")
    parser.add_argument("--games", type=int, help="games per match yardstick (default 40)")
    parser.add_argument("--sims", type=int, help="the networks' simulations a move in the yardsticks "
                        "(default: the preset's evaluation.simulations)")
    parser.add_argument("--opening-plies", type=int, metavar="N",
                        help="random moves that open each match game, each opening played with both colours "
                        "(default: " + ", ".join(f"{n} for {preset}" for preset, n in DEFAULT_OPENING_PLIES.items())
                        + ", else 0)")
    parser.add_argument("--head-to-head", type=int, metavar="GAMES",
                        help="also play each arm's final network against the first arm's of the same seed, GAMES "
                        "games opened by random plies (at least 2) with both colours; may be added when "
                        "continuing (--out OUT --head-to-head GAMES)")
    parser.add_argument("--dry-run", action="store_true", help="print what is left to do and exit")
    return parser


def _seeds(text: str) -> list[int]:
    from ..errors import UserError

    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UserError(f"--seeds {text!r}: write whole numbers separated by commas, e.g. 0,1") from None


@cli_entry
def main(argv=None) -> int:
    import functools

    from ..ablation import Ablation, make_plan

    log = functools.partial(print, flush=True)

    parser = build_parser()
    args = parser.parse_args(argv)
    planned = args.game or args.arm or args.minutes is not None or args.iterations is not None
    if planned:
        if not args.game:
            parser.error("give --game PRESET with the arms" if not exists(args.out / "ablation.json") else
                         "continuing an ablation keeps its plan: give --out alone; to add arms or seeds, give the "
                         "whole plan again (--game, every --arm, the budget) with them")
        plan = make_plan(args.game, args.arm, _seeds("0" if args.seeds is None else args.seeds), minutes=args.minutes,
                         iterations=args.iterations, overrides=args.set, yardsticks=args.yardstick,
                         games=40 if args.games is None else args.games,
                         simulations=args.sims, opening_plies=args.opening_plies,
                         head_to_head=args.head_to_head or 0)
        ablation = Ablation(args.out, plan, log=log)
    else:
        if args.set or args.yardstick or args.sims is not None or args.games is not None \
                or args.opening_plies is not None or args.seeds is not None:
            parser.error("continuing an ablation keeps its plan: give --out alone (or with --head-to-head); "
                         "to add arms or seeds, give the whole plan again with them")
        ablation = Ablation.open(args.out, log=log)
        if args.head_to_head is not None:
            ablation.add_head_to_head(args.head_to_head)
    todo = ablation.pending()
    if args.dry_run:
        print("\n".join(todo) if todo else "nothing left to do")
        return 0
    problem = writable_folder_problem(str(args.out))  # now, not when the first run's results come
    if problem:
        parser.error(f"--out {args.out}: {problem}")
    print(f"ablation in {args.out}: {len(todo)} steps left", flush=True)
    ablation.run()
    print(f"table: {args.out / 'ablation.md'}; plot: {args.out / 'elo.svg'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
