"""GTP (Go Text Protocol, version 2) both ways: our engine for GTP controllers, and external GTP engines as players.

The engine (`serve`, scripts/gtp.py) answers on stdin/stdout:
protocol_version, name, version, known_command, list_commands, quit, boardsize,
clear_board, komi, play, genmove, reg_genmove, undo, showboard, final_score,
time_settings, time_left, kgs-time_settings, printsgf. Replies are "= answer" or "? message",
each followed by an empty line, with the command's numeric id echoed ("=5 D4").
A command that cannot be carried out (unknown command, bad colour or vertex,
illegal move, a board size a checkpoint does not play...) gets "? message" and
the engine keeps running.

Vertices: Go the GTP way (columns A..T without I, rows counted from the
bottom, `pass`); Othello the way Othello GTP programs write them (GRhino's
gtp-rhino): `boardsize 8`, columns a..h, row 1 at the top (black's openings are
d3, c4, f5, e6), black moves first. Upper or lower case are both read; moves
are written in upper case, like GNU Go and GRhino do.

Turns: GTP may ask any colour to play or move. When the colour is not the side
to move, the side to move passes first if a pass is legal (always in Go; in
Othello only when it has no move, which is how GRhino's implicit passes look),
otherwise the command fails. `undo` takes back the last move together with the
passes put in for it. `komi` is ignored in Othello (GRhino does the same).
`final_score` scores the current position: Go by area (Tromp-Taylor, komi
included, every stone counted alive), Othello by disc difference. With --sgf
the game is written as SGF at clear_board, boardsize and quit.

Time: with `time_settings` or `kgs-time_settings` (none, absolute, canadian, or
byoyomi: Japanese periods) and `time_left`, the engine searches until a
deadline: the time left shared over the moves it expects to play, the byo-yomi
period over its stones, or one Japanese period; without them it uses its own
budget. Everything slow (loading the network, compiling the search) happens at
start-up and at `boardsize` or `komi`, never inside a genmove.
`genmove` answers `resign` when the win-rate of its move is below the resign
threshold (off unless given).
External GTP engines as players live in azero/players/gtp_player.py.
"""

from __future__ import annotations

import datetime
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from games import Game, GameError, State
from games.options import is_whole_number

from .. import __version__
from ..errors import UserError, internal_error
from ..network import plays
from ..players.base import MAX_SECONDS, RESIGN
from ..session import Engine, GameSession, describe_analysis
from ..sgf import black_margin, resignation_text, score_text, to_sgf, write_sgf
from ..wire.gtp_text import COLOUR_NAMES, check_game, format_vertex, parse_colour, parse_vertex
from ..wire.line_reader import TooLong, serve_lines

COMMANDS = (
    "protocol_version", "name", "version", "known_command", "list_commands", "quit", "boardsize", "clear_board",
    "komi", "play", "genmove", "reg_genmove", "undo", "showboard", "final_score", "time_settings", "time_left",
    "kgs-time_settings", "printsgf",
)
MARGIN = 0.85  # share of the allotted time spent searching
OVERHEAD = 0.1  # seconds kept for everything else


# -- the engine --------------------------------------------------------------------------------


@dataclass
class Clock:
    """GTP time settings (seconds) and the time left per colour (seconds, stones; 0 stones = main time).

    Canadian byo-yomi (GTP's time_settings, kgs-time_settings canadian): after the main time,
    `byo_yomi_stones` moves in each period of `byo_yomi_time`. Japanese byo-yomi
    (kgs-time_settings byoyomi): after the main time, `periods` periods of `byo_yomi_time`
    each, one move per period, a period lost only when a move overruns it; time_left then
    gives the current period's time and the periods left in place of stones.
    """

    main_time: float | None = None
    byo_yomi_time: float = 0.0
    byo_yomi_stones: int = 0
    periods: int = 0  # Japanese byo-yomi's periods (0: Canadian or none)
    left: dict[int, tuple[float, int]] = field(default_factory=dict)

    def seconds(self, colour: int, moves_to_play: int) -> float | None:
        """Search time for `colour`'s move, or None without a time limit."""
        if self.periods > 0:
            time_left, periods_left = self.left.get(colour, (self.main_time, 0))
            if periods_left > 0:  # in byo-yomi: one move in this period
                allowed = min(time_left, self.byo_yomi_time)
            else:  # main time, with a period to spend on each move after it
                allowed = time_left / max(moves_to_play, 1) + self.byo_yomi_time
            return min(max(0.01, allowed * MARGIN - OVERHEAD), MAX_SECONDS)
        if self.main_time is None or (self.byo_yomi_stones == 0 and self.byo_yomi_time > 0):
            return None  # no settings, or GTP's "no time limit" (byo-yomi time without stones)
        time_left, stones = self.left.get(colour, (self.main_time, 0))
        if stones > 0:  # in byo-yomi: this period's time over its stones
            allowed = time_left / stones
        else:
            period = self.byo_yomi_time / self.byo_yomi_stones if self.byo_yomi_stones else 0.0
            allowed = time_left / max(moves_to_play, 1) + period
        return min(max(0.01, allowed * MARGIN - OVERHEAD), MAX_SECONDS)


