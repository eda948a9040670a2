"""k-in-a-row machinery shared by gomoku, tic-tac-toe and Connect Four.

Two precomputed index tables turn line checks into a few gathers:

* rays:    long [H*W, 4, 2, L]  the cells stepping away from each cell in the four
                                line directions (both senses), L steps, off-board = H*W
* windows: long [N, k]          every run of k cells in a line; `window_ends` long [N, 2]
                                the cells just beyond both ends (off-board = H*W)

Boards are passed flat, int8 [B, H*W], with +1 / -1 stones; the extra index H*W
points at a padding cell that is always empty.
"""

from __future__ import annotations

import torch

from . import kernels
from .keyed_random import Source, random_orders

DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


def ray_table(height: int, width: int, length: int) -> torch.Tensor:
    """long [H*W, 4, 2, length]: cells along each direction from each cell (off-board -> H*W).

    For `completes_line` with k in a row, build it with length k + 1 and set the last
    step to the pad: `line_rays(height, width, k)`.
    """
    off = height * width
    table = torch.full((height * width, 4, 2, length), off, dtype=torch.long)
    for r in range(height):
        for c in range(width):
            for d, (dr, dc) in enumerate(DIRECTIONS):
                for s, sign in enumerate((1, -1)):
                    for step in range(1, length + 1):
                        rr, cc = r + sign * step * dr, c + sign * step * dc
                        if 0 <= rr < height and 0 <= cc < width:
                            table[r * width + c, d, s, step - 1] = rr * width + cc
    return table


def line_rays(height: int, width: int, k: int) -> torch.Tensor:
    """The ray table `completes_line` wants: k steps along each ray, then the pad."""
    rays = ray_table(height, width, k + 1)
    rays[..., -1] = height * width
    return rays


