"""Gomoku: k stones in a row on an H x W board, batched.

Options: size (5..19, default 15), or width/height for rectangles; k (3..6, default 5);
rule "freestyle" (k or more in a row wins) or "standard" (exactly k wins, an overline
does not). A full board without a line is a draw. The first player (X, black) moves first.

Actions are cells, row * width + col, row 0 at the top. Moves are written like
players write them: a column letter (a, b, c, ... every letter, 'i' included) and a
row number counted from the bottom, so on 15 x 15 the centre is "h8".

Planes (from the view of the player to move): own stones, opponent stones, the last
move, and a plane of ones (so the network sees the board's edge through padding).
"""

from __future__ import annotations

import torch

from . import kernels
from .base import (
    NO_ACTION,
    BoardState,
    Expansion,
    Game,
    GameError,
    Option,
    board_symmetries,
    format_square,
    keeps_rules,
    live_rows,
    new_board_state,
    parse_square,
    player_sign,
    player_signs,
    render_grid,
)
from .keyed_random import subset
from .line_geometry import completes_line, line_rays, permutation_playout, window_table

RULES = ("freestyle", "standard")
STONES = {1: "X", -1: "O", 0: "."}


# -- the compiled forms of Gomoku's rules (games/kernels.py), chosen by kernels.twin ------------------
def _compiled_legal_mask(game: "Gomoku", state: BoardState) -> torch.Tensor:
    return kernels.empty_cells(state.board.view(state.batch_size, -1), state.done)


def _compiled_checked_apply(game: "Gomoku", state: BoardState, action: torch.Tensor) -> BoardState:
    # the compiled loop checks and plays in one pass; on a bad move, the usual error
    new = kernels.play_stones(state, action, game._kernel_rays, game.k, game.exact, True, NO_ACTION)
    if new is None:
        game._raise_illegal(state, action, game.check_actions(state, action))
    return new


def _compiled_check_actions(game: "Gomoku", state: BoardState, action: torch.Tensor) -> torch.Tensor:
    return kernels.empty_cells_chosen(state.board.view(state.batch_size, -1), action, state.done, NO_ACTION)


def _compiled_apply(game: "Gomoku", state: BoardState, action: torch.Tensor) -> BoardState:
    return kernels.play_stones(state, action, game._kernel_rays, game.k, game.exact, False, NO_ACTION)


def _compiled_expand_rows(game: "Gomoku", states: BoardState, parent: torch.Tensor, child: torch.Tensor,
                          action: torch.Tensor, encode: bool = True) -> Expansion:
    if not (states.board.is_contiguous() and keeps_rules(type(game), Gomoku)):
        return NotImplemented
    return kernels.expand_stones(states, parent, child, action, game._kernel_rays, game.k, game.exact, encode)


def _compiled_encode(game: "Gomoku", state: BoardState) -> torch.Tensor:
    if not state.board.is_contiguous():
        return NotImplemented
    batch = state.batch_size
    planes = kernels.stone_planes(state.board.view(batch, game.num_actions), state.to_play.contiguous(),
                                  state.last_action.contiguous())
    return planes.view(batch, 4, game.height, game.width)


