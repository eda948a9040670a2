"""External Piskvork (Gomocup) brains as players (spec `pbrain:COMMAND[:key=value,...]`).

A brain plays five-in-a-row gomoku (freestyle or exactly five) on boards of 5 to 19 squares a
side. Each game starts the brain afresh (some brains, Rapfi among them, keep a search cache
across START), with START (RECTSTART for a rectangular board), then the INFO lines of its
limits and rule; each move is asked for with BEGIN (an empty board), TURN x,y (the opponent's
reply to the brain's last move) or BOARD ... DONE (any other position, e.g. after a match's
random opening plies: the brain's stones as field 1, the opponent's as 2). Lines the brain
prints besides its answer (MESSAGE, DEBUG, SUGGEST) are skipped; ERROR or UNKNOWN stops the
match with the brain's words, and so does a reply that is not a legal move here, with the
moves so far. The brain's limits are the spec's options:

    nodes=N    INFO max_node N (a node budget a move; Rapfi honours it)
    turn=S     INFO timeout_turn, in seconds (default 5; 0 sends 0, which Rapfi reads as no limit)
    match=S    INFO timeout_match, with INFO time_left before each move
    memory=MB  INFO max_memory, in megabytes
    parallel=N games played at once (default 8), each by its own brain process; the brains are
               asked in turn, so none thinks while another does and a time limit means the same
               as one game at a time, while the other player (a network) moves in all N at once

A brain must answer within its turn time (or the time it has left) plus a grace of
GRACE_SHARE of it and at least GRACE seconds, within ANSWER_TIMEOUT where no time is set;
else it is stopped with an error naming it. For example (the program is looked up on PATH):

    pbrain:pbrain-rapfi:nodes=1000,turn=0
    pbrain:"python scripts/pbrain.py --player uct:400"
"""

from __future__ import annotations

import re
import shlex
import time

import torch

from games import Game
from games.options import Option, read_options

from ..errors import UserError
from ..wire.engine_process import EngineProcess, engine_command
from ..wire.piskvork_text import SIZES, brain_rule, format_square
from .base import MAX_SECONDS, Player

ANSWER_TIMEOUT = 600.0  # seconds a brain may take over one answer when no time limit is set
GRACE, GRACE_SHARE = 1.0, 0.25  # seconds beyond its time a brain's answer may come (start-up, pipes, a busy machine)
MAX_PARALLEL = 256  # brain processes a player may keep (a game each)
MAX_LINES = 10_000  # lines a brain may print before its answer (messages, debug output)
OPTIONS = {
    "nodes": Option(None, int, low=1, high=10**12, help="INFO max_node: the brain's node budget a move"),
    "turn": Option(5.0, float, low=0.0, high=MAX_SECONDS, metavar="S",
                   help="INFO timeout_turn in seconds (0: sent as 0, no limit for brains that read it so); "
                        "default 5"),
    "match": Option(None, float, low=0.001, high=100 * MAX_SECONDS, metavar="S",
                    help="INFO timeout_match in seconds, with time_left before each move"),
    "memory": Option(None, int, low=1, high=1 << 20, metavar="MB", help="INFO max_memory in megabytes"),
    "parallel": Option(8, int, low=1, high=MAX_PARALLEL, metavar="N",
                       help="games played at once, a brain process each, asked in turn (default 8)"),
}
_OPTIONS_TAIL = re.compile(r":\s*([a-z_]+\s*=[^:,=]*(?:,\s*[a-z_]+\s*=[^:,=]*)*)\s*$")


class PiskvorkRefusal(UserError):
    """A brain answered ERROR or UNKNOWN."""


class PiskvorkClient:
    """A brain's process: `tell(line)` sends a line that has no answer (INFO); `ask(lines)` sends
    lines and returns the answer to the last (skipping MESSAGE, DEBUG and SUGGEST lines)."""

    def __init__(self, argv: list[str], label: str):
        self.label = label
        self.engine = EngineProcess(argv, label)

    def tell(self, line: str) -> None:
        self.engine.send(line)

    def ask(self, lines: list[str], timeout: float) -> str:
        command = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
        for line in lines:
            self.engine.send(line, command)
        deadline = time.monotonic() + timeout
        for _ in range(MAX_LINES):
            line = self.engine.readline(command, deadline, timeout)
            if not line:
                self.engine.died(command)
            text = line.strip()
            word = text.partition(" ")[0].upper()
            if not text or word in ("MESSAGE", "DEBUG", "SUGGEST"):
                continue
            if word in ("ERROR", "UNKNOWN"):
                raise PiskvorkRefusal(f"{self.label} answered {command!r} with {text[:200]!r}")
            return text
        self.engine.stop()
        raise UserError(f"{self.label} printed over {MAX_LINES:,} lines answering {command!r} without an answer; "
                        "stopped it")

    def close(self) -> None:
        if self.engine.running:
            try:
                self.engine.send("END")
            except UserError:
                pass
        self.engine.close()


