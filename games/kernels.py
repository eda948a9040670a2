"""Compiled CPU loops (numba) for the few per-game scans that torch does slowly on a CPU.

Why: the rules stay batched functions over tensors, but some steps are a short
scan per game (the line through a new stone, the n-th legal move of a row), and
on a CPU torch runs such a scan as a dozen whole-batch operations, several of
them on booleans, which its CPU kernels do not vectorise (a comparison of
[1024, 64] int8 with a scalar costs four times an addition). One compiled loop
over the batch does the same work in one pass: for 1,024 boards of 15 x 15 a
gomoku step with its line check takes microseconds instead of hundreds.

Each kernel here has a torch twin that stays the reference, serves every other
device (CUDA) and runs when numba is missing; the tests check that the two agree.
Kernels take CPU tensors through `.numpy()` (no copy), run one thread (torch's
threads keep the network), and are compiled once (a few seconds, the first time a
program uses them) and cached on disk beside the sources (`__pycache__/*.nbi, *.nbc`).
Numba does not notice when a function compiled into another file's kernel changes: after
editing this file, delete azero/search/__pycache__/kernels.*.nb? as well.
Set AZERO_NO_KERNELS=1 to run the torch twins everywhere.
"""

from __future__ import annotations

import os

import numpy as np
import torch

try:  # pragma: no cover - exercised by whichever way the machine is set up
    if os.environ.get("AZERO_NO_KERNELS", "") not in ("", "0"):
        raise ImportError("disabled by AZERO_NO_KERNELS")
    from numba import njit

    AVAILABLE = True
except ImportError:  # pragma: no cover
    AVAILABLE = False

    def njit(*args, **kwargs):
        def wrap(fn):
            return fn

        return wrap if not (len(args) == 1 and callable(args[0])) else args[0]


def usable(*tensors: torch.Tensor) -> bool:
    """Whether the compiled kernels can take these tensors (numba present, all on the CPU)."""
    return AVAILABLE and all(t.device.type == "cpu" for t in tensors)


@njit(cache=True, nogil=True, inline="always")
def _line_through(row, c, stone, rays, k, exact):  # pragma: no cover - compiled
    """Whether `stone` at cell c of the flat board `row` stands in a line of k (exactly k)."""
    cells = row.shape[0]
    for d in range(rays.shape[1]):
        beyond = 0
        for s in range(rays.shape[2]):
            for step in range(rays.shape[3]):
                nxt = rays[c, d, s, step]
                if nxt >= cells or row[nxt] != stone:
                    break
                beyond += 1
        if beyond == k - 1 if exact else beyond >= k - 1:
            return True
    return False


@njit(cache=True, nogil=True)
def _completes_line(board, cell, color, rays, k, exact, out):  # pragma: no cover - compiled
    for b in range(board.shape[0]):
        out[b] = _line_through(board[b], cell[b], color[b], rays, k, exact)


def completes_line(board_flat: torch.Tensor, cell: torch.Tensor, color: torch.Tensor, rays: torch.Tensor, k: int, exact: bool):
    """The compiled form of lines.completes_line (same arguments, CPU tensors): bool [B]."""
    out = torch.empty(board_flat.shape[0], dtype=torch.bool)
    _completes_line(
        board_flat.contiguous().numpy(), cell.contiguous().numpy(), color.contiguous().numpy(), rays.numpy(), k, exact,
        out.numpy(),
    )
    return out


@njit(cache=True, nogil=True, inline="always")
def nth_true(row, nth):  # pragma: no cover - compiled
    """The index of the (nth + 1)-th nonzero entry of `row`, the last index if there are fewer."""
    seen = 0
    for a in range(row.shape[0]):  # branch-free count; the one test is false until the end
        seen += row[a] != 0
        if seen > nth:
            return a
    return row.shape[0] - 1


@njit(cache=True, nogil=True, inline="always")
def nth_of(draw, count):  # pragma: no cover - compiled
    """floor(draw * count) in float32, as the torch twin rounds it."""
    return np.int64(np.float32(draw) * np.float32(count))


@njit(cache=True, nogil=True)
def _random_true(mask, draw, index, count):  # pragma: no cover - compiled
    for b in range(mask.shape[0]):
        row = mask[b]
        n = 0
        for a in range(row.shape[0]):
            n += row[a]
        count[b] = n
        index[b] = nth_true(row, nth_of(draw[b], n))


