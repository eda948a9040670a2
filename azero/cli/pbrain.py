"""python scripts/pbrain.py: a Gomocup / Piskvork brain on stdin and stdout (see azero/protocols/piskvork.py)."""

from __future__ import annotations

import argparse

from ..errors import cli_entry
from . import protocol_streams, torch_device


@cli_entry
def main(argv=None) -> int:
    from ..checkpoint import load_checkpoint, pooled_heads
    from ..errors import USER_ERRORS, UserError
    from ..protocols.piskvork import serve
    from ..session import engine_maker, zoo_engine_maker
    from ..wire.piskvork_text import brain_game, check_brain_game

    parser = argparse.ArgumentParser(
        prog="pbrain.py",
        description="A gomoku brain speaking the Piskvork (Gomocup) protocol on stdin/stdout: START, RECTSTART, "
        "RESTART, BEGIN, TURN, BOARD, INFO, TAKEBACK, PLAY, END, ABOUT. Give a trained checkpoint or any player "
        "spec; with neither, each game is played by the model zoo's network for its board (azero zoo lists them).",
    )
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--checkpoint", help="a gomoku checkpoint (plays its own board size only; every size "
                     "5..19 with pooled heads)")
    who.add_argument("--player", metavar="SPEC", help="any player spec, e.g. uct:2000 (plays every size 5..19; "
                     "the budget it states holds, the manager's clock bounds it)")
    parser.add_argument("--sims", type=int, help="simulations per move at most (the clock may stop it sooner)")
    parser.add_argument("--device", default="cpu", type=torch_device, help="torch device for the network (default cpu)")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    if args.sims is not None and args.sims <= 0:
        parser.error("--sims must be positive")
    fixed, any_size = None, False
    if args.checkpoint:
        import games

        data = load_checkpoint(args.checkpoint)
        fixed, any_size = games.make_from_spec(data["game"]), pooled_heads(data)
        try:
            check_brain_game(fixed)
        except UserError:
            parser.error(f"{args.checkpoint} is a checkpoint of {fixed.spec}, not of five-in-a-row gomoku")

    if args.checkpoint or args.player:
        make_engine = engine_maker(args.player, checkpoint=args.checkpoint, simulations=args.sims,
                                   device=args.device, seed=args.seed)
        first_game = fixed or brain_game(15, 15, False)
    else:  # the zoo's networks, one for each board a manager starts
        make_engine = zoo_engine_maker("--checkpoint PATH or --player SPEC", simulations=args.sims,
                                       device=args.device, seed=args.seed)
        first_game = zoo_brain_game(parser)
    # the first engine is made now, for the game a manager most likely starts (the checkpoint's own,
    # 15 x 15, or a board the zoo has a network for), so a bad player spec or budget is an error here
    # and not at every START
    try:
        made = [(first_game, make_engine(first_game))]
    except USER_ERRORS as error:
        parser.error(str(error))

    def engine_for(game):
        if made and made[0][0] == game:
            return made.pop()[1]
        made.clear()
        return make_engine(game)

    return serve(engine_for, *protocol_streams(), fixed=fixed, any_size=any_size)


def zoo_brain_game(parser):
    """The brain game of the zoo's gomoku network for the largest board (15 x 15 where it has one),
    or a parser error saying the zoo has none."""
    from .. import zoo
    from ..errors import UserError
    from ..wire.piskvork_text import check_brain_game

    playable = []
    for entry in zoo.entries():
        try:
            check_brain_game(entry.game)
        except UserError:
            continue
        playable.append(entry.game)
    if not playable:
        parser.error("the model zoo has no five-in-a-row gomoku network; give --checkpoint PATH or --player SPEC")
    return max(playable, key=lambda game: game.num_actions)

