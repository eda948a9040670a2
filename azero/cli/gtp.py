"""python scripts/gtp.py: a GTP engine for Go and Othello on stdin and stdout (see azero/protocols/gtp.py)."""

from __future__ import annotations

import argparse

from ..errors import cli_entry
from . import protocol_streams, torch_device, writable_folder_problem


@cli_entry
def main(argv=None) -> int:
    from ..checkpoint import load_checkpoint, pooled_heads
    from ..protocols.gtp import GTPEngine, serve
    from ..session import engine_maker, game_from_args, zoo_engine_maker
    from ..wire.gtp_text import check_game

    parser = argparse.ArgumentParser(
        prog="gtp.py",
        description="A Go or Othello engine speaking GTP version 2 on stdin/stdout (for GoGui, Sabaki, Quarry, "
        "GNU Go's twogtp, our match runner...). Give a trained checkpoint, or a game and any player spec, or a game "
        "alone to play the model zoo's network for it (azero zoo lists them).",
        epilog="Examples: --game go:size=9 --player uct:2000;  --game othello --player uct:1000;  "
        "--checkpoint runs/othello/latest.pt --sims 400",
    )
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--checkpoint", help="a Go or Othello checkpoint (plays its own board size and komi only; "
                     "with pooled heads, every board size)")
    who.add_argument("--player", metavar="SPEC", help="any player spec, e.g. uct:2000 (needs --game)")
    parser.add_argument("--game", metavar="SPEC", help="go:size=9,komi=7.5 or othello (boardsize may change the size)")
    parser.add_argument("--sims", type=int, help="simulations per move (at most, when a clock is set)")
    parser.add_argument("--seconds", type=float, help="seconds per move when no clock is set")
    parser.add_argument("--resign-threshold", type=float, metavar="WINRATE",
                        help="resign when the win-rate of the chosen move is below this, e.g. 0.05 (default: never)")
    parser.add_argument("--sgf", metavar="DIR", help="write each game as SGF into DIR (at clear_board and quit)")
    parser.add_argument("--device", default="cpu", type=torch_device, help="torch device for the network (default cpu)")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    if args.player and not args.game:
        parser.error("--player needs --game, e.g. --game go:size=9 or --game othello")
    if not args.player and not args.checkpoint and not args.game:
        parser.error("give --checkpoint PATH, --game SPEC with --player SPEC, or --game SPEC alone (the model "
                     "zoo's network for it)")
    if args.resign_threshold is not None and not 0 <= args.resign_threshold < 1:
        parser.error("--resign-threshold is a win-rate in [0, 1)")
    for name in ("sims", "seconds"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            parser.error(f"--{name} must be positive")
    game = game_from_args(args.game, args.checkpoint)
    check_game(game)
    problem = args.sgf and writable_folder_problem(args.sgf)  # now, not at the first clear_board
    if problem:
        parser.error(f"--sgf {args.sgf}: {problem}")

    if args.checkpoint or args.player:
        make_engine = engine_maker(args.player, checkpoint=args.checkpoint, simulations=args.sims,
                                   seconds=args.seconds, device=args.device, seed=args.seed)
    else:  # the zoo's network of each board size and komi the controller sets
        make_engine = zoo_engine_maker("--checkpoint PATH or --player SPEC", simulations=args.sims,
                                       seconds=args.seconds, device=args.device, seed=args.seed)
    # GTPEngine makes the first engine at once, so a bad player spec or checkpoint is reported now,
    # not at the first genmove
    any_size = bool(args.checkpoint) and pooled_heads(load_checkpoint(args.checkpoint))
    engine = GTPEngine(game, make_engine, fixed=bool(args.checkpoint), any_size=any_size,
                       resign_threshold=args.resign_threshold, sgf_folder=args.sgf)
    return serve(engine, *protocol_streams())
