"""External GTP engines as players (spec `gtp:COMMAND`).

External engines (`GTPPlayer`, spec `gtp:COMMAND`) are driven the same way:
boardsize, clear_board, komi (games with a komi: Go), then play / genmove each
move, one game at a time. Passes are sent as `play b pass` in Go; forced passes
(`game.forced_pass`: Othello's) are not sent at all (GRhino refuses `play b pass`
and skips a side that must pass by itself), and a forced pass of the engine is
played without asking it. `resign` ends the game as a loss for the engine
(players.RESIGN). Every move of an external engine is checked against our rules: an illegal move, an unreadable
answer, or a refusal of one of our legal moves stops the match with an error
naming the engine, the move and the moves so far (a disagreement about the
rules makes every later result meaningless, so it is not scored as a loss).
An engine that does not answer within ANSWER_TIMEOUT seconds (the whole answer, not each line),
prints more than MAX_LINES lines without one, or a line too long to read
(engine_process.py, which runs the process), is stopped the same way.
"""

from __future__ import annotations

import shlex
import time

import torch

from games import Game, GameError

from ..errors import UserError
from ..wire.engine_process import EngineProcess, engine_command
from ..wire.gtp_text import COLOUR_NAMES, check_game, format_vertex, parse_vertex
from .base import RESIGN, Player

ANSWER_TIMEOUT = 600.0  # seconds an external engine may take over one answer
MAX_LINES = 10_000  # lines an answer may span, stray lines before it included (a 19x19 showboard is ~25)
# A match's random opening plies are played by neither player: the engine is told them
# (and, moving second, its opponent's first reply) before its first move, found by trying
# every sequence of that many legal moves: 4 opening plies and a reply in Othello.
CATCH_UP_PLIES = 5
CATCH_UP_POSITIONS = 200_000  # the most sequences tried (Go 7x7: about 120,000 of three plies)


class GTPRefusal(UserError):
    """An external engine answered '? message'."""


class GTPClient:
    """An external GTP engine as a process: `ask(command)` returns its answer or raises GTPRefusal."""

    def __init__(self, argv: list[str], label: str, timeout: float = ANSWER_TIMEOUT):
        self.label, self.timeout = label, timeout
        self.engine = EngineProcess(argv, label)

    @property
    def process(self):
        return self.engine.process

    def _readline(self, command: str, deadline: float) -> str:
        return self.engine.readline(command, deadline, self.timeout)

    def _too_long(self, command: str):
        self.engine.stop()
        raise UserError(f"{self.label} printed over {MAX_LINES:,} lines answering {command!r} without ending its "
                        "answer (a GTP answer starts with '=' or '?' and ends with an empty line); stopped it")

    def ask(self, command: str) -> str:
        self.engine.send(command)
        deadline = time.monotonic() + self.timeout
        first, read = self._readline(command, deadline), 1
        while first and not first.startswith(("=", "?")):  # some engines print other lines first
            if read >= MAX_LINES:
                self._too_long(command)
            first, read = self._readline(command, deadline), read + 1
        if not first:
            self.engine.died(command)
        lines = [first[1:].lstrip("0123456789").strip()]
        while True:
            line = self._readline(command, deadline)
            if not line or not line.strip():
                break
            if read >= MAX_LINES:
                self._too_long(command)
            lines.append(line.rstrip("\n"))
            read += 1
        answer = "\n".join(lines).strip()
        if first.startswith("?"):
            raise GTPRefusal(f"{self.label} refused {command!r}: {answer}")
        return answer

    def close(self) -> None:
        if self.engine.running:
            self.timeout = min(self.timeout, 5.0)  # a hung engine is not waited for at the end
            try:
                self.ask("quit")
            except UserError:
                pass
        self.engine.close()