class _Brain:
    """One brain process and the game it plays: the board as it knows it, its stones' order, its
    colour there (1 first player, -1 second) and the match time it has left."""

    def __init__(self, client: PiskvorkClient, shape: tuple[int, int], mine: int, time_left: float | None):
        self.client, self.mine, self.time_left = client, mine, time_left
        self.known = torch.zeros(shape, dtype=torch.int8)
        self.order: list[int] = []  # the squares of its stones in the order they were played

    def fits(self, board: torch.Tensor, mine: int) -> bool:
        """Whether `board` (int8 [H, W]) can be this brain's game: its colour to move, every stone
        it knows of still there."""
        placed = self.known != 0
        return mine == self.mine and bool(torch.equal(board[placed], self.known[placed]))


class PbrainPlayer(Player):
    """A player backed by external Piskvork brains (see the module docstring): a process per game,
    `parallel` games at once, asked one after another (so no brain thinks while another does)."""

    def __init__(self, game: Game, argv: list[str], spec: str, options: dict):
        super().__init__(game)
        self.rule = brain_rule(game)
        if self.rule is None:
            raise UserError(f"{spec}: a Piskvork brain plays five-in-a-row gomoku, not {game.spec}")
        height, width = game.board_shape
        if width not in SIZES or height not in SIZES:
            raise UserError(f"{spec}: a Piskvork brain plays boards of {SIZES[0]} to {SIZES[-1]} a side, "
                            f"not {width}x{height}")
        self.argv, self.spec, self.options = argv, spec, options
        self.games_at_once = options["parallel"]
        self.brains: list[_Brain] = []  # the games under way, least recently asked first

    def reset(self) -> None:
        self.close()

    def close(self) -> None:
        brains, self.brains = self.brains, []
        for brain in brains:
            brain.client.close()

    def _start_game(self, mine: int) -> _Brain:
        """A new brain process for a new game (closing the least recently asked one beyond
        `parallel`: a game that has ended, or one that a BOARD will give to a new brain)."""
        while len(self.brains) >= self.games_at_once:
            self.brains.pop(0).client.close()
        client = PiskvorkClient(self.argv, self.spec)
        brain = _Brain(client, self.game.board_shape, mine, self.options["match"])
        self.brains.append(brain)  # closed by close() even if starting it fails
        height, width = self.game.board_shape
        start = f"START {width}" if width == height else f"RECTSTART {width},{height}"
        client.ask([start], ANSWER_TIMEOUT)
        turn, match = self.options["turn"], self.options["match"]
        client.tell(f"INFO timeout_turn {round(turn * 1000)}")
        if match is not None:
            client.tell(f"INFO timeout_match {round(match * 1000)}")
        if self.options["nodes"] is not None:
            client.tell(f"INFO max_node {self.options['nodes']}")
        if self.options["memory"] is not None:
            client.tell(f"INFO max_memory {self.options['memory'] << 20}")
        client.tell(f"INFO rule {self.rule}")
        return brain

    def _brain_for(self, board: torch.Tensor, mine: int, taken: set[int]) -> _Brain:
        """The brain whose game `board` continues (the one knowing most of its stones), else a new
        one; `taken`: ids of the brains already asked in this batch of positions."""
        fitting = [b for b in self.brains if id(b) not in taken and b.fits(board, mine)]
        if not bool(board.any()) or not fitting:  # an empty board is always a new game
            return self._start_game(mine)
        brain = max(fitting, key=lambda b: int((b.known != 0).sum()))
        self.brains.remove(brain)
        self.brains.append(brain)
        return brain

    def act(self, states, keys=None):
        if states.batch_size > self.games_at_once:
            raise UserError(f"{self.spec} plays {self.games_at_once} games at once, not {states.batch_size}")
        device, states = states.device, states.to("cpu")
        actions, taken = [], set()
        for row in range(states.batch_size):
            state = states[row : row + 1]
            board = state.board[0]
            mine = 1 if int(state.to_play[0]) == 0 else -1
            brain = self._brain_for(board, mine, taken)
            taken.add(id(brain))
            actions.append(self._ask(brain, state, board, mine))
        return torch.tensor(actions, device=device)

    def _ask(self, brain: _Brain, state, board: torch.Tensor, mine: int) -> int:
        """The brain's move in `state` (its board `board`, the brain playing `mine`)."""
        request = self._request(brain, board, mine)
        allowed = self._allowed(brain)
        if brain.time_left is not None:
            brain.client.tell(f"INFO time_left {max(round(brain.time_left * 1000), 0)}")
        started = time.monotonic()
        answer = brain.client.ask(request, allowed + max(GRACE, GRACE_SHARE * allowed) if allowed else ANSWER_TIMEOUT)
        if brain.time_left is not None:
            brain.time_left -= time.monotonic() - started
        action = self._read_move(brain, state, answer)
        brain.known = board.clone()
        brain.known.view(-1)[action] = mine
        brain.order.append(action)
        return action

    def _allowed(self, brain: _Brain) -> float:
        """Seconds the brain is allowed for this move by its limits (0: none set)."""
        turn = self.options["turn"]
        if brain.time_left is None:
            return turn
        return min(turn, max(brain.time_left, 0.0)) if turn else max(brain.time_left, 0.0)

    def _request(self, brain: _Brain, board: torch.Tensor, mine: int) -> list[str]:
        """The lines that ask the brain for a move in `board` (int8 [H, W]) with it to play `mine`."""
        flat, known = board.reshape(-1), brain.known.reshape(-1)
        if not bool(flat.any()):
            return ["BEGIN"]
        added = (flat != known).nonzero().squeeze(1).tolist()
        if len(added) == 1 and int(known[added[0]]) == 0 and int(flat[added[0]]) == -mine:
            brain.order.append(added[0])
            return [f"TURN {format_square(self.game, added[0])}"]
        # any other position: the stones in the order known, then the others in board order
        squares = [s for s in brain.order if int(flat[s]) != 0]
        squares += [s for s in flat.nonzero().squeeze(1).tolist() if s not in set(squares)]
        brain.order = squares
        lines = ["BOARD"]
        lines += [f"{format_square(self.game, s)},{1 if int(flat[s]) == mine else 2}" for s in squares]
        return lines + ["DONE"]

    def _read_move(self, brain: _Brain, state, answer: str) -> int:
        where = f"(moves so far: {' '.join(format_square(self.game, a) for a in brain.order) or 'none'})"
        parts = [p.strip() for p in answer.split(",")]
        height, width = self.game.board_shape
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise UserError(f"{self.spec} answered {answer[:200]!r}, not a move x,y {where}")
        x, y = int(parts[0]), int(parts[1])
        if not (x < width and y < height):
            raise UserError(f"{self.spec} played {x},{y}, off the {width}x{height} board {where}")
        action = y * width + x
        if not bool(self.game.legal_mask(state)[0, action]):
            reason = self.game.illegal_reason(state, action)
            raise UserError(f"{self.spec} played {x},{y}, which is illegal here: {reason} {where}")
        return action