def _time_numbers(texts: list[str], kinds: tuple, usage: str) -> list:
    """GTP time values: finite, not negative, seconds up to a year and stones up to a million."""
    values = []
    for text, kind in zip(texts, kinds):
        try:
            value = kind(text)
        except ValueError:
            raise GameError(f"syntax error: {usage} takes numbers") from None
        limit = 1_000_000 if kind is int else 366 * 24 * 3600.0
        if not 0 <= value <= limit:  # (false for nan too)
            raise GameError(f"syntax error: {text} is out of range in {usage}; allowed: 0..{limit:,.0f}")
        values.append(value)
    return values


KEPT_ENGINES = 4  # engines kept for the last board sizes and komis used (one each)


class GTPEngine:
    """One GTP session: the game, its moves, the engine that thinks."""

    def __init__(self, game: Game, make_engine: Callable[[Game], Engine], *, fixed: bool = False,
                 any_size: bool = False, resign_threshold: float | None = None,
                 sgf_folder: str | Path | None = None, write: Callable[[str], None] = print):
        check_game(game)
        # a checkpoint plays its own board size and komi only; with pooled heads, every board size
        self.fixed = game if fixed else None
        self.any_size = any_size
        self.make_engine = make_engine
        self.resign_threshold = resign_threshold
        self.sgf_folder = Path(sgf_folder) if sgf_folder else None
        self.write = write
        self.engines: dict[str, Engine] = {}
        self.clock = Clock()
        self.saved = 0
        self._new_game(game)

    # -- the position ------------------------------------------------------------------------------
    @property
    def game(self) -> Game:
        return self.session.game

    @property
    def engine(self) -> Engine:
        return self._engine_for(self.game)

    def _engine_for(self, game: Game) -> Engine:
        spec = game.spec
        if spec not in self.engines:
            if len(self.engines) >= KEPT_ENGINES:  # a controller stepping through komis holds a few, not all
                del self.engines[next(iter(self.engines))]
            self.engines[spec] = self.make_engine(game)
        self.engines[spec] = self.engines.pop(spec)  # most recently used last
        return self.engines[spec]

    def _new_game(self, game: Game) -> None:
        # the engine for a new board size or komi is made (and prepared) now, not at genmove, and
        # first: where it cannot be made (a checkpoint of another game) the game so far stays
        self._engine_for(game)
        self.session = GameSession(game)  # (its `inserted`: the passes this engine put in, undone with the next move)
        self.engine_colours: set[int] = set()
        self.resigned: int | None = None

    def _remake(self, refusal: str, **options) -> Game:
        """The game with other options; GameError starting with `refusal` if it cannot be played."""
        try:
            game = self.game.with_options(**options)
        except GameError as error:
            raise GameError(f"{refusal}: {error}") from None
        if self.fixed is not None and not plays(self.fixed, game, any_size=self.any_size):
            boards = " on boards of any size" if self.any_size else ""
            raise GameError(f"{refusal}: this network plays {self.fixed.spec}{boards} only")
        return game

    def _turn(self, colour: int) -> tuple[State, bool]:
        """Check `colour` may move now: the position it moves in, and True if the side to move
        must pass first (GTP lets a controller give one colour two moves in a row)."""
        if self.session.over:
            raise GameError("illegal move: the game is over")
        state = self.session.state
        if colour == self.session.to_play:
            return state, False
        name = COLOUR_NAMES[self.session.to_play]
        if self.game.pass_action not in self.session.legal():
            raise GameError(f"illegal move: it is {name}'s turn and {name} has a move, so cannot pass")
        state = self.game.inserted_pass(state)
        if bool(state.done[0]):
            raise GameError(f"illegal move: it is {name}'s turn, and a pass by {name} would end the game")
        return state, True

    # -- commands --------------------------------------------------------------------------------
    def handle(self, line: str) -> bool:
        """Carry out one line of input; False after quit."""
        text = "".join(c for c in line.split("#", 1)[0] if c >= " " or c == "\t").replace("\t", " ").strip()
        if not text:
            return True
        words = text.split()
        number = ""
        if is_whole_number(words[0]):  # an id
            number = words.pop(0)
            if not words:
                return self._reply(number, False, "syntax error: an id without a command")
        command, args = words[0].lower(), words[1:]
        if command not in COMMANDS:
            return self._reply(number, False, f"unknown command {words[0]!r}")
        try:
            answer = getattr(self, f"gtp_{command.replace('-', '_')}")(args)
        except (GameError, UserError) as error:
            return self._reply(number, False, str(error))
        except Exception as error:  # a bug must not end the session either
            return self._reply(number, False, internal_error(error))
        self._reply(number, True, answer or "")
        return command != "quit"

    def refuse(self, line: TooLong) -> None:
        """Answer a line too long to read with '?id message' (the id read from its start)."""
        words = line.start.split(None, 1)
        self._reply(words[0] if words and is_whole_number(words[0]) else "", False, line.message)

    def _reply(self, number: str, ok: bool, text: str) -> bool:
        """Write '=id answer' or '?id message' and the empty line that ends it."""
        lines = [line for line in text.split("\n") if line.strip()]  # no empty line inside a reply
        if text.startswith("\n"):  # a free-form block (showboard) starts on its own line
            body = "\n" + "\n".join(lines)
        else:
            body = " " + "\n".join(lines) if lines else ""
        self.write(("=" if ok else "?") + number + body + "\n\n")
        return True

    @staticmethod
    def _arguments(args: list[str], count: int, usage: str) -> list[str]:
        if len(args) != count:
            raise GameError(f"syntax error: write {usage}")
        return args

    def gtp_protocol_version(self, args):
        return "2"

    def gtp_name(self, args):
        return "azero"

    def gtp_version(self, args):
        return f"{__version__} {self.engine.name}"

    def gtp_known_command(self, args):
        return "true" if self._arguments(args, 1, "known_command NAME")[0].lower() in COMMANDS else "false"

    def gtp_list_commands(self, args):
        return "\n".join(COMMANDS)

    def gtp_quit(self, args):
        self.finish()

    def gtp_boardsize(self, args):
        (size,) = self._arguments(args, 1, "boardsize SIZE")
        if not is_whole_number(size):
            raise GameError(f"syntax error: boardsize {size!r} is not a number")
        game = self._remake("unacceptable size", size=int(size))
        self._engine_for(game)  # (before the game so far is saved and cleared)
        self._save()
        self._new_game(game)

    def gtp_clear_board(self, args):
        self._save()
        self._new_game(self.game)

    def gtp_komi(self, args):
        (text,) = self._arguments(args, 1, "komi NUMBER")
        try:
            komi = float(text)
        except ValueError:
            raise GameError(f"syntax error: komi {text!r} is not a number") from None
        if self.game.komi is None or komi == self.game.komi:
            return  # a game without komi (Othello) ignores it
        game = self._remake("komi not supported", komi=komi)
        moves, inserted = list(self.session.actions), list(self.session.inserted)
        colours, resigned = self.engine_colours, self.resigned
        self._new_game(game)
        self.session = GameSession.of(game, moves, inserted)
        self.engine_colours, self.resigned = colours, resigned

    def gtp_undo(self, args):
        if not self.session.actions:
            raise GameError("cannot undo: no moves")
        self.session.undo(1)
        while self.session.inserted and self.session.inserted[-1]:
            self.session.undo(1)
        self.resigned = None

    def gtp_showboard(self, args):
        return "\n" + self.game.render(self.session.state)

    def gtp_final_score(self, args):
        return score_text(black_margin(self.game, self.session.state))

    def gtp_time_settings(self, args):
        usage = "time_settings MAIN_TIME BYO_YOMI_TIME BYO_YOMI_STONES"
        main, byo_time, stones = _time_numbers(self._arguments(args, 3, usage), (float, float, int), usage)
        self.clock = Clock(main, byo_time, stones)

    def gtp_kgs_time_settings(self, args):
        usage = ("kgs-time_settings none | absolute MAIN_TIME | byoyomi MAIN_TIME PERIOD_TIME PERIODS | "
                 "canadian MAIN_TIME BYO_YOMI_TIME STONES")
        counts = {"none": 1, "absolute": 2, "byoyomi": 4, "canadian": 4}
        kind = args[0].lower() if args else ""
        if kind not in counts or len(args) != counts[kind]:
            raise GameError(f"syntax error: write {usage}")
        values = _time_numbers(args[1:], (float, float, int), f"kgs-time_settings {kind}")
        main, period, count = values + [0.0, 0.0, 0][len(values):]
        if kind == "none":
            self.clock = Clock()
        elif kind == "byoyomi" and count > 0:
            self.clock = Clock(main, period, 0, periods=count)
        elif kind == "canadian":
            self.clock = Clock(main, period, count)
        else:  # absolute, or Japanese byo-yomi without periods
            self.clock = Clock(main, 0.0, 0)

    def gtp_time_left(self, args):
        usage = "time_left COLOR TIME STONES"
        colour, *numbers = self._arguments(args, 3, usage)
        colour = parse_colour(colour)
        self.clock.left[colour] = tuple(_time_numbers(numbers, (float, int), usage))

    def gtp_printsgf(self, args):
        return to_sgf(self.game, self.session.actions, **self._sgf_info()).strip()

    def gtp_genmove(self, args):
        return self._generate(args, commit=True)

    def gtp_reg_genmove(self, args):
        return self._generate(args, commit=False)

    # -- moves ------------------------------------------------------------------------------------
    def _generate(self, args, *, commit: bool) -> str:
        (text,) = self._arguments(args, 1, "genmove COLOR")
        colour = parse_colour(text)
        if self.session.over:
            return "pass"
        state, must_pass = self._turn(colour)
        legal = self.game.legal_actions(state)
        if len(legal) == 1:
            action = legal[0]
        else:
            seconds = self.clock.seconds(colour, max(int(self.game.moves_left(state)[0]), 4))
            analysis = self.engine.think(state, clock=seconds)
            action = int(analysis.action[0])
            threshold = self.resign_threshold
            # the engine resigns (an external engine behind `gtp:`), or its move's win-rate is below --resign-threshold
            if action == RESIGN or (threshold is not None
                                    and describe_analysis(self.game, analysis)["winrate"] < threshold):
                if commit:
                    self.resigned = colour
                    self.engine_colours.add(colour)
                return "resign"
            if action not in legal:  # checked before anything is played: a refused genmove leaves the board as it was
                raise UserError(f"{self.engine.name} chose {action}, not a legal move here")
        if commit:
            if must_pass:
                self._play_move(self.game.pass_action, implicit=True)
            self._play_move(action)
            self.engine_colours.add(colour)
        return format_vertex(self.game, action)

    def _play_move(self, action: int, *, implicit: bool = False) -> None:
        if implicit:  # (it counts toward no two passes in a row: Game.inserted_pass)
            self.session.play_inserted_pass()
        else:
            self.session.play(action)

    def gtp_play(self, args):
        colour_text, vertex = self._arguments(args, 2, "play COLOR VERTEX")
        colour = parse_colour(colour_text)
        action = parse_vertex(self.game, vertex)
        state, must_pass = self._turn(colour)
        if action not in self.game.legal_actions(state):
            raise GameError(f"illegal move: {self.game.illegal_reason(state, action)}")
        if must_pass:
            self._play_move(self.game.pass_action, implicit=True)
        self._play_move(action)

    # -- records -----------------------------------------------------------------------------------
    def _sgf_info(self) -> dict:
        names = [f"azero {self.engine.name}" if colour in self.engine_colours else "" for colour in (0, 1)]
        info = {"black": names[0], "white": names[1], "inserted": self.session.inserted}
        if self.resigned is not None:
            info["result"] = resignation_text(black_won=self.resigned == 1)
        return info

    def _save(self) -> None:
        """Write the game so far as SGF (with --sgf) if it has moves. A record that cannot be
        written (the folder gone or full) is said on stderr; the command that saves it (clear_board,
        boardsize, quit) still does its work. The process id in the name keeps two engines writing
        into one folder in the same second from replacing each other's records."""
        if self.sgf_folder is None or not self.session.actions:
            return
        self.saved += 1
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = self.sgf_folder / f"gtp-{stamp}-{os.getpid()}-{self.saved:03d}.sgf"
        try:
            write_sgf(path, self.game, self.session.actions, **self._sgf_info())
        except OSError as error:
            print(f"gtp: the game's record was not saved: {path}: {error.strerror or error}", file=sys.stderr,
                  flush=True)

    def finish(self) -> None:
        """The session ends: save the game (once)."""
        self._save()
        self._new_game(self.game)


def serve(engine: GTPEngine, source: TextIO, sink: TextIO) -> int:
    """Answer GTP commands from `source` until quit or the end of input."""

    def write(text: str) -> None:
        sink.write(text)
        sink.flush()

    engine.write = write
    try:
        serve_lines(source, engine.handle, engine.refuse)
        return 0
    finally:  # however the session ends (quit, the end of input, a controller gone mid-answer, ^C): its record
        engine.finish()
