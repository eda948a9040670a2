"""python scripts/train.py: train a network by self-play (see azero/loop.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config import MAX_ITERATIONS, MAX_MINUTES
from ..errors import cli_entry
from . import torch_device

MAX_ACTORS = 1024  # each asks Ray for a share of the cluster's CPUs, which must stay above Ray's 0.0001


@cli_entry
def main(argv=None) -> int:
    from .. import config as config_module
    from ..config import load_config
    from ..loop import train

    parser = argparse.ArgumentParser(
        prog="train.py",
        description="Train an agent by self-play: iterations of self-play, training and evaluation against "
        "random-rollout UCT, with checkpoints, TensorBoard logs and metrics.jsonl in a run folder. "
        "Stop with Ctrl-C at any time; run again with --run-dir to continue.",
        epilog="Examples: train.py --game gomoku | train.py --game tictactoe --minutes 5 | "
        "train.py --game gomoku --set search.simulations=128 --set network.blocks=6 | "
        "train.py --run-dir runs/gomoku-20261122-150000 (resume) | "
        "train.py --game gomoku15 --hours 24 --minutes 170 (a long run: then --run-dir RUN --minutes 170 each "
        "sitting) | "
        "train.py --game gomoku --ray (self-play on Ray actors) | "
        "train.py --game gomoku --ray-address auto --actors 32 (on a Ray cluster). "
        "See every config key with --help-config. "
        "One command at a time may write a run folder: a second is refused, naming the first (its host, pid "
        "and start). "
        "Exit status: 0 the budget is done; 2 an error in what was asked, or a training that diverged (one line; "
        "the last good iteration is kept); 130 stopped by Ctrl-C, 143 by SIGTERM (the last finished iteration "
        "is kept; run again with --run-dir to continue).",
    )
    parser.add_argument("--game", help="game whose preset to use (configs/GAME.toml), e.g. gomoku, gomoku15, tictactoe")
    parser.add_argument("--config", metavar="PATH", help="a TOML config file instead of a preset")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, e.g. --set search.simulations=128 (repeatable)")
    parser.add_argument("--run-dir", type=Path, help="run folder; an existing one is resumed with its own config, "
                        "and --game/--config/--set/--device/--seed given with it must agree with that config "
                        "(default: runs/GAME-TIME)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--minutes", type=float, help="stop after this many minutes (this sitting)")
    budget.add_argument("--iterations", type=int, help="stop once the run has completed this many iterations in all")
    parser.add_argument("--hours", type=float, help="stop once the run has trained this many hours in all, over "
                        "every sitting; kept with the run, so a resumed run stops there too unless --hours says "
                        "otherwise (with --minutes: a long run in sittings, e.g. --hours 24 --minutes 170)")
    parser.add_argument("--init-from", metavar="CHECKPOINT", help="start a new run's network from this checkpoint's "
                        "(or a zoo network's), e.g. a smaller board's run with network.heads=pooled: a size "
                        "curriculum; the same [network] section is needed")
    parser.add_argument("--device", type=torch_device, help="torch device, cpu or cuda (overrides run.device)")
    parser.add_argument("--seed", type=int, help="random seed (overrides run.seed)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars (log lines only)")
    ray = parser.add_argument_group("Ray (pip install -e '.[ray]')", "self-play on actors, evaluation on an actor, "
                                    "the learner in this process; a run resumes with or without Ray")
    ray.add_argument("--ray", action="store_true", help="start a local Ray instance and play self-play on its actors")
    ray.add_argument("--ray-address", metavar="ADDRESS", help="join a Ray cluster instead (implies --ray): auto for "
                     "the cluster this machine joined with `ray start`, or HOST:PORT of its head node")
    ray.add_argument("--actors", type=int, metavar="N", help="self-play actors (default: one per core of the "
                     "cluster, less one for the learner)")
    ray.add_argument("--actor-device", choices=("cpu", "cuda"), default=None,
                     help="the actors' torch device (default cpu); cuda gives each an equal share of the GPUs")
    parser.add_argument("--help-config", action="store_true", help="list every config key with its default and exit "
                        "(with --game or --config, and --set, --device, --seed: the values that run would train with)")
    args = parser.parse_args(argv)
    if args.game and args.config:
        parser.error("give --game or --config, not both")
    overrides = list(args.set)
    if args.device:
        overrides.append(f"run.device={args.device}")
    if args.seed is not None:
        overrides.append(f"run.seed={args.seed}")

    def chosen_config():
        """The config --game or --config with --set, --device and --seed give."""
        return load_config(game=None if args.config else args.game, path=args.config, overrides=overrides)

    if args.help_config:
        print(config_module.help_text(chosen_config() if args.game or args.config else None))
        return 0
    if args.minutes is not None and not 0 < args.minutes <= MAX_MINUTES:
        parser.error(f"--minutes must be above 0 and at most {MAX_MINUTES:,} (about two years; without a budget a "
                     "run trains until stopped)")
    if args.hours is not None and not 0 < args.hours <= MAX_MINUTES / 60:
        parser.error(f"--hours must be above 0 and at most {MAX_MINUTES // 60:,}")
    if args.iterations is not None and not 1 <= args.iterations <= MAX_ITERATIONS:
        parser.error(f"--iterations must be in 1..{MAX_ITERATIONS:,} (without a budget a run trains until stopped)")
    use_ray = args.ray or args.ray_address is not None
    if not use_ray and (args.actors is not None or args.actor_device):
        parser.error("--actors and --actor-device are for self-play on Ray: add --ray")
    if args.actors is not None and not 1 <= args.actors <= MAX_ACTORS:
        parser.error(f"--actors must be in 1..{MAX_ACTORS:,}")
    try:  # a name too long, or a folder not ours to enter, is said in one line
        resuming = args.run_dir is not None and (args.run_dir / "config.toml").exists()
    except OSError as error:
        parser.error(f"--run-dir {args.run_dir}: {error.strerror or error}")
    config = None
    flags = bool(args.game or args.config or args.set or args.device or args.seed is not None)
    if flags or not resuming:  # resuming with flags: they must agree with the run's config (azero/loop.py)
        if not args.game and not args.config:
            if resuming:
                parser.error("--set, --device and --seed come with --game or --config (the command that started "
                             f"the run), or continue with the run's own config: --run-dir {args.run_dir} alone")
            parser.error("give --game NAME (a preset in configs/) or --config PATH, or --run-dir of a run to resume")
        config = chosen_config()
    if not use_ray:
        train(config, args.run_dir, minutes=args.minutes, iterations=args.iterations, hours=args.hours,
              init_from=args.init_from,
              progress=not args.no_progress, command=[sys.executable, *sys.argv])
        return 0
    from ..distributed.cluster import connect, disconnect

    connect(args.ray_address)  # before the run folder exists: a failure leaves nothing behind
    try:
        from ..distributed.source import RaySelfPlay

        train(config, args.run_dir, minutes=args.minutes, iterations=args.iterations, hours=args.hours,
              init_from=args.init_from,
              progress=not args.no_progress, command=[sys.executable, *sys.argv],
              source=lambda run: RaySelfPlay(run, actors=args.actors, actor_device=args.actor_device or "cpu"))
    finally:
        disconnect()
    return 0