def window_table(height: int, width: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """All k-cell line windows: (cells long [N, k], end neighbours long [N, 2], off-board = H*W)."""
    off = height * width
    windows, ends = [], []

    def cell(r, c):
        return r * width + c if 0 <= r < height and 0 <= c < width else off

    for dr, dc in DIRECTIONS:
        for r in range(height):
            for c in range(width):
                rr, cc = r + (k - 1) * dr, c + (k - 1) * dc
                if not (0 <= rr < height and 0 <= cc < width):
                    continue
                windows.append([(r + i * dr) * width + (c + i * dc) for i in range(k)])
                ends.append([cell(r - dr, c - dc), cell(rr + dr, cc + dc)])
    if not windows:
        return torch.zeros((0, k), dtype=torch.long), torch.zeros((0, 2), dtype=torch.long)
    return torch.tensor(windows, dtype=torch.long), torch.tensor(ends, dtype=torch.long)


def pad_board(board_flat: torch.Tensor) -> torch.Tensor:
    """int8 [B, H*W] -> [B, H*W + 1] with an always-empty padding cell at the end."""
    return torch.cat([board_flat, board_flat.new_zeros(board_flat.shape[0], 1)], dim=1)


@kernels.twin(kernels.completes_line)
def completes_line(
    board_flat: torch.Tensor, cell: torch.Tensor, color: torch.Tensor, rays: torch.Tensor, k: int, exact: bool
) -> torch.Tensor:
    """Whether the stone of `color` at `cell` stands in a line of k (exactly k if `exact`).

    board_flat: int8 [B, H*W] (the stone already placed); cell: long [B]; color: int8 [B];
    rays: the table of `ray_table(H, W, k + 1)` (its last step always points at the
    pad, which never holds a stone). Returns bool [B].
    """
    batch = board_flat.shape[0]
    padded = pad_board(board_flat)
    along = padded.gather(1, rays.index_select(0, cell).view(batch, -1)).view(batch, 4, 2, -1)
    differs = (along != color.view(batch, 1, 1, 1)).to(torch.int8)
    run = differs.argmax(dim=-1)  # [B, 4, 2] stones beyond the cell on each side: the first other cell
    beyond = run.sum(dim=-1)  # [B, 4] the line's length less the cell itself
    hit = beyond == k - 1 if exact else beyond >= k - 1
    return hit.any(dim=1)


_LATE_BIT = 10  # 2^10 = 1,024 > the most cells a board has (19 x 19 = 361)
_LATE = 1 << _LATE_BIT


def permutation_playout(
    board_flat: torch.Tensor,
    to_play_color: torch.Tensor,
    windows: torch.Tensor,
    window_ends: torch.Tensor,
    exact: bool,
    source: Source,
) -> torch.Tensor:
    """Winner of a uniformly random playout of a place-anywhere k-in-a-row game, without stepping.

    When every empty cell is legal until the game ends, a uniformly random playout
    fills the empty cells in a uniformly random order with alternating colours and
    stops at the first completed line.  So draw one random order, give each empty
    cell its time and colour, and find the earliest completed window: the same
    distribution of outcomes as stepping move by move (tested against stepping).
    The orders come from `random_orders` (2^24 of them per board size, each as likely).

    board_flat: int8 [B, H*W] of unfinished games; to_play_color: int8 [B] (+1 / -1);
    source: a torch.Generator or per-game keys long [B].
    Returns the winning colour int8 [B] (0 = draw).
    """
    batch, cells = board_flat.shape
    device = board_flat.device
    empty = board_flat.logical_not()  # (torch's comparisons make bool slowly; this is quick)
    order = random_orders(source, batch, cells, device)  # long [B, cells]
    empty_in_order = empty.gather(1, order)
    count, k = windows.shape
    flat = windows.reshape(-1)
    if not exact:
        # Ticks: empty cells get 1, 2, 3, ... in the drawn order, stones already there 0.
        tick = torch.empty((batch, cells), dtype=torch.int16, device=device)
        ticks_in_order = torch.cumsum(empty_in_order, dim=1, dtype=torch.int16)
        tick.scatter_(1, order, ticks_in_order.mul_(empty_in_order.view(torch.uint8)))
        # The player to move (P) places the odd ticks. Each cell's value is its tick, plus
        # LATE (a power of two above every tick) if it is P's: then the value of a window
        # (the latest of its cells) is below LATE only if the opponent owns it all, and that
        # is when the opponent completes it; flipping the LATE bit gives the same for P.
        # (Integer arithmetic throughout: on a CPU torch's boolean operations are slow.)
        own_stone = (board_flat * to_play_color.view(batch, 1)).clamp_(min=0).to(torch.int16)
        value = tick.bitwise_or((tick & 1).bitwise_or_(own_stone).bitwise_left_shift_(_LATE_BIT))
        # Cells first and the batch last from here: index_select then copies whole rows,
        # far faster on a CPU than gathering inside each row. Row `cells` is a pad.
        both = torch.empty((cells + 1, 2, batch), dtype=torch.int16, device=device)
        both[:cells, 0] = value.t()
        torch.bitwise_xor(both[:cells, 0], _LATE, out=both[:cells, 1])
        both[cells] = 2 * _LATE - 1
        both = both.view(cells + 1, 2 * batch)
        done_at = both.index_select(0, flat).view(count, k, 2 * batch).amax(dim=1)  # [N, 2B]
        first_other, first_mover = done_at.amin(dim=0).view(2, batch)
        mover_wins = ((first_mover < first_other) & (first_mover < _LATE)).to(torch.int8)
        other_wins = ((first_other < first_mover) & (first_other < _LATE)).to(torch.int8)
        return (mover_wins - other_wins) * to_play_color  # neither completed a window: a draw
    occupied = ~empty
    # Empty cells get times 0, 1, 2, ... in the drawn order; stones already there all get -1.
    slot = torch.cumsum(empty_in_order, dim=1, dtype=torch.int16).sub_(1)
    time = torch.empty((batch, cells), dtype=torch.int16, device=device)
    time.scatter_(1, order, slot.masked_fill_(~empty_in_order, -1))
    # The player to move places the stones of even times: colour = to_play * (1 - 2 * (time & 1)).
    placed = to_play_color.view(batch, 1) * (1 - 2 * (time & 1)).to(torch.int8)
    color = torch.where(occupied, board_flat, placed)
    never = torch.tensor(cells + 1, dtype=torch.int16, device=device)
    color_t = torch.cat([color.t(), color.new_zeros(1, batch)])
    time_t = torch.cat([time.t(), never.expand(1, batch)])
    line = color_t.index_select(0, flat).view(count, k, batch).sum(dim=1, dtype=torch.int8)  # [N, B]
    filled = line.abs() == k  # every cell of the window has the same colour
    done_at = time_t.index_select(0, flat).view(count, k, batch).amax(dim=1)  # [N, B] when it fills
    # An overline does not win: a window counts only if neither end cell already holds
    # the same colour when the window fills (times of new stones are distinct; stones
    # already on the board share time -1, hence <=).
    ends = window_ends.reshape(-1)
    end_color = color_t.index_select(0, ends).view(count, 2, batch)
    end_time = time_t.index_select(0, ends).view(count, 2, batch)
    extended = (end_color == line.sign().unsqueeze(1)) & (end_time <= done_at.unsqueeze(1))
    filled = filled & ~extended.any(dim=1)
    done_at = torch.where(filled, done_at, never)
    earliest, which = done_at.min(dim=0)  # [B]
    winner = line.gather(0, which.unsqueeze(0)).squeeze(0).sign()
    return torch.where(earliest < never, winner, torch.zeros_like(winner))
