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

from .random import Source, uniform

DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


def ray_table(height: int, width: int, length: int) -> torch.Tensor:
    """long [H*W, 4, 2, length]: cells along each direction from each cell (off-board -> H*W)."""
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


def completes_line(
    board_flat: torch.Tensor, cell: torch.Tensor, color: torch.Tensor, rays: torch.Tensor, k: int, exact: bool
) -> torch.Tensor:
    """Whether the stone of `color` at `cell` stands in a line of k (exactly k if `exact`).

    board_flat: int8 [B, H*W] (the stone already placed); cell: long [B]; color: int8 [B];
    rays: the table of `ray_table(H, W, k)`. Returns bool [B].
    """
    batch = board_flat.shape[0]
    padded = pad_board(board_flat)
    along = padded.gather(1, rays[cell].view(batch, -1)).view(batch, 4, 2, -1)
    same = (along == color.view(batch, 1, 1, 1)).to(torch.int8)
    run = same.cumprod(dim=-1).sum(dim=-1)  # [B, 4, 2] stones beyond the cell on each side
    total = run.sum(dim=-1) + 1  # [B, 4]
    hit = total == k if exact else total >= k
    return hit.any(dim=1)


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

    board_flat: int8 [B, H*W] of unfinished games; to_play_color: int8 [B] (+1 / -1);
    source: a torch.Generator or per-game keys long [B].
    Returns the winning colour int8 [B] (0 = draw).
    """
    batch, cells = board_flat.shape
    device = board_flat.device
    occupied = board_flat != 0
    keys = uniform(source, (batch, cells), device=device)
    keys = keys.masked_fill(occupied, -1.0)  # stones already placed come first in the order
    order = keys.argsort(dim=1)
    rank = torch.empty_like(order)
    rank.scatter_(1, order, torch.arange(cells, device=device).expand(batch, cells))
    # Empty cells get times 0, 1, 2, ... in the drawn order; stones already there all get -1.
    time = torch.where(occupied, -1, rank - occupied.sum(dim=1, keepdim=True))
    parity = (time % 2).to(torch.int8)  # 0: the player to move, 1: the other
    color = torch.where(occupied, board_flat, to_play_color.view(batch, 1) * (1 - 2 * parity))

    big = cells + 1
    color_p = torch.cat([color, color.new_zeros(batch, 1)], dim=1)
    time_p = torch.cat([time, time.new_full((batch, 1), big)], dim=1)
    win_color = color_p[:, windows]  # [B, N, k]
    first = win_color[:, :, 0]
    filled = (win_color == first.unsqueeze(-1)).all(dim=-1) & (first != 0)
    done_at = time_p[:, windows].amax(dim=-1)  # [B, N] when the window is filled
    if exact:
        # An overline does not win: a window counts only if neither end cell already
        # holds the same colour when the window fills (times of new stones are distinct;
        # stones already on the board share time -1, hence <=).
        end_color = color_p[:, window_ends]  # [B, N, 2]
        end_time = time_p[:, window_ends]
        extended = (end_color == first.unsqueeze(-1)) & (end_time <= done_at.unsqueeze(-1))
        filled = filled & ~extended.any(dim=-1)
    done_at = torch.where(filled, done_at, torch.full_like(done_at, big))
    earliest, which = done_at.min(dim=1)
    winner = first.gather(1, which.unsqueeze(1)).squeeze(1)
    return torch.where(earliest < big, winner, torch.zeros_like(winner))
