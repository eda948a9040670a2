"""A Gomocup / Piskvork brain: the protocol on stdin and stdout.

Commands (https://plastovicka.github.io/protocl2en.htm): START size, RECTSTART w,h,
RESTART, BEGIN, TURN x,y, BOARD ... DONE, INFO key value, TAKEBACK x,y, PLAY x,y,
ABOUT, END. Coordinates are x,y with x the column from the left and y the row
from the top, both from 0. Replies: a move "x,y", OK, or
  UNKNOWN <message>   for a command the protocol does not have
  ERROR <message>     for a command that cannot be carried out (bad coordinates,
                      an occupied square, a command out of order, an unsupported
                      size or rule); the brain keeps running
INFO rule: 0 freestyle, 1 exactly five (standard); renju (4) and caro (8) get ERROR, and so does a
value the protocol does not define (negative, or other bits than 1, 2, 4 and 8).
INFO max_memory (bytes; 0 = no limit) bounds the search tree: it gets what the limit leaves
over the memory the brain held once its engine was made (MIN_TREE_BYTES at least, the search
then stopping early), through the tree memory limit (azero/search/memory.py).
The brain searches until a deadline derived from INFO timeout_turn and time_left
(85% of the allowed time, and at least RESERVE seconds less); its slow work (loading the
network, compiling the search, and, in scripts/pbrain.py, freezing what they made out of the
garbage collector's way: azero.session.settle_memory) happens at START, so the first move is
timed like the others.
A brain with a fixed game (a checkpoint's) plays that game's board size and rule only; with
pooled heads, its rule on every board size.
"""

from __future__ import annotations

from typing import Callable, TextIO

import torch

import games
from games import GameError
from games.options import is_whole_number

from .. import __version__
from ..errors import UserError, internal_error
from ..network import plays
from ..players.base import MAX_SECONDS
from ..search import memory
from ..session import Engine
from ..wire.line_reader import TooLong, serve_lines
from ..wire.piskvork_text import brain_game, check_brain_game

MAX_INFO_MS = 86_400_000  # INFO times are read up to a day (they are milliseconds)
MARGIN = 0.85  # share of the allowed time spent searching, at most
RESERVE = 0.08  # seconds kept, at least, for the last search step, the reply and a busy machine's delays
MIN_TREE_BYTES = 1 << 20  # the tree's bytes under INFO max_memory, at least (a brain's own memory may be more)
RULE_FLAGS = 1 | 2 | 4 | 8  # INFO rule's bits: exactly five, continuous game, renju, caro


def one_line(message) -> str:
    """A message (or an error's) as one line: a reply is one line, and torch's messages may have several."""
    return " ".join(str(message).split())


def shown(text: str, most: int = 40) -> str:
    """A line as an error quotes it: its first `most` characters (a line may be 1,000,000 long)."""
    text = text.strip()
    return repr(text) if len(text) <= most else repr(text[:most]) + f"... ({len(text):,} characters)"


