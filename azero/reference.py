"""Plain-Python references, one board and one tree node at a time.

* `PyGomoku`: gomoku's rules (and tic-tac-toe's, at 3 x 3 with k = 3) as a
  straightforward single-board class, the way public Python projects write them.
* `uct`: the classic random-rollout UCT of the mcts.ai teaching code (Cowling,
  Powley, Whitehouse), with its terminal check fixed: UCB1 selection, one random
  untried move expanded, a uniformly random rollout to the end, 1 / 0.5 / 0
  backed up from the view of the player who moved into each node, the most
  visited root move.

They are the speed baselines of scripts/bench.py and check the batched engine's
fidelity (tests/test_uct.py).
"""

from __future__ import annotations

import math
import random

import torch

from games import NO_ACTION, Game


class PyGomoku:
    """One gomoku board. Cells are row * width + col; players 1 (first) and 2."""

    def __init__(self, height=15, width=15, k=5, exact=False):
        self.height, self.width, self.k, self.exact = height, width, k, exact
        self.board = [0] * (height * width)
        self.just_moved = 2  # the first player moves first
        self.winner = 0
        self.moves_played = 0

    def clone(self) -> "PyGomoku":
        other = PyGomoku.__new__(PyGomoku)
        other.__dict__.update(self.__dict__)
        other.board = self.board[:]
        return other

    def moves(self) -> list[int]:
        if self.winner or self.moves_played == len(self.board):
            return []
        return [i for i, v in enumerate(self.board) if v == 0]

    def do(self, move: int) -> None:
        assert self.board[move] == 0 and not self.winner
        player = 3 - self.just_moved
        self.board[move] = player
        self.just_moved = player
        self.moves_played += 1
        if self._line_through(move, player):
            self.winner = player

    def _line_through(self, move: int, player: int) -> bool:
        r0, c0 = divmod(move, self.width)
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            count = 1
            for sign in (1, -1):
                r, c = r0 + sign * dr, c0 + sign * dc
                while 0 <= r < self.height and 0 <= c < self.width and self.board[r * self.width + c] == player:
                    count += 1
                    r, c = r + sign * dr, c + sign * dc
            if count == self.k if self.exact else count >= self.k:
                return True
        return False

    def terminal(self) -> bool:
        return bool(self.winner) or self.moves_played == len(self.board)

    def result(self, player: int) -> float:
        """1 if `player` won, 0 if they lost, 0.5 for a draw (the game must be over)."""
        if not self.winner:
            return 0.5
        return 1.0 if self.winner == player else 0.0


def py_state_from_tensor(game: Game, state, index: int) -> PyGomoku:
    """The PyGomoku of game `index` of a batched gomoku / tic-tac-toe state."""
    s = PyGomoku(game.height, game.width, game.k, game.exact)
    board = state.board[index].flatten().tolist()
    s.board = [0 if v == 0 else (1 if v == 1 else 2) for v in board]
    s.moves_played = sum(1 for v in s.board if v)
    s.just_moved = 2 if int(state.to_play[index]) == 0 else 1
    s.winner = {1: 1, -1: 2, 0: 0}[int(state.winner[index])]
    return s


class Node:
    __slots__ = ("move", "parent", "children", "wins", "visits", "untried", "just_moved")

    def __init__(self, move, parent, state: PyGomoku):
        self.move, self.parent = move, parent
        self.children: list[Node] = []
        self.wins, self.visits = 0.0, 0
        self.untried = state.moves()
        self.just_moved = state.just_moved

    def select(self, c: float) -> "Node":
        log_n = math.log(self.visits)
        return max(self.children, key=lambda ch: ch.wins / ch.visits + c * math.sqrt(log_n / ch.visits))

    def add_child(self, move, state) -> "Node":
        child = Node(move, self, state)
        self.untried.remove(move)
        self.children.append(child)
        return child


def uct(root_state: PyGomoku, iterations: int, rng: random.Random, c: float = math.sqrt(2.0)) -> tuple[int, Node]:
    """The most visited move after `iterations` UCT iterations, and the root node."""
    root = Node(None, None, root_state)
    for _ in range(iterations):
        node, state = root, root_state.clone()
        while not node.untried and node.children:  # select
            node = node.select(c)
            state.do(node.move)
        if node.untried:  # expand
            move = rng.choice(node.untried)
            state.do(move)
            node = node.add_child(move, state)
        while not state.terminal():  # roll out
            state.do(rng.choice(state.moves()))
        while node is not None:  # back up
            node.visits += 1
            node.wins += state.result(node.just_moved)
            node = node.parent
    best = max(root.children, key=lambda ch: ch.visits)
    return best.move, root


class ReferenceUCTPlayer:
    """The scalar reference as an arena player (one game at a time, plain Python)."""

    def __init__(self, game: Game, iterations: int, seed: int = 0):
        self.game, self.iterations = game, iterations
        self.spec = f"reference-uct:{iterations}"
        self.rng = random.Random(seed)

    def reset(self):
        pass

    def act(self, states, keys=None) -> torch.Tensor:
        moves = []
        for i in range(states.batch_size):
            if bool(states.done[i]):
                moves.append(NO_ACTION)
                continue
            move, _ = uct(py_state_from_tensor(self.game, states, i), self.iterations, self.rng)
            moves.append(move)
        return torch.tensor(moves, dtype=torch.long)
