"""Othello (Reversi) on an even size x size board, batched.

Option: size (even, 4..16, default 8). The start holds the four centre squares:
white (O, second player, -1) on the top-left and bottom-right ones (d4, e5 on 8 x 8),
black (X, first player, +1) on d5 and e4. Black moves first.

A move places a disc that brackets at least one straight line (8 directions) of
opponent discs against one's own disc; every bracketed line flips. A player with no
such move must pass: pass is then the only legal action, and illegal otherwise. The
game ends as soon as neither player can place a disc (a full board included); the
player with more discs wins, equal counts draw.

Actions are cells, row * width + col, row 0 at the top, and the pass is the last
action (H * W). Moves are written the Othello way: a column letter and a row number
counted from the top ("a1" is the top-left corner; black's openings on 8 x 8 are
d3, c4, f5, e6), or "pass".

Planes (from the view of the player to move): own discs, opponent discs, the legal
placements of the player to move, a plane of ones.

How the rules vectorise (all games of the batch at once, no loop over games; N = H * W):

* legal placements by shift-and-mask, the eight shifts done as one `index_select` over
  a flat tensor [8 * (N + 1), B] (one block per direction, cell N of each block an
  always-empty pad; cells first and the batch last, because copying whole rows is far
  faster on a CPU than gathering inside each row). `bracketed` marks opponent discs
  from which a direction runs over opponent discs into an own disc; a placement is
  legal where an empty cell's neighbour in some direction is bracketed in that
  direction. size - 2 rounds reach the longest possible run.
* the end: when the player to move has no placement, the other player's placements
  are computed for those games only; if neither can place, the game is over.
* flips by one gather of the eight rays leaving the played cell (`ray_table`).

The legal placements of the player to move are kept in the state (`legal`), so
`legal_mask` and `encode` cost almost nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import (
    BoardState,
    Game,
    GameError,
    Option,
    board_symmetries,
    format_square,
    parse_square,
    player_sign,
    render_grid,
    sample_uniform_legal,
    stone_planes,
)
from .keyed_random import Source, advance, subset

DIRECTIONS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))
SIZES = (4, 6, 8, 10, 12, 14, 16)
DISCS = {1: "X", -1: "O", 0: "."}
PASS_TEXT = "pass"


@dataclass(eq=False)
class OthelloState(BoardState):
    """A batch of Othello positions.

    Fields (besides BoardState's):
      legal: bool [B, H, W]  the cells where the player to move may place a disc
                             (all False when that player must pass or the game is over)
    `last_action` holds the pass (H * W) after a pass, so symmetries move it as an action.
    """

    legal: torch.Tensor


def ray_table(size: int) -> torch.Tensor:
    """long [N + 1, 8, size - 1]: the cells stepping away from each cell in the 8 directions.

    N = size * size; off-board steps point at the pad cell N, and so does every step of
    row N (the pass), which therefore flips nothing.
    """
    cells = size * size
    table = torch.full((cells + 1, len(DIRECTIONS), size - 1), cells, dtype=torch.long)
    for row in range(size):
        for col in range(size):
            for direction, (row_step, col_step) in enumerate(DIRECTIONS):
                for distance in range(1, size):
                    r, c = row + distance * row_step, col + distance * col_step
                    if 0 <= r < size and 0 <= c < size:
                        table[row * size + col, direction, distance - 1] = r * size + c
    return table


def neighbour_table(size: int) -> torch.Tensor:
    """long [8 * (N + 1)]: index of the next cell in each direction, within a flat tensor
    holding one block of N + 1 cells (the last a pad) per direction; off-board -> the pad."""
    cells = size * size
    rays = ray_table(size)[:, :, 0]  # [N + 1, 8] the first step
    block = torch.arange(len(DIRECTIONS)).view(-1, 1) * (cells + 1)
    return (rays.t() + block).reshape(-1)


def placements(board: torch.Tensor, color: torch.Tensor, neighbours: torch.Tensor, rounds: int) -> torch.Tensor:
    """Where `color` may place a disc: bool [B, N].

    board: int8 [B, N] (+1 / -1 / 0); color: int8 [B] (+1 / -1); neighbours: the
    `neighbour_table`; rounds: size - 2 (the longest run of opponent discs).
    """
    batch, cells = board.shape
    directions = len(DIRECTIONS)
    # Cells first, batch last: index_select along dim 0 copies whole rows (much faster on CPU).
    padded = torch.cat([board, board.new_zeros(batch, 1)], dim=1) * color.view(batch, 1)  # own = +1
    padded = padded.t().contiguous()  # [N + 1, B]
    own = (padded == 1).repeat(directions, 1)  # [8 * (N + 1), B]
    opponent = (padded == -1).repeat(directions, 1)
    # bracketed[d, i]: i holds an opponent disc and direction d from i runs over opponent discs into an own one.
    bracketed = opponent & own.index_select(0, neighbours)
    for _ in range(rounds - 1):
        bracketed = opponent & (own | bracketed).index_select(0, neighbours)
    reaches = bracketed.index_select(0, neighbours)
    while reaches.shape[0] > cells + 1:  # OR the direction blocks together: 8 -> 4 -> 2 -> 1
        half = reaches.shape[0] // 2
        reaches = reaches[:half] | reaches[half:]
    return reaches[:cells].t() & (board == 0)


class Othello(Game):
    name = "othello"
    board_style = "green"
    options = {
        "size": Option(8, int, lambda v: v in SIZES, ", ".join(map(str, SIZES))),
    }
    state_type = OthelloState
    board_fields = ("board", "legal")
    action_fields = ("last_action",)
    forced_pass = True
    has_score = True
    has_ownership = True
    presets = ("othello:size=8", "othello:size=6")
    sgf_game_type = 2
    sgf_default_size = 8
    gtp_playable = True

    def __init__(self, **options):
        super().__init__(**options)
        size = self.config["size"]
        self.size = self.height = self.width = size
        self.num_cells = size * size
        self.pass_action = self.num_cells
        self.board_shape = (size, size)
        self.num_actions = self.num_cells + 1
        self.num_planes = 4
        self.symmetries = board_symmetries(size, size, extra_actions=1)
        self._rays = ray_table(size)
        self._neighbours = neighbour_table(size)
        self._tables: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}

    def _on(self, device) -> tuple[torch.Tensor, torch.Tensor]:
        """(rays, neighbours) on `device`."""
        device = torch.device(device)
        if device not in self._tables:
            self._tables[device] = (self._rays.to(device), self._neighbours.to(device))
        return self._tables[device]

    def _placements(self, board: torch.Tensor, color: torch.Tensor) -> torch.Tensor:
        """Legal placements of `color` (int8 [B]) on flat boards int8 [B, N]: bool [B, N]."""
        _, neighbours = self._on(board.device)
        return placements(board, color, neighbours, max(self.size - 2, 1))

    def _settle(self, board: torch.Tensor, to_play: torch.Tensor, **fields) -> OthelloState:
        """The state with `board` (int8 [B, N]) and `to_play` (long [B]) to move: legal moves, end, winner."""
        batch = board.shape[0]
        color = player_sign(to_play).to(torch.int8)
        mine = self._placements(board, color)
        done = ~mine.any(dim=1)  # so far: the player to move cannot place
        if bool(done.any()):  # the game is over unless the other player can (then this one passes)
            stuck = done.nonzero().flatten()
            done[stuck] = ~self._placements(board[stuck], -color[stuck]).any(dim=1)
        winner = torch.where(done, board.sum(dim=1, dtype=torch.long).sign(), 0).to(torch.int8)
        return OthelloState(
            to_play=to_play,
            done=done,
            winner=winner,
            board=board.view(batch, self.size, self.size),
            legal=mine.view(batch, self.size, self.size),
            **fields,
        )

    # -- rules --------------------------------------------------------------------------------
    def initial_state(self, batch: int = 1, device="cpu") -> OthelloState:
        board = torch.zeros(batch, self.size, self.size, dtype=torch.int8, device=device)
        low, high = self.size // 2 - 1, self.size // 2
        board[:, low, low] = board[:, high, high] = -1
        board[:, low, high] = board[:, high, low] = 1
        return self._settle(
            board.view(batch, -1),
            torch.zeros(batch, dtype=torch.long, device=device),
            move_number=torch.zeros(batch, dtype=torch.long, device=device),
            last_action=torch.full((batch,), -1, dtype=torch.long, device=device),
        )

    def legal_mask(self, state: OthelloState) -> torch.Tensor:
        live = ~state.done.unsqueeze(1)
        cells = state.legal.view(state.batch_size, -1) & live
        must_pass = live & ~cells.any(dim=1, keepdim=True)
        return torch.cat([cells, must_pass], dim=1)

    def _apply(self, state: OthelloState, action: torch.Tensor) -> OthelloState:
        batch, cells = state.batch_size, self.num_cells
        rays, _ = self._on(state.device)
        color = player_sign(state.to_play).to(torch.int8)
        padded = torch.cat([state.board.reshape(batch, cells), state.board.new_zeros(batch, 1)], dim=1)
        ray = rays[action]  # [B, 8, L]; a pass: all pad
        along = padded.gather(1, ray.view(batch, -1)).view_as(ray) * color.view(batch, 1, 1)  # own = +1
        run = (along == -1).cumprod(dim=2)  # [B, 8, L] the leading opponent discs
        length = run.sum(dim=2, keepdim=True)
        beyond = torch.cat([along, along.new_zeros(batch, len(DIRECTIONS), 1)], dim=2).gather(2, length)
        flips = run.bool() & (beyond == 1)
        targets = torch.cat([torch.where(flips, ray, cells).view(batch, -1), action.view(batch, 1)], dim=1)
        padded.scatter_(1, targets, color.view(batch, 1).expand_as(targets))  # a pass places on the pad
        return self._settle(
            padded[:, :cells].contiguous(),
            1 - state.to_play,
            move_number=state.move_number + 1,
            last_action=action,
        )

    def from_board(self, board, to_play: int | None = None) -> OthelloState:
        """A one-game state from an int [H, W] board (+1 black, -1 white, 0 empty).

        `to_play` (0 black, 1 white) defaults to the disc-count parity as if nobody passed.
        The four centre squares are never empty in Othello; a board with an empty one is an error.
        """
        board = torch.as_tensor(board).to(torch.int8)
        if tuple(board.shape) != self.board_shape:
            raise GameError(f"{self.name}: board must be {self.size}x{self.size}, got {tuple(board.shape)}")
        if not bool(((board >= -1) & (board <= 1)).all()):
            raise GameError(f"{self.name}: board cells must be +1 (black), -1 (white) or 0 (empty)")
        low, high = self.size // 2 - 1, self.size // 2 + 1
        if bool((board[low:high, low:high] == 0).any()):
            raise GameError(f"{self.name}: the four centre squares are never empty; this position cannot arise")
        discs = int((board != 0).sum())
        if to_play is None:
            to_play = discs % 2
        if to_play not in (0, 1):
            raise GameError(f"{self.name}: to_play must be 0 (black) or 1 (white), got {to_play!r}")
        return self._settle(
            board.reshape(1, -1).clone(),
            torch.tensor([to_play], dtype=torch.long),
            move_number=torch.tensor([discs - 4], dtype=torch.long),
            last_action=torch.tensor([-1], dtype=torch.long),
        )

    def illegal_reason(self, state: OthelloState, action: int) -> str:
        text = self.format_action(action)
        can_place = bool(state.legal[0].any())
        if action == self.pass_action:
            return "pass is only legal when no move is"
        if int(state.board[0].view(-1)[action]) != 0:
            return f"{text} is occupied"
        if not can_place:
            return f"{text} flips nothing; {DISCS[int(player_sign(state.to_play[0]))]} has no move and must pass"
        return f"{text} flips nothing"

    def random_playout(self, state: OthelloState, source: Source = None) -> torch.Tensor:
        """Uniformly random legal moves until every game ends; returns result float [B].

        Draws exactly what the base class's stepping loop draws (`source` is a generator or
        per-game keys long [B], games/keyed_random.py), but skips step's checks and drops finished
        games from the batch as it goes.
        """
        result = self.result(state).clone()
        index = (~state.done).nonzero().flatten()
        live, live_source = state[index], subset(source, index)
        ply = 0
        while index.numel():
            action = sample_uniform_legal(self.legal_mask(live), advance(live_source, ply))
            live = self._apply(live, action)
            ply += 1
            ended = live.done
            if bool(ended.any()):
                result[index[ended]] = self.result(live[ended])
                index, live, live_source = index[~ended], live[~ended], subset(live_source, ~ended)
        return result

    def score(self, state: OthelloState) -> torch.Tensor:
        """float [B]: black's discs minus white's."""
        return state.board.flatten(1).sum(dim=1, dtype=torch.long).to(torch.float32)

    def ownership(self, state: OthelloState) -> torch.Tensor:
        """int8 [B, H, W]: the discs (+1 black, -1 white, 0 empty)."""
        return state.board.clone()

    def encode(self, state: OthelloState) -> torch.Tensor:
        own, opponent = stone_planes(state)
        return torch.stack([own, opponent, state.legal.float(), torch.ones_like(own)], dim=1)

    # -- text ---------------------------------------------------------------------------------
    def format_action(self, action: int) -> str:
        action = int(action)
        if action == self.pass_action:
            return PASS_TEXT
        row, col = divmod(action, self.width)
        return format_square(row, col, self.height, rows_from_top=True)

    def parse_action(self, text: str) -> int:
        if text.strip().lower() == PASS_TEXT:
            return self.pass_action
        try:
            row, col = parse_square(self.name, text, self.height, self.width, rows_from_top=True)
        except GameError as error:
            raise GameError(f"{error} or 'pass'") from None
        return row * self.width + col

    def describe(self) -> str:
        return f"{self.name} {self.size}x{self.size}"

    def render(self, state: OthelloState, index: int = 0) -> str:
        """Text board of game `index`: X black, O white, '*' the legal moves of the player to move."""
        board = state.board[index]
        cells = [[DISCS[v] for v in row] for row in board.tolist()]
        for row, col in state.legal[index].nonzero().tolist():
            cells[row][col] = "*"
        last = int(state.last_action[index])
        mark = divmod(last, self.width) if 0 <= last < self.num_cells else None
        counts = f"X {int((board == 1).sum())}, O {int((board == -1).sum())}"
        if bool(state.done[index]):
            winner = int(state.winner[index])
            status = f"{DISCS[winner]} wins" if winner else "draw"
        else:
            player = DISCS[int(player_sign(state.to_play[index]))]
            status = f"{player} to move" + ("" if bool(state.legal[index].any()) else " (must pass)")
        return render_grid(cells, rows_from_top=True, title=f"{self.describe()} - {counts} - {status}", mark=mark)