class Gomoku(Game):
    name = "gomoku"
    board_style = "lines"
    options = {
        "size": Option(15, int, lambda v: 5 <= v <= 19, "5..19"),
        "width": Option(None, int, lambda v: 5 <= v <= 19, "5..19 (default: size)"),
        "height": Option(None, int, lambda v: 5 <= v <= 19, "5..19 (default: size)"),
        "k": Option(5, int, lambda v: 3 <= v <= 6, "3..6"),
        "rule": Option("freestyle", str, lambda v: v in RULES, " or ".join(RULES)),
    }
    state_type = BoardState
    board_fields = ("board",)
    action_fields = ("last_action",)
    presets = ("gomoku:size=9,k=5", "gomoku:size=15,k=5")
    sgf_game_type = 4
    sgf_default_size = 15

    def __init__(self, **options):
        super().__init__(**options)
        cfg = self.config
        height = cfg["height"] or cfg["size"]
        width = cfg["width"] or cfg["size"]
        self._setup(height, width, cfg["k"], cfg["rule"] == "standard")

    def canonical_config(self, config: dict) -> dict:
        """A square board is size=N, another width=W,height=H (no size): 'gomoku:size=15,width=8,
        height=8' (what a Piskvork brain builds for START 8) is 'gomoku:size=8'."""
        height = config["height"] or config["size"]
        width = config["width"] or config["size"]
        if width == height:
            return {**config, "size": width, "width": None, "height": None}
        return {**config, "size": None, "width": width, "height": height}

    def _setup(self, height: int, width: int, k: int, exact: bool):
        if k > max(height, width):
            raise GameError(f"{self.name}: k={k} does not fit on a {height}x{width} board")
        self.height, self.width, self.k, self.exact = height, width, k, exact
        self.board_shape = (height, width)
        self.num_actions = height * width
        self.num_planes = 4
        self.symmetries = board_symmetries(height, width)
        self._rays = line_rays(height, width, k)
        self._kernel_rays = self._rays.to(torch.int16).numpy()  # small enough for the first-level cache
        self._windows, self._window_ends = window_table(height, width, k)
        self._tables: dict[torch.device, tuple[torch.Tensor, ...]] = {}

    def _on(self, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        device = torch.device(device)
        if device not in self._tables:
            self._tables[device] = (
                self._rays.to(device),
                self._windows.to(device),
                self._window_ends.to(device),
            )
        return self._tables[device]

    # -- rules --------------------------------------------------------------------------------
    def initial_state(self, batch: int = 1, device="cpu") -> BoardState:
        return new_board_state(batch, self.height, self.width, device)

    @kernels.twin(_compiled_legal_mask)
    def legal_mask(self, state: BoardState) -> torch.Tensor:
        return live_rows(state.board.view(state.batch_size, -1).logical_not(), state.done)

    @kernels.twin(_compiled_checked_apply)
    def _checked_apply(self, state: BoardState, action: torch.Tensor) -> BoardState:
        return super()._checked_apply(state, action)

    @kernels.twin(_compiled_check_actions)
    def check_actions(self, state: BoardState, action: torch.Tensor) -> torch.Tensor:
        """As Game.check_actions, reading only the chosen squares (no full legal mask)."""
        in_range = (action >= 0) & (action < self.num_actions)
        chosen = action.clamp(0, self.num_actions - 1).unsqueeze(1)
        empty = state.board.view(state.batch_size, -1).gather(1, chosen).squeeze(1) == 0
        return torch.where(state.done, action == NO_ACTION, in_range & empty)

    @kernels.twin(_compiled_apply)
    def _apply(self, state: BoardState, action: torch.Tensor) -> BoardState:
        batch = state.batch_size
        rays, _, _ = self._on(state.device)
        color = player_signs(state.device).index_select(0, state.to_play)
        board = state.board.reshape(batch, -1).clone()
        board.scatter_(1, action.view(-1, 1), color.view(-1, 1))
        win = completes_line(board, action, color, rays, self.k, self.exact)
        move_number = state.move_number + 1
        full = move_number >= self.num_actions
        return BoardState(
            to_play=1 - state.to_play,
            move_number=move_number,
            done=win | full,
            winner=color * win,
            board=board.view_as(state.board),
            last_action=action,
        )

    def from_board(self, board, to_play: int | None = None) -> BoardState:
        board = torch.as_tensor(board, dtype=torch.int8).reshape(1, self.height, self.width)
        if board.shape[1:] != (self.height, self.width):
            raise GameError(f"{self.name}: board must be {self.height}x{self.width}")
        blacks, whites = int((board == 1).sum()), int((board == -1).sum())
        if to_play is None:
            to_play = 0 if blacks == whites else 1
        flat = board.view(1, -1)
        _, windows, ends = self._on("cpu")
        lines = {}
        for color in (1, -1):
            padded = torch.cat([flat, flat.new_zeros(1, 1)], dim=1)[0]
            full = (padded[windows] == color).all(dim=1)
            if self.exact:
                full &= ~(padded[ends] == color).any(dim=1)
            lines[color] = bool(full.any())
        if lines[1] and lines[-1]:
            raise GameError(f"{self.name}: both players have a line; this position cannot arise")
        winner = 1 if lines[1] else -1 if lines[-1] else 0
        moves = blacks + whites
        state = BoardState(
            to_play=torch.tensor([to_play], dtype=torch.long),
            move_number=torch.tensor([moves], dtype=torch.long),
            done=torch.tensor([winner != 0 or moves == self.num_actions]),
            winner=torch.tensor([winner], dtype=torch.int8),
            board=board.clone(),
            last_action=torch.tensor([-1], dtype=torch.long),
        )
        return state

    def illegal_reason(self, state: BoardState, action: int) -> str:
        return "that square is already occupied"

    def random_playout(self, state: BoardState, source=None) -> torch.Tensor:
        """Same distribution as stepping uniformly random moves; see lines.permutation_playout."""
        result = state.winner.to(torch.float32)
        live = ~state.done
        if bool(live.any()):
            everyone = bool(live.all())
            sub = state if everyone else state[live]
            source = source if everyone else subset(source, live)
            _, windows, ends = self._on(state.device)
            winner = permutation_playout(
                sub.board.reshape(sub.batch_size, -1),
                player_sign(sub.to_play).to(torch.int8),
                windows,
                ends,
                self.exact,
                source,
            )
            result = result.clone()
            result[live] = winner.to(torch.float32)
        return result

    @kernels.twin(_compiled_expand_rows)
    def expand_rows(self, states: BoardState, parent: torch.Tensor, child: torch.Tensor, action: torch.Tensor,
                    encode: bool = True) -> Expansion | None:
        """The compiled expansion (Game.expand_rows): the move, its line check, the legal mask
        and the planes of each new row in one pass over it; None off the CPU, without numba,
        on a board not contiguous in memory, or in a subclass with rules or planes of its own."""
        return None

    @kernels.twin(_compiled_encode)
    def encode(self, state: BoardState) -> torch.Tensor:
        # Written into one preallocated tensor: this runs for every leaf the search evaluates.
        batch, cells = state.batch_size, self.num_actions
        planes = torch.empty(batch, 4, cells, device=state.device)
        relative = state.board.view(batch, cells) * player_sign(state.to_play).to(torch.int8).view(-1, 1)
        planes[:, 0] = relative == 1  # own stones
        planes[:, 1] = relative == -1  # opponent stones
        last = planes[:, 2].zero_()
        last.scatter_(1, state.last_action.clamp(min=0).view(-1, 1), (state.last_action >= 0).float().view(-1, 1))
        planes[:, 3] = 1.0
        return planes.view(batch, 4, self.height, self.width)

    # -- text ---------------------------------------------------------------------------------
    def format_action(self, action: int) -> str:
        row, col = divmod(int(action), self.width)
        return format_square(row, col, self.height, rows_from_top=False)

    def parse_action(self, text: str) -> int:
        row, col = parse_square(self.name, text, self.height, self.width, rows_from_top=False)
        return row * self.width + col

    def describe(self) -> str:
        rule = "exactly" if self.exact else "or more"
        return f"{self.name} {self.height}x{self.width}, {self.k} {rule} in a row"

    def render(self, state: BoardState, index: int = 0) -> str:
        board = state.board[index].tolist()
        cells = [[STONES[v] for v in row] for row in board]
        last = int(state.last_action[index])
        mark = divmod(last, self.width) if last >= 0 else None
        if bool(state.done[index]):
            w = int(state.winner[index])
            status = f"{STONES[w]} wins" if w else "draw"
        else:
            status = f"{STONES[int(player_sign(state.to_play[index]))]} to move"
        return render_grid(cells, rows_from_top=False, title=f"{self.describe()} - {status}", mark=mark)
