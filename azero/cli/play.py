"""python scripts/play.py: play a checkpoint (or any player) in the terminal or the browser.

    play.py --game gomoku:size=8,k=5                            # you against the zoo's network (azero zoo)
    play.py --checkpoint runs/gomoku-.../latest.pt              # you against the network
    play.py --game gomoku:size=9,k=5 --opponent uct:2000        # you against any player
    play.py --game connect4 --opponent uct:1000 --versus uct:200   # watch two programs
    play.py --checkpoint PATH --gui                             # in the browser, with live analysis
    play.py --checkpoint PATH --analysis                        # JSON lines on stdin/stdout
"""

from __future__ import annotations

import argparse

from ..errors import cli_entry
from . import protocol_streams, torch_device

DEFAULT_PORT = 8765
HELP = """commands:
  a move as players write it (h8, d3, a column number such as 4, pass)
  hint   the engine's suggestion and its win-rate
  undo   take back your last move (and the engine's reply)
  new    start a new game
  board  show the board again
  quit   leave"""


def build_parser() -> argparse.ArgumentParser:
    from ..players import spec_help

    parser = argparse.ArgumentParser(
        prog="play.py",
        description="Play against a trained checkpoint or any player, in the terminal (default), in the browser "
        "(--gui), or answer analysis requests as JSON lines (--analysis).",
        epilog=f"{spec_help()}. " + HELP.replace("\n", " "),
    )
    parser.add_argument("--checkpoint", help="a checkpoint (latest.pt or checkpoints/iter-*.pt of a run)")
    parser.add_argument("--game", help="game spec, e.g. gomoku:size=9,k=5, or a zoo network's or preset's name, e.g. "
                        "gomoku8 or go9 (not needed with --checkpoint); alone, you play the zoo's network of that game")
    parser.add_argument("--opponent", metavar="SPEC", help="a player spec instead of a checkpoint, e.g. uct:2000 "
                        "or zoo:gomoku8:sims=400")
    parser.add_argument("--versus", metavar="SPEC",
                        help="a second program instead of you: watch the two play in the terminal (--opponent first)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--sims", type=int, help="simulations per engine move (default: the player's own)")
    budget.add_argument("--seconds", type=float, help="seconds per engine move")
    first = parser.add_mutually_exclusive_group()
    first.add_argument("--human-first", action="store_true", help="you move first (the default)")
    first.add_argument("--ai-first", action="store_true", help="the engine moves first")
    parser.add_argument("--gui", action="store_true", help="play in the browser (a local server on 127.0.0.1)")
    parser.add_argument("--port", type=int, help=f"with --gui: its port (default {DEFAULT_PORT}; 0 = any free port)")
    parser.add_argument("--no-browser", action="store_true", help="with --gui: do not open a browser window")
    parser.add_argument("--analysis", action="store_true", help="JSON-lines analysis engine on stdin/stdout")
    parser.add_argument("--device", default="cpu", type=torch_device, help="torch device for the network (default cpu)")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    return parser


@cli_entry
def main(argv=None) -> int:
    from ..session import Engine, game_from_args, zoo_player

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.checkpoint and args.opponent:
        parser.error("give --checkpoint or --opponent, not both")
    if not args.checkpoint and not args.opponent and not args.game:
        parser.error("give --checkpoint PATH, --game GAME (the zoo's network of it), or --game SPEC with "
                     "--opponent SPEC")
    if args.sims is not None and args.sims < 1:
        parser.error("--sims must be at least 1")
    if args.seconds is not None and args.seconds <= 0:
        parser.error("--seconds must be positive")
    if args.port is not None and not 0 <= args.port <= 65535:
        parser.error("--port must be in 0..65535 (0: any free port)")
    modes = [flag for flag, on in (("--gui", args.gui), ("--analysis", args.analysis), ("--versus", args.versus)) if on]
    if len(modes) > 1:
        parser.error(f"{' and '.join(modes)} are different ways to use the engine: give one of them")
    if modes and modes[0] != "--gui" and (args.ai_first or args.human_first):
        parser.error(f"--ai-first and --human-first choose your side in a game you play (the terminal or --gui), "
                     f"not with {modes[0]}" + (" (the --opponent moves first)" if modes[0] == "--versus" else ""))
    for flag, given in (("--no-browser", args.no_browser), ("--port", args.port is not None)):
        if given and not args.gui:
            parser.error(f"{flag} goes with --gui")
    game = game_from_args(args.game, args.checkpoint)
    if not args.checkpoint and not args.opponent:
        args.opponent = zoo_player(game)
    engine = Engine(game, args.opponent, checkpoint=args.checkpoint, simulations=args.sims, seconds=args.seconds,
                    device=args.device, seed=args.seed)
    if args.analysis:
        from ..protocols.analysis import serve

        return serve(engine, *protocol_streams())
    if args.gui:
        from ..web.server import run_gui

        port = DEFAULT_PORT if args.port is None else args.port
        return run_gui(game, engine, port=port, open_browser=not args.no_browser, human_first=not args.ai_first,
                       checkpoint=args.checkpoint, device=args.device)
    if args.versus:
        second = Engine(game, args.versus, simulations=args.sims, seconds=args.seconds, device=args.device,
                        seed=args.seed + 1)
        return watch(game, engine, second)
    protocol_streams()  # a byte the locale cannot decode is a move that cannot be read, not a crash
    return terminal(game, engine, human=1 if args.ai_first else 0)