class Brain:
    def __init__(self, make_engine: Callable[[games.Game], Engine], *, fixed: games.Game | None = None,
                 any_size: bool = False, write: Callable[[str], None] = print):
        if fixed is not None:
            check_brain_game(fixed)
        self.make_engine = make_engine
        self.fixed = fixed  # a checkpoint plays its own game only: its board size too, unless `any_size`
        self.any_size = any_size  # (a network with pooled heads)
        self.write = write
        self.width = self.height = 0
        self.exact = fixed is not None and fixed == brain_game(fixed.board_shape[1], fixed.board_shape[0], True)
        self.engine: Engine | None = None
        self.board: dict[tuple[int, int], int] = {}  # (x, y) -> 1 own stone, 2 opponent's
        self.timeout_turn = 5.0
        self.time_left: float | None = None
        self.max_memory: int | None = None  # INFO max_memory's bytes (None: no limit)
        self.engine_bytes = 0  # the process's resident memory once the engine was made
        self.block: str | None = None  # the block of lines that DONE ends being read: BOARD's, SWAP2BOARD's
        self.board_lines: list[tuple[tuple[int, int], int]] = []  # BOARD's squares and owners, read as they come
        self.board_problem: str | None = None  # the first BOARD line refused, said at DONE

    @property
    def in_board(self) -> bool:
        """Whether a block of lines that DONE ends is being read (BOARD's, or SWAP2BOARD's)."""
        return self.block is not None

    # -- the game ---------------------------------------------------------------------------------
    def _game(self) -> games.Game:
        return brain_game(self.width, self.height, self.exact)

    def _start(self, width: int, height: int) -> None:
        if not (5 <= width <= 19 and 5 <= height <= 19):
            raise GameError(f"unsupported size {width}x{height}; this brain plays 5..19")
        wanted = brain_game(width, height, self.exact)
        if self.fixed is not None and not plays(self.fixed, wanted, any_size=self.any_size):
            fixed_height, fixed_width = self.fixed.board_shape
            raise GameError(f"this network plays {fixed_width}x{fixed_height} only")
        self.width, self.height = width, height
        self.engine = None  # let go of the old engine before the new one is made and settled
        self.board.clear()  # (a START whose engine cannot be made leaves no game)
        self._make_engine(self._game())

    def _make_engine(self, game: games.Game) -> None:
        self.engine = self.make_engine(game)
        self.engine_bytes = memory.resident_bytes() or 0

    def tree_limit(self) -> int | None:
        """The bytes a move's search tree may take under INFO max_memory (None: no limit)."""
        if self.max_memory is None:
            return None
        return max(self.max_memory - self.engine_bytes, MIN_TREE_BYTES)

    def _need_start(self) -> None:
        if self.engine is None:
            raise GameError("no game: send START first")

    def _square(self, text: str, fields: int = 2) -> tuple[int, int]:
        """The square x,y that `text` starts with; `fields` is how many comma-separated fields the
        line has (2 for TURN, PLAY and TAKEBACK, 3 for a BOARD line's x,y,field)."""
        parts = [p.strip() for p in text.split(",")]
        if len(parts) != fields or not all(is_whole_number(p.removeprefix("-")) for p in parts[:2]):
            raise GameError(f"cannot read coordinates {shown(text)}; write x,y")
        x, y = int(parts[0]), int(parts[1])
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise GameError(f"{x},{y} is off the {self.width}x{self.height} board")
        return x, y

    def _place(self, square: tuple[int, int], owner: int) -> None:
        if square in self.board:
            raise GameError(f"{square[0]},{square[1]} is already occupied")
        self.board[square] = owner

    def _state(self):
        """The position with the brain to move (its stones are the mover's colour)."""
        own = sum(1 for v in self.board.values() if v == 1)
        other = len(self.board) - own
        if own == other:
            mine, theirs = 1, -1  # the brain moves first in this game
        elif other == own + 1:
            mine, theirs = -1, 1
        else:
            raise GameError(f"the board has {own} own and {other} opponent stones: not the brain's turn")
        grid = torch.zeros(self.height, self.width, dtype=torch.int8)
        for (x, y), owner in self.board.items():
            grid[y, x] = mine if owner == 1 else theirs
        state = self.engine.game.from_board(grid, to_play=0 if mine == 1 else 1)
        if bool(state.done[0]):
            raise GameError("the game is already over on this board")
        return state

    def _budget(self) -> float:
        allowed = self.timeout_turn
        if self.time_left is not None:
            empty = self.width * self.height - len(self.board)
            allowed = min(allowed, self.time_left / max(empty / 2, 1))
        return min(max(0.01, min(allowed * MARGIN, allowed - RESERVE)), MAX_SECONDS)

    def _move(self) -> None:
        state = self._state()
        limit = self.tree_limit()
        if limit is None:
            analysis = self.engine.think(state, clock=self._budget())
        else:
            with memory.limited(limit):
                analysis = self.engine.think(state, clock=self._budget())
        action = int(analysis.action[0])
        y, x = divmod(action, self.width)
        self.board[(x, y)] = 1
        self.write(f"{x},{y}")

    # -- commands ---------------------------------------------------------------------------------
    def handle(self, line: str) -> bool:
        """Carry out one line; False after END."""
        text = line.strip()
        if not text and not self.in_board:
            return True
        command, _, rest = text.partition(" ")
        try:
            if self.in_board:
                return self._board_line(text)
            return self._command(command.upper(), rest.strip())
        except (GameError, UserError) as error:
            self.write(f"ERROR {one_line(error)}")
        except Exception as error:  # a fault of ours: said in one line, and the brain keeps serving
            self.write(f"ERROR {one_line(internal_error(error))}")
        return True

    def _command(self, command: str, rest: str) -> bool:
        if command == "START":
            if not is_whole_number(rest):
                raise GameError("START needs a board size, e.g. START 15")
            self._start(int(rest), int(rest))
            self.write("OK")
        elif command == "RECTSTART":
            parts = rest.split(",")
            if len(parts) != 2 or not all(is_whole_number(p.strip()) for p in parts):
                raise GameError("RECTSTART needs width,height")
            self._start(int(parts[0]), int(parts[1]))
            self.write("OK")
        elif command == "RESTART":
            self._need_start()
            self.board.clear()
            self.write("OK")
        elif command == "BEGIN":
            self._need_start()
            if self.board:
                raise GameError("BEGIN is only for an empty board")
            self._move()
        elif command == "TURN":
            self._need_start()
            square = self._square(rest)
            self._place(square, 2)
            try:
                self._move()
            except BaseException:
                del self.board[square]
                raise
        elif command == "PLAY":
            self._need_start()
            square = self._square(rest)
            self._place(square, 1)
            self.write(f"{square[0]},{square[1]}")
        elif command == "TAKEBACK":
            self._need_start()
            square = self._square(rest)
            if square not in self.board:
                raise GameError(f"{square[0]},{square[1]} is empty")
            del self.board[square]
            self.write("OK")
        elif command in ("BOARD", "SWAP2BOARD"):  # lines up to DONE follow either (swap2's: its opening's moves)
            self.block, self.board_lines, self.board_problem = command, [], None
            if command == "BOARD" and self.engine is None:  # said once, at DONE, as any problem of the block
                self.board_problem = "no game: send START first"
        elif command == "INFO":
            self._info(rest)
        elif command == "ABOUT":
            self.write(f'name="azero", version="{__version__}", author="azero developers", country="-"')
        elif command == "END":
            return False
        else:
            self.write(f"UNKNOWN command {shown(command)}; this brain knows START, RECTSTART, RESTART, BEGIN, TURN, "
                       "BOARD, INFO, TAKEBACK, PLAY, ABOUT, END")
        return True

    def refuse(self, line: TooLong) -> None:
        """A line too long to read: ERROR at once, or inside BOARD at its DONE (the manager
        waits for no answer before then)."""
        if self.in_board:
            self.board_problem = self.board_problem or f"BOARD: {line.message}"
        else:
            self.write(f"ERROR {line.message}")

    def _board_line(self, text: str) -> bool:
        """A line inside BOARD or SWAP2BOARD: each BOARD line is read as it comes (a square and its
        owner kept, or the first problem), and the position is set up and played at DONE."""
        if text.upper() != "DONE":
            if self.block == "BOARD" and self.board_problem is None:
                try:
                    self.board_lines.append(self._board_entry(text))
                except GameError as error:
                    self.board_problem = str(error)
            return True
        block, self.block = self.block, None
        if block == "SWAP2BOARD":  # one answer for the whole block, at its DONE
            self.write("UNKNOWN SWAP2BOARD: this brain does not play swap2 openings")
            return True
        saved = dict(self.board)
        self.board.clear()
        try:
            if self.board_problem:
                raise GameError(self.board_problem)
            for square, owner in self.board_lines:
                self._place(square, owner)
            self._move()
        except BaseException:
            self.board = saved
            raise
        return True

    def _board_entry(self, line: str) -> tuple[tuple[int, int], int]:
        """A BOARD line x,y,field read: the square and its owner (1 the brain's stones, 2 the other's)."""
        if len(self.board_lines) >= self.width * self.height:
            raise GameError(f"more board lines than the {self.width}x{self.height} board's "
                            f"{self.width * self.height} squares")
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3 or parts[2] not in ("1", "2", "3"):
            raise GameError(f"cannot read board line {shown(line)}; write x,y,field with field 1, 2 or 3")
        return self._square(line, fields=3), 1 if parts[2] == "1" else 2

    def _info(self, rest: str) -> None:
        key, _, value = rest.partition(" ")
        key = key.lower()
        text = value.strip()
        digits = text.removeprefix("-")
        number = int(text) if is_whole_number(digits) else None
        milliseconds = None
        if digits.isascii() and digits.isdigit():  # a day at most (of any length): no limit, and no float overflow
            longest = -MAX_INFO_MS if text.startswith("-") else MAX_INFO_MS
            milliseconds = longest if number is None else max(min(number, MAX_INFO_MS), -MAX_INFO_MS)
        if key == "timeout_turn" and milliseconds is not None:
            self.timeout_turn = milliseconds / 1000.0 if milliseconds > 0 else 0.05
        elif key == "time_left" and milliseconds is not None:
            self.time_left = milliseconds / 1000.0
        elif key == "max_memory" and number is not None:
            self.max_memory = number if number > 0 else None
        elif key == "rule" and number is not None:
            if number < 0 or number & ~RULE_FLAGS:
                raise GameError(f"INFO rule {text}: that value is unknown (0 freestyle, 1 exactly five; "
                                "2 continuous, 4 renju and 8 caro are bits added to them)")
            if number & 4:
                raise GameError("renju rules are not supported (freestyle and exactly-five only)")
            if number & 8:
                raise GameError("caro rules are not supported (freestyle and exactly-five only)")
            exact = bool(number & 1)
            if exact != self.exact and self.fixed is not None:
                rule = "exactly five" if self.exact else "five or more in a row (freestyle)"
                raise GameError(f"this network plays {rule} only" if self.any_size
                                else f"this network plays {self.fixed.describe()} only")
            if exact != self.exact and self.engine is not None:
                self.engine = None  # let go of the old engine before the new one is made
                try:
                    self._make_engine(brain_game(self.width, self.height, exact))
                except BaseException:
                    try:
                        self._make_engine(self._game())  # the rule before, whose engine was made once
                    except BaseException:
                        self.board.clear()  # neither rule has an engine: no game, as after a failed START
                    raise
            self.exact = exact
        # other keys (timeout_match, game_type, folder, evaluate) need nothing


def serve(make_engine: Callable[[games.Game], Engine], source: TextIO, sink: TextIO, *,
          fixed: games.Game | None = None, any_size: bool = False) -> int:
    def write(text: str) -> None:
        sink.write(text + "\n")
        sink.flush()

    brain = Brain(make_engine, fixed=fixed, any_size=any_size, write=write)
    serve_lines(source, brain.handle, brain.refuse)
    return 0
