"""Connect Four: drop discs into columns, first to k (4) in a row wins, batched.

Options: rows (4..10, default 6), columns (4..10, default 7), k (3..5, default 4).
A disc drops to the lowest empty cell of its column (row 0 is the top row). Four in
a row horizontally, vertically or on either diagonal wins; a full board without a
line is a draw. The first player (X) moves first.

Actions are columns 0..W-1, written as the 1-based column number ("1".."7").

Planes (from the view of the player to move): own discs, opponent discs, and a plane
of ones (so the network sees the board's edge through padding).

Symmetries: the identity and the left-right mirror (gravity rules out the others).
The mirror moves cells like a board symmetry and columns (actions, `last_action`,
`heights`) like its action permutation.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import kernels
from .base import (
    BoardState,
    Expansion,
    Game,
    GameError,
    Option,
    Symmetry,
    board_symmetries,
    keeps_rules,
    new_board_state,
    player_sign,
    stone_planes,
)
from .line_geometry import completes_line, line_rays, pad_board, window_table
from .options import is_whole_number

DISCS = {1: "X", -1: "O", 0: "."}


@dataclass(eq=False)
class ConnectFourState(BoardState):
    """A batch of Connect Four positions.

    Fields (besides BoardState's; `last_action` is the column last played, -1 at the start):
      heights: long [B, W]  discs in each column
    """

    heights: torch.Tensor


# -- the compiled forms of Connect Four's rules (games/kernels.py), chosen by kernels.twin ------------
def _compiled_apply(game: "ConnectFour", state: ConnectFourState, action: torch.Tensor) -> ConnectFourState:
    if not (state.board.is_contiguous() and state.heights.is_contiguous()):
        return NotImplemented
    to_play, move_number, done, winner, board, heights = kernels.drop_discs(
        state, action.contiguous(), game.height, game._kernel_rays, game.k)
    return ConnectFourState(to_play=to_play, move_number=move_number, done=done, winner=winner, board=board,
                            last_action=action, heights=heights)


def _compiled_expand_rows(game: "ConnectFour", states: ConnectFourState, parent: torch.Tensor, child: torch.Tensor,
                          action: torch.Tensor, encode: bool = True) -> Expansion:
    if not (states.board.is_contiguous() and states.heights.is_contiguous() and keeps_rules(type(game), ConnectFour)):
        return NotImplemented
    return kernels.expand_discs(states, parent, child, action, game.height, game._kernel_rays, game.k, encode)


class ConnectFour(Game):
    name = "connect4"
    board_style = "frame"
    options = {
        "rows": Option(6, int, lambda v: 4 <= v <= 10, "4..10"),
        "columns": Option(7, int, lambda v: 4 <= v <= 10, "4..10"),
        "k": Option(4, int, lambda v: 3 <= v <= 5, "3..5"),
    }
    state_type = ConnectFourState
    board_fields = ("board",)
    action_fields = ("last_action",)
    per_action_fields = ("heights",)

    def __init__(self, **options):
        super().__init__(**options)
        height, width, k = self.config["rows"], self.config["columns"], self.config["k"]
        if k > max(height, width):
            raise GameError(f"{self.name}: k={k} does not fit on a {height}x{width} board")
        self.height, self.width, self.k = height, width, k
        self.board_shape = (height, width)
        self.num_actions = width
        self.num_planes = 3
        columns = torch.arange(width)
        cells = {s.name: s.cell_perm for s in board_symmetries(height, width)}
        self.symmetries = [
            Symmetry("identity", columns, cells["identity"], (height, width)),
            Symmetry("flip_lr", columns.flip(0), cells["flip_lr"], (height, width)),
        ]
        self._rays = line_rays(height, width, k)
        self._kernel_rays = self._rays.to(torch.int16).numpy()  # small enough for the first-level cache
        self._windows, _ = window_table(height, width, k)
        self._tables: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}

    def _on(self, device) -> tuple[torch.Tensor, torch.Tensor]:
        """(rays, windows) on `device`, copied once."""
        device = torch.device(device)
        if device not in self._tables:
            self._tables[device] = (self._rays.to(device), self._windows.to(device))
        return self._tables[device]

    # -- rules --------------------------------------------------------------------------------
    def initial_state(self, batch: int = 1, device="cpu") -> ConnectFourState:
        heights = torch.zeros(batch, self.width, dtype=torch.long, device=device)
        return new_board_state(batch, self.height, self.width, device, ConnectFourState, heights=heights)

    def legal_mask(self, state: ConnectFourState) -> torch.Tensor:
        """bool [B, W]: columns with room, none once the game is over."""
        return (state.heights < self.height) & ~state.done.unsqueeze(1)

    @kernels.twin(_compiled_apply)
    def _apply(self, state: ConnectFourState, action: torch.Tensor) -> ConnectFourState:
        batch = state.batch_size
        color = player_sign(state.to_play).to(torch.int8)
        column = action.unsqueeze(1)  # [B, 1]
        filled = state.heights.gather(1, column).squeeze(1)  # [B]
        # A finished game may bring action 0 on a full column: clamp so it cannot fail.
        row = (self.height - 1 - filled).clamp(min=0)
        cell = row * self.width + action
        board = state.board.reshape(batch, -1).clone()
        board.scatter_(1, cell.unsqueeze(1), color.unsqueeze(1))
        heights = state.heights.scatter_add(1, column, torch.ones_like(column))
        rays, _ = self._on(board.device)
        win = completes_line(board, cell, color, rays, self.k, exact=False)
        move_number = state.move_number + 1
        full = move_number >= self.height * self.width
        return ConnectFourState(
            to_play=1 - state.to_play,
            move_number=move_number,
            done=win | full,
            winner=torch.where(win, color, torch.zeros_like(color)),
            board=board.view_as(state.board),
            last_action=action,
            heights=heights,
        )

    def illegal_reason(self, state: ConnectFourState, action: int) -> str:
        return f"column {action + 1} is full"

    def from_board(self, board, to_play: int | None = None) -> ConnectFourState:
        """A one-game state from a board int [H, W] (+1 X, -1 O, 0 empty, row 0 on top).

        Raises GameError for floating discs, disc counts that cannot arise, or lines
        that cannot both stand (both players, or a winner who did not move last).
        """
        board = torch.as_tensor(board).to(torch.int8)
        if tuple(board.shape) != (self.height, self.width):
            raise GameError(f"{self.name}: board must be {self.height}x{self.width}, got {tuple(board.shape)}")
        if bool(((board < -1) | (board > 1)).any()):
            raise GameError(f"{self.name}: board cells must be +1 (X), -1 (O) or 0 (empty)")
        occupied = board != 0
        floating = occupied[:-1] & ~occupied[1:]  # [H-1, W] a disc above an empty cell
        if bool(floating.any()):
            column = int(floating.any(dim=0).nonzero()[0, 0])
            raise GameError(f"{self.name}: a disc floats above an empty cell in column {column + 1}")
        crosses, noughts = int((board == 1).sum()), int((board == -1).sum())
        if not 0 <= crosses - noughts <= 1:
            raise GameError(f"{self.name}: X has {crosses} discs and O {noughts}; X moves first, so this cannot arise")
        if to_play is None:
            to_play = 0 if crosses == noughts else 1
        _, windows = self._on("cpu")
        padded = pad_board(board.view(1, -1))[0]
        lines = {color: bool((padded[windows] == color).all(dim=1).any()) for color in (1, -1)}
        if lines[1] and lines[-1]:
            raise GameError(f"{self.name}: both players have {self.k} in a row; this position cannot arise")
        winner = 1 if lines[1] else -1 if lines[-1] else 0
        if (winner == 1 and crosses == noughts) or (winner == -1 and crosses > noughts):
            raise GameError(f"{self.name}: {DISCS[winner]} has {self.k} in a row but the other player moved after")
        moves = crosses + noughts
        return ConnectFourState(
            to_play=torch.tensor([to_play], dtype=torch.long),
            move_number=torch.tensor([moves], dtype=torch.long),
            done=torch.tensor([winner != 0 or moves == self.height * self.width]),
            winner=torch.tensor([winner], dtype=torch.int8),
            board=board.unsqueeze(0).clone(),
            last_action=torch.tensor([-1], dtype=torch.long),
            heights=occupied.sum(dim=0, dtype=torch.long).unsqueeze(0),
        )

    @kernels.twin(_compiled_expand_rows)
    def expand_rows(self, states: ConnectFourState, parent: torch.Tensor, child: torch.Tensor, action: torch.Tensor,
                    encode: bool = True) -> Expansion | None:
        """The compiled expansion (Game.expand_rows): the drop, its line check, the columns with
        room and the planes of each new row in one pass; None off the CPU, without numba, on
        arrays not contiguous in memory, or in a subclass with rules or planes of its own."""
        return None

    def encode(self, state: ConnectFourState) -> torch.Tensor:
        """float [B, 3, H, W]: own discs, opponent discs, ones."""
        own, opponent = stone_planes(state)
        return torch.stack([own, opponent, torch.ones_like(own)], dim=1)

    # -- for the GUI ---------------------------------------------------------------------------
    def click_actions(self, state: ConnectFourState) -> torch.Tensor:
        """long [B, H * W]: a click anywhere in a column drops a disc into it."""
        columns = torch.arange(self.width, device=state.device).repeat(self.height)
        return columns.expand(state.batch_size, -1)

    def action_cells(self, state: ConnectFourState) -> torch.Tensor:
        """long [B, W]: the cell where a disc dropped into each column lands (-1: the column is full)."""
        columns = torch.arange(self.width, device=state.device)
        landing = (self.height - 1 - state.heights) * self.width + columns
        return torch.where(state.heights < self.height, landing, -1)

    # -- text ---------------------------------------------------------------------------------
    def format_action(self, action: int) -> str:
        return str(int(action) + 1)

    def parse_action(self, text: str) -> int:
        t = text.strip()
        if not is_whole_number(t) or not 1 <= int(t) <= self.width:
            raise GameError(f"{self.name}: cannot read move {text!r}; write a column number 1..{self.width}")
        return int(t) - 1

    def describe(self) -> str:
        rule = "" if self.k == 4 else f", {self.k} in a row"
        return f"connect four {self.height}x{self.width}{rule}"

    def render(self, state: ConnectFourState, index: int = 0) -> str:
        """The board of game `index`, column numbers underneath, and a status line on top."""
        if bool(state.done[index]):
            winner = int(state.winner[index])
            status = f"{DISCS[winner]} wins" if winner else "draw"
        else:
            status = f"{DISCS[int(player_sign(state.to_play[index]))]} to move"
        last = int(state.last_action[index])
        if last >= 0:
            status += f" (last move {last + 1})"
        cell_width = len(str(self.width))
        lines = [f"{self.describe()} - {status}"]
        for row in state.board[index].tolist():
            lines.append(" ".join(DISCS[v].rjust(cell_width) for v in row))
        lines.append(" ".join(str(c + 1).rjust(cell_width) for c in range(self.width)))
        return "\n".join(lines)