def say(text: str = "") -> None:
    print(text, flush=True)


TYPED_LINE = 10_000  # characters a line typed to the terminal game may hold (a command is a word or two)


def typed_lines():
    """The lines typed to the terminal game: `ask(prompt)` gives the next one (without its
    ending), None at the end of input, or a TooLong. A terminal's own line is bounded (and
    input() keeps its line editing); a pipe's is read with bounded_lines."""
    import sys

    from ..wire.line_reader import bounded_lines

    piped = None if sys.stdin.isatty() else bounded_lines(sys.stdin, TYPED_LINE)

    def ask(prompt: str):
        if piped is None:
            try:
                return input(prompt)
            except EOFError:
                return None
        print(prompt, end="", flush=True)
        line = next(piped, None)
        return line.rstrip("\r\n") if isinstance(line, str) else line

    return ask


def watch(game, first, second) -> int:
    from ..players.base import RESIGN
    from ..session import GameSession, describe_analysis

    session = GameSession(game)
    say(game.render(session.state))
    engines = {0: first, 1: second}
    while not session.over:
        engine = engines[session.to_play]
        analysis = engine.think(session.state)
        if int(analysis.action[0]) == RESIGN:
            say(f"{engine.name} resigns: {engines[1 - session.to_play].name} wins")
            return 0
        info = describe_analysis(game, analysis)
        session.play(int(analysis.action[0]))
        proof = f", {info['proof']}" if "proof" in info else ""
        say(f"{engine.name} plays {info['best_move']} (win-rate {info['winrate']:.0%}{proof})")
        say(game.render(session.state))
    say(f"game over: {session.result_text()}")
    return 0


def terminal(game, engine, human: int) -> int:
    from ..errors import USER_ERRORS
    from ..players.base import RESIGN
    from ..session import GameSession, describe_analysis
    from ..wire.line_reader import TooLong

    ask = typed_lines()
    session = GameSession(game)
    say(f"{game.describe()}: you play "
        f"{'first' if human == 0 else 'second'} against {engine.name}. Type 'help' for commands.")
    say(game.render(session.state))
    stopped, why = None, ""  # the moves of a position where the engine resigned or could not move
    while True:
        if not session.over and session.to_play != human and stopped != session.actions:
            try:
                analysis = engine.think(session.state)
            except USER_ERRORS as error:  # an external engine that fails, a budget the tree cannot hold
                stopped, why = list(session.actions), f"{engine.name} cannot move: {error}"
            else:
                if int(analysis.action[0]) == RESIGN:
                    stopped, why = list(session.actions), f"{engine.name} resigns: you win"
                else:
                    info = describe_analysis(game, analysis)
                    session.play(int(analysis.action[0]))
                    line = f"{engine.name} plays {info['best_move']}"
                    if info["visits"]:
                        proof = f", {info['proof']}" if "proof" in info else ""
                        line += f" (its win-rate {info['winrate']:.0%}{proof})"
                    say(line)
                    say(game.render(session.state))
        over = session.over or stopped == session.actions
        if over:
            say(f"game over: {session.result_text() if session.over else why}. Type 'new', 'undo' or 'quit'.")
        text = ask("> " if over else "your move > ")
        if text is None:
            say()
            return 0
        if isinstance(text, TooLong):
            say(f"{text.message} (type 'help' for commands)")
            continue
        text = text.strip()
        command = text.lower()
        if not command:
            continue
        if command in ("quit", "exit", "q"):
            return 0
        if command in ("help", "?"):
            say(HELP)
        elif command == "new":
            session.new()
            stopped = None
            say(game.render(session.state))
        elif command == "board":
            say(game.render(session.state))
        elif command == "undo":
            # back to the last position where it was your move (the engine's reply is taken back too)
            turns = [ply for ply in range(len(session.actions)) if int(session.state_at(ply).to_play[0]) == human]
            if not turns:
                say("nothing to undo")
                continue
            session.undo(len(session.actions) - turns[-1])
            stopped = None
            say(game.render(session.state))
        elif command == "hint":
            if over:
                say("the game is over")
                continue
            try:
                analysis = engine.think(session.state)
            except USER_ERRORS as error:
                say(f"no hint: {error}")
                continue
            if int(analysis.action[0]) == RESIGN:
                say(f"hint: {engine.name} would resign here")
                continue
            info = describe_analysis(game, analysis)
            extra = f", win-rate for you {info['winrate']:.0%}" if info["visits"] else ""
            extra += f", {info['proof']}" if "proof" in info else ""
            say(f"hint: {info['best_move']}{extra}" + (f"; line: {' '.join(info['pv'][:6])}" if info["visits"] else ""))
        elif over:
            say("the game is over: type 'new', 'undo' or 'quit'")
        else:
            try:
                session.play(session.parse(text))
            except USER_ERRORS as error:
                say(f"{error} (type 'help' for commands)")
                continue
            say(game.render(session.state))