class GTPPlayer(Player):
    """A player backed by an external GTP engine, one game at a time (see the module docstring)."""

    games_at_once = 1

    def __init__(self, game: Game, argv: list[str], spec: str):
        super().__init__(game)
        check_game(game)
        self.argv, self.spec = argv, spec
        self.client: GTPClient | None = None
        self.known = None  # the position the engine has seen; None until a game starts
        self.actions: list[int] = []  # the moves that led there
        self.seen: list = []  # the positions after each of them, the start first

    def reset(self) -> None:
        self.known = None

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    def _start_game(self) -> None:
        if self.client is None:
            self.client = GTPClient(self.argv, self.spec)
        self.client.ask(f"boardsize {self.game.board_shape[1]}")
        self.client.ask("clear_board")
        if self.game.komi is not None:
            self.client.ask(f"komi {float(self.game.komi):g}")
        self.known, self.actions = self.game.initial_state(1), []
        self.seen = [self.known]

    def act(self, states, keys=None):
        if states.batch_size != 1:
            raise UserError(f"{self.spec} plays one game at a time, not {states.batch_size}")
        device, states = states.device, states.to("cpu")
        if self.known is None:
            self._start_game()
        self._catch_up(states)
        action = self._engine_move(states)
        if action != RESIGN:
            self._record(self.game.step(states, torch.tensor([action])), action)
        return torch.tensor([action], device=device)

    def _record(self, state, action: int) -> None:
        self.known = state
        self.actions.append(action)
        self.seen.append(state)

    def _moves_so_far(self) -> str:
        return " ".join(format_vertex(self.game, a) for a in self.actions) or "none"

    def _catch_up(self, state) -> None:
        """Tell the engine the moves that lead from what it knows to `state`: the opponent's
        reply, or up to CATCH_UP_PLIES moves made by neither player (a match's random opening).
        A position that does not follow from what the engine knows (a person took moves back,
        or played on after asking for a hint, which the engine played on its own board) is
        reached from the latest position of this game it follows from: the engine's board is
        cleared and that position's moves played again."""
        if state.equal(self.known):
            return
        path = self._path_from(self.known, state)
        if path is None:
            path = self._rewind(state)
        if path is None:
            raise UserError(f"{self.spec}: the position is not up to {CATCH_UP_PLIES} moves on from one it saw "
                            f"(moves so far: {self._moves_so_far()}); games must be played move by move")
        self._tell(path)
        self.known = state

    def _tell(self, path: list[int]) -> None:
        """Play `path` on the engine's board, from the position it knows."""
        for action in path:
            colour = COLOUR_NAMES[int(self.known.to_play[0])]
            vertex = format_vertex(self.game, action)
            if not (self.game.forced_pass and action == self.game.pass_action):  # the engine passes by itself
                try:
                    self.client.ask(f"play {colour} {vertex}")
                except GTPRefusal as error:
                    raise UserError(f"{error}, but {vertex} is legal for {colour} here "
                                    f"(moves so far: {self._moves_so_far()})") from None
            self._record(self.game.step(self.known, torch.tensor([action])), action)

    def _rewind(self, state) -> list[int] | None:
        """Take the engine back to the latest position it saw in this game from which `state`
        follows within CATCH_UP_PLIES moves, and return those moves (None if there is none:
        nothing is changed then)."""
        target = int(state.move_number[0])
        for index in range(len(self.seen) - 1, -1, -1):
            start = self.seen[index]
            plies = target - int(start.move_number[0])
            if plies < 0:
                continue
            if plies > CATCH_UP_PLIES:
                return None
            path = [] if state.equal(start) else self._path_from(start, state)
            if path is not None:
                moves = self.actions[:index]
                self._start_game()
                self._tell(moves)
                return path
        return None

    def _path_from(self, start, state) -> list[int] | None:
        """Moves that lead from `start` to `state` (the first such sequence found), or None if
        there are none within CATCH_UP_PLIES: every sequence of that many legal moves is played
        out at once, as one batch."""
        plies = int(state.move_number[0]) - int(start.move_number[0])
        if not 1 <= plies <= CATCH_UP_PLIES:
            return None
        frontier, paths = start, torch.zeros(1, 0, dtype=torch.long)
        for _ in range(plies):
            rows, actions = self.game.legal_mask(frontier).nonzero(as_tuple=True)
            if not 0 < rows.numel() <= CATCH_UP_POSITIONS:
                return None
            frontier = self.game.step(frontier.take(rows), actions, trusted=True)
            paths = torch.cat([paths[rows], actions.unsqueeze(1)], dim=1)
        found = frontier.rows_equal(state).nonzero().squeeze(1)
        return paths[int(found[0])].tolist() if found.numel() else None

    def _engine_move(self, state) -> int:
        colour = int(state.to_play[0])
        legal = self.game.legal_actions(state)
        if self.game.forced_pass and legal == [self.game.pass_action]:
            return legal[0]  # a forced pass is not asked for
        answer = self.client.ask(f"genmove {COLOUR_NAMES[colour]}")
        if answer.lower() == "resign":
            return RESIGN
        where = f"(moves so far: {self._moves_so_far()})"
        try:
            action = parse_vertex(self.game, answer)
        except GameError as error:
            raise UserError(f"{self.spec} answered genmove {COLOUR_NAMES[colour]} with {answer!r}: {error} "
                            f"{where}") from None
        if action not in legal:
            reason = self.game.illegal_reason(state, action)
            raise UserError(f"{self.spec} played {answer} as {COLOUR_NAMES[colour]}, which is illegal here: "
                            f"{reason} {where}")
        return action


def make_gtp_player(command: str, game: Game) -> GTPPlayer:
    """`gtp:COMMAND` -> a GTPPlayer; the command line is split like a shell would (no shell runs)."""
    check_game(game)  # before the program is looked for: no engine would play another game
    argv, program = engine_command(command, "gtp", 'gtp:"gnugo --mode gtp --level 1"',
                                   ("/usr/games", "/usr/local/games"))
    return GTPPlayer(game, [program, *argv[1:]], "gtp:" + shlex.join(argv))