def random_true(mask: torch.Tensor, uniform_draw: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The compiled form of games.random.random_true (same arguments and results, CPU tensors)."""
    batch = mask.shape[0]
    index = torch.empty(batch, dtype=torch.long)
    count = torch.empty(batch, dtype=torch.int16)
    _random_true(
        mask.contiguous().view(torch.uint8).numpy(),
        uniform_draw.contiguous().numpy(),
        index.numpy(),
        count.numpy(),
    )
    return index, count


@njit(cache=True, nogil=True)
def _place_stone(board, action, to_play, move_number, rays, k, exact, out_move, out_done, out_winner):  # pragma: no cover - compiled
    batch, cells = board.shape
    for b in range(batch):
        row = board[b]
        c = action[b]
        if c < 0 or c >= cells:  # numba does not check bounds; torch's scatter would raise
            raise IndexError("place_stone: action out of range")
        stone = np.int8(1 - 2 * to_play[b])
        row[c] = stone
        hit = _line_through(row, c, stone, rays, k, exact)
        move = move_number[b] + 1
        out_move[b] = move
        out_done[b] = hit or move >= cells
        out_winner[b] = stone if hit else 0


def place_stone(board_flat, action, to_play, move_number, rays, k: int, exact: bool):
    """A k-in-a-row move on flat boards (CPU tensors): the stone of the player to move goes on
    `action`; returns (board int8 [B, A], move_number + 1, done bool [B], winner int8 [B])."""
    batch = board_flat.shape[0]
    out_board = board_flat.clone()  # torch copies rows far faster than a compiled loop does
    out_move = torch.empty(batch, dtype=torch.long)
    out_done = torch.empty(batch, dtype=torch.bool)
    out_winner = torch.empty(batch, dtype=torch.int8)
    _place_stone(
        out_board.numpy(),
        action.contiguous().numpy(),
        to_play.contiguous().numpy(),
        move_number.contiguous().numpy(),
        rays.numpy(),
        k,
        exact,
        out_move.numpy(),
        out_done.numpy(),
        out_winner.numpy(),
    )
    return out_board, out_move, out_done, out_winner


@njit(cache=True, nogil=True)
def _empty_cells_chosen(board, action, done, no_action, ok):  # pragma: no cover - compiled
    batch, cells = board.shape
    for b in range(batch):
        a = action[b]
        if done[b]:
            ok[b] = a == no_action
        else:
            ok[b] = 0 <= a < cells and board[b, a] == 0


def empty_cells_chosen(board_flat, action, done, no_action: int) -> torch.Tensor:
    """bool [B]: each unfinished game's action is an empty cell; finished games have `no_action`."""
    ok = torch.empty(board_flat.shape[0], dtype=torch.bool)
    _empty_cells_chosen(board_flat.contiguous().numpy(), action.contiguous().numpy(), done.numpy(), no_action, ok.numpy())
    return ok


@njit(cache=True, nogil=True, inline="always")
def hash_one(v):  # pragma: no cover - compiled; games.random._hash32 of one int64
    v &= 0xFFFFFFFF
    v ^= v >> 16
    v = (v * 0x7FEB352D) & 0xFFFFFFFF
    v ^= v >> 15
    v = (v * 0x846CA68B) & 0xFFFFFFFF
    return v ^ (v >> 16)


@njit(cache=True, nogil=True)
def _hash32(x, out):  # pragma: no cover - compiled
    for i in range(x.shape[0]):
        out[i] = hash_one(x[i])


@njit(cache=True, nogil=True)
def _fold(keys, data, out):  # pragma: no cover - compiled; games.random.fold
    one = data.shape[0] == 1
    for i in range(keys.shape[0]):
        d = data[0] if one else data[i]
        out[i] = hash_one(keys[i] * 0x9E3779B1 + hash_one(d + 0x632BE5AB))


def fold(keys: torch.Tensor, data: torch.Tensor) -> torch.Tensor:
    """The compiled form of games.random.fold for keys long [B] and data long [B] or [1]."""
    out = torch.empty(keys.shape, dtype=torch.long)
    _fold(keys.contiguous().numpy(), data.contiguous().view(-1).numpy(), out.numpy())
    return out


def hash32(x: torch.Tensor) -> torch.Tensor:
    """The compiled form of games.random._hash32 (long tensor of any shape, on the CPU)."""
    out = torch.empty(x.shape, dtype=torch.long)
    _hash32(x.contiguous().view(-1).numpy(), out.view(-1).numpy())
    return out



@njit(cache=True, nogil=True)
def _sample_legal(mask, draws, no_action, out):  # pragma: no cover - compiled
    batch, width = mask.shape
    for b in range(batch):
        row = mask[b]
        guess = min(np.int64(np.float32(draws[b, 0]) * np.float32(width)), width - 1)
        if row[guess]:
            out[b] = guess
            continue
        n = 0
        for a in range(width):
            n += row[a]
        out[b] = nth_true(row, nth_of(draws[b, 1], n)) if n > 0 else no_action


@njit(cache=True, nogil=True)
def _key_draws(keys, draws):  # pragma: no cover - compiled; games.random.uniform(keys, (B, 2))
    scale = np.float32(1.0 / (1 << 24))
    for b in range(keys.shape[0]):
        draws[b, 0] = np.float32(hash_one(keys[b]) >> 8) * scale
        draws[b, 1] = np.float32(hash_one(keys[b] + 0x632BE5AB) >> 8) * scale


def sample_legal(mask: torch.Tensor, draws: torch.Tensor | None, no_action: int, keys: torch.Tensor | None = None):
    """The compiled form of games.base.sample_uniform_legal, from its draws (float [B, 2]) or,
    with draws None, from per-game keys (the same draws as games.random.uniform makes)."""
    batch = mask.shape[0]
    if draws is None:
        draws = torch.empty((batch, 2), dtype=torch.float32)
        _key_draws(keys.contiguous().numpy(), draws.numpy())
    out = torch.empty(batch, dtype=torch.long)
    _sample_legal(mask.contiguous().view(torch.uint8).numpy(), draws.contiguous().numpy(), no_action, out.numpy())
    return out