def split_options(text: str) -> tuple[str, dict[str, str]]:
    """'prog --x:nodes=1000,turn=0' -> ('prog --x', {'nodes': '1000', 'turn': '0'}): the options are
    the part after the last colon when it holds only key=value pairs."""
    found = _OPTIONS_TAIL.search(text)
    if found is None:
        return text, {}
    options = {}
    for part in found.group(1).split(","):
        key, _, value = part.partition("=")
        if key.strip() in options:
            raise UserError(f"pbrain: option {key.strip()} is given twice in {text!r}")
        options[key.strip()] = value.strip()
    return text[:found.start()], options


def make_pbrain_player(text: str, game: Game) -> PbrainPlayer:
    """`pbrain:COMMAND[:key=value,...]` (the text after 'pbrain:') -> a PbrainPlayer; the command line
    is split like a shell would (no shell runs)."""
    command, given = split_options(text)
    options = read_options("pbrain", OPTIONS, given, error=UserError)
    argv, program = engine_command(command, "pbrain", 'pbrain:"pbrain-rapfi":nodes=1000')
    label = "pbrain:" + shlex.join(argv) + (":" + ",".join(f"{k}={v}" for k, v in given.items()) if given else "")
    return PbrainPlayer(game, [program, *argv[1:]], label, options)
