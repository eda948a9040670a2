"""Compiled CPU loops (numba) for the few per-game scans that torch does slowly on a CPU.

Why: the rules stay batched functions over tensors, but some steps are a short
scan per game (the line through a new stone, the n-th legal move of a row), and
on a CPU torch runs such a scan as a dozen whole-batch operations, several of
them on booleans, which its CPU kernels do not vectorise. One compiled loop over
the batch does the same work in one pass (docs/benchmarks.md, "Games").

Each kernel here has a torch twin that stays the reference, serves every other
device (CUDA) and runs when numba is missing; the tests check that the two agree.
Kernels take CPU tensors through `.numpy()` (no copy), run one thread (torch's
threads keep the network), and are compiled once (a few seconds, the first time a
program uses them) and cached on disk beside the sources (`__pycache__/*.nbi, *.nbc`).
Numba does not notice when a function compiled into another file's kernel changes: after
editing this file or azero/search/rule_kernels.py, delete azero/search/__pycache__/kernels.*.nb?
and games/__pycache__/threat_kernels.*.nb? as well.
Set AZERO_NO_KERNELS=1 to run the torch twins everywhere.

`twin` is the one place that chooses: a torch function decorated with its compiled twin runs
the twin where the kernels are on and the call's tensors are on the CPU.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
import weakref
from typing import NamedTuple

import numpy as np
import torch

try:  # pragma: no cover - exercised by whichever way the machine is set up
    if os.environ.get("AZERO_NO_KERNELS", "") not in ("", "0"):
        raise ImportError("disabled by AZERO_NO_KERNELS")
    from numba import njit
    from numba.extending import overload

    AVAILABLE = True
except ImportError:  # pragma: no cover
    AVAILABLE = False

    def njit(*args, **kwargs):
        def wrap(fn):
            return fn

        return wrap if not (len(args) == 1 and callable(args[0])) else args[0]

    def overload(*args, **kwargs):
        return lambda fn: fn


def _on_cpu(values) -> bool:
    """Whether every tensor among `values` (tensors, and what has a torch device: a State, a
    generator) is on the CPU."""
    for value in values:
        if isinstance(value, torch.Tensor):
            if not value.is_cpu:
                return False
        else:
            device = getattr(value, "device", None)
            if isinstance(device, torch.device) and device.type != "cpu":
                return False
    return True


class Entries:
    """Direct calls of a compiled function whose arguments' types the caller's `key` fixes.

    numba types every argument at every call to pick the compiled version; a named record (a
    namedtuple: a search tree, a rule's constants, a buffer group) takes its slow path, about a
    microsecond each, and a search step passes several: on small searches with a cheap
    evaluator that was 15-30% of the time. `entries(key, *args)` types the arguments once per
    key and from then on calls the compiled entry point for those types directly. The key must
    fix the type of every argument (their record classes, and for plain arrays their dtype,
    rank and contiguity, or the caller's own buffers): a wrong key would run code compiled for
    other types. `entries.dispatcher(*args)` is the ordinary, always-safe call."""

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        self._points: dict = {}

    def __call__(self, key, *args):
        point = self._points.get(key)
        if point is None:
            point = self._points[key] = self.dispatcher.compile(
                tuple(self.dispatcher.typeof_pyval(arg) for arg in args))
        return point(*args)


def twin(compiled):
    """Decorator pairing a torch function (the reference: other devices, no numba) with its
    compiled twin `compiled`, which takes the same arguments. A call runs the twin where the
    kernels are on (numba present, AZERO_NO_KERNELS unset: `AVAILABLE`) and every tensor among
    the positional arguments is on the CPU, unless the twin declines these inputs (it returns
    NotImplemented: a dtype or layout it does not take); else the reference. The one place
    that chooses between the two forms of a game's function."""

    def pair(reference):
        @functools.wraps(reference)
        def either(*args, **kwargs):
            if AVAILABLE and _on_cpu(args):
                result = compiled(*args, **kwargs)
                if result is not NotImplemented:
                    return result
            return reference(*args, **kwargs)

        either.reference, either.compiled = reference, compiled
        return either

    return pair


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
    """The index of the (nth + 1)-th 1 in `row` (0/1 values), the last index if there are fewer.
    Counts eight cells at a time (a sum the compiler vectorises) until the chunk that holds it:
    three to four times faster than one cell at a time on a gomoku board."""
    n = row.shape[0]
    seen = 0
    a = 0
    while a + 8 <= n:
        chunk = 0
        for j in range(8):
            chunk += row[a + j]
        if seen + chunk > nth:
            break
        seen += chunk
        a += 8
    for i in range(a, n):
        seen += row[i]
        if seen > nth:
            return i
    return n - 1


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
    """The compiled form of games.keyed_random.random_true (same arguments and results, CPU tensors;
    float32 draws: it rounds as float32 does)."""
    if uniform_draw.dtype != torch.float32:
        return NotImplemented
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
def _play_stones(board, action, to_play, move_number, done, winner, last_action, rays, k, exact, check, no_action,
                 out_board, out_to_play, out_move, out_done, out_winner, out_last):  # pragma: no cover - compiled
    """One k-in-a-row move in every game into the out_ arrays (out_board a copy of board).
    With `check`: finished games must have `no_action` and stay as they are, the others an
    empty cell; returns the first game that breaks this (the outputs are then unfinished),
    else -1. Without: every game plays its action (off-board raises)."""
    batch, cells = board.shape
    for b in range(batch):
        c = action[b]
        if check:
            if done[b]:
                if c != no_action:
                    return b
                out_to_play[b] = to_play[b]
                out_move[b] = move_number[b]
                out_done[b] = True
                out_winner[b] = winner[b]
                out_last[b] = last_action[b]
                continue
            if c < 0 or c >= cells or board[b, c] != 0:
                return b
        elif c < 0 or c >= cells:  # numba does not check bounds; torch's scatter would raise
            raise IndexError("play_stones: action out of range")
        row = out_board[b]
        stone = np.int8(1 - 2 * to_play[b])
        row[c] = stone
        hit = _line_through(row, c, stone, rays, k, exact)
        move = move_number[b] + 1
        out_to_play[b] = 1 - to_play[b]
        out_move[b] = move
        out_done[b] = hit or move >= cells
        out_winner[b] = stone if hit else 0
        out_last[b] = c
    return -1


def play_stones(state, action: torch.Tensor, rays: np.ndarray, k: int, exact: bool, check: bool, no_action: int):
    """A k-in-a-row move in every game of a BoardState (CPU tensors): the stone of the player to
    move goes on `action`. Returns the next state, or with `check` None when an action is
    illegal (finished games must pass `no_action` and stay as they are).
    `rays`: lines.line_rays as a numpy array (int16 keeps the table in the first-level cache)."""
    batch = state.to_play.shape[0]
    board = state.board.numpy()
    # numpy's copy: torch's would wake its thread pool, whose spinning workers slow the rest of the step
    out_board = np.array(board, order="C")
    out = [np.empty(batch, dtype) for dtype in (np.int64, np.int64, np.bool_, np.int8, np.int64)]
    bad = _play_stones(
        board.reshape(batch, -1), action.numpy(), state.to_play.numpy(), state.move_number.numpy(),
        state.done.numpy(), state.winner.numpy(), state.last_action.numpy(), rays, k, exact, check, no_action,
        out_board.reshape(batch, -1), *out,
    )
    if bad >= 0:
        return None
    to_play, move_number, done, winner, last_action = (torch.from_numpy(a) for a in out)
    return type(state)(to_play=to_play, move_number=move_number, done=done, winner=winner,
                       board=torch.from_numpy(out_board), last_action=last_action)


@njit(cache=True, nogil=True)
def _drop_discs(heights, action, to_play, move_number, rows, rays, k, out_board, out_heights, out_to_play, out_move,
                out_done, out_winner):  # pragma: no cover - compiled
    """One Connect Four move in every game into the out_ arrays (copies of board and heights)."""
    batch, cells = out_board.shape
    width = heights.shape[1]
    for b in range(batch):
        column = action[b]
        if column < 0 or column >= width:  # numba does not check bounds; torch's gather would raise
            raise IndexError("drop_discs: column out of range")
        row = max(rows - 1 - heights[b, column], 0)  # (a full column of a finished game: clamped, as in torch)
        c = row * width + column
        stone = np.int8(1 - 2 * to_play[b])
        out_board[b, c] = stone
        out_heights[b, column] += 1
        hit = _line_through(out_board[b], c, stone, rays, k, False)
        move = move_number[b] + 1
        out_to_play[b] = 1 - to_play[b]
        out_move[b] = move
        out_done[b] = hit or move >= cells
        out_winner[b] = stone if hit else 0


def drop_discs(state, action: torch.Tensor, rows: int, rays: np.ndarray, k: int):
    """The compiled form of ConnectFour._apply (CPU tensors): the disc of the player to move
    falls down column `action` of every game; returns (to_play, move_number, done, winner,
    board, heights) of the next state."""
    batch = state.to_play.shape[0]
    out_board = np.array(state.board.numpy(), order="C")  # numpy's copies: see play_stones
    out_heights = np.array(state.heights.numpy(), order="C")
    out = [np.empty(batch, dtype) for dtype in (np.int64, np.int64, np.bool_, np.int8)]
    _drop_discs(state.heights.numpy(), action.numpy(), state.to_play.numpy(), state.move_number.numpy(), rows, rays, k,
                out_board.reshape(batch, -1), out_heights, *out)
    return (*(torch.from_numpy(a) for a in out), torch.from_numpy(out_board), torch.from_numpy(out_heights))


@njit(cache=True, nogil=True)
def _stone_planes(board, to_play, last_action, out):  # pragma: no cover - compiled
    batch, cells = board.shape
    for b in range(batch):  # plane by plane: contiguous, vectorised loops
        me = np.int8(1 - 2 * to_play[b])
        for c in range(cells):
            out[b, 0, c] = np.float32(board[b, c] == me)
        for c in range(cells):
            out[b, 1, c] = np.float32(board[b, c] == -me)
        out[b, 2, :] = np.float32(0.0)
        out[b, 3, :] = np.float32(1.0)
        if last_action[b] >= 0:
            out[b, 2, last_action[b]] = np.float32(1.0)


def stone_planes(board_flat: torch.Tensor, to_play: torch.Tensor, last_action: torch.Tensor) -> torch.Tensor:
    """The compiled form of Gomoku.encode (CPU tensors): float [B, 4, cells], own stones,
    the opponent's, the last move, ones."""
    batch, cells = board_flat.shape
    out = np.empty((batch, 4, cells), np.float32)
    _stone_planes(board_flat.numpy(), to_play.numpy(), last_action.numpy(), out)
    return torch.from_numpy(out)


class FieldRecord:
    """A class attribute (State.Arrays): the namedtuple class of its owner's dataclass fields,
    made the first time it is read, one per class. The compiled loops take a state as one
    record of numpy arrays of these names (`state_arrays`), so they follow the State's fields;
    numba's disk cache finds the class again by its name, `Owner.Arrays`."""

    def __get__(self, instance, owner):
        if "__dataclass_fields__" not in owner.__dict__:  # (a class whose dataclass is still being made)
            return self
        made = owner.__dict__.get("_record_type")
        if made is None:
            made = collections.namedtuple("Arrays", [f.name for f in dataclasses.fields(owner)])
            made.__module__, made.__qualname__ = owner.__module__, f"{owner.__qualname__}.Arrays"
            owner._record_type = made
        return made


_STATE_ARRAYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # state -> (its tensors, their memory, record)


def state_arrays(state):
    """A State as the compiled loops take it: `type(state).Arrays` of numpy views of its fields
    (no copy), each [B] or [B, width] (a board [B, H, W] as [B, H * W]). Kept for the state
    while its fields are the same tensors on the same memory (a search's tree expands its
    positions in place, step after step: making the views was most of a step's cost in
    small searches)."""
    record = type(state).Arrays
    tensors = tuple(getattr(state, name) for name in record._fields)
    ids, memory = tuple(map(id, tensors)), tuple((t.data_ptr(), t.shape) for t in tensors)
    made = _STATE_ARRAYS.get(state)
    if made is not None and made[0] == ids and made[1] == memory:
        return made[2]
    arrays = record(*(array.numpy().reshape(array.shape[0], -1) if array.dim() > 2 else array.numpy()
                      for array in tensors))
    _STATE_ARRAYS[state] = (ids, memory, arrays)
    return arrays


@njit(cache=True, nogil=True, inline="always")
def _after_move(i, p, c, row, stone, hit, last, state, encode, out):  # pragma: no cover - compiled
    """The new row c's counters after `stone`'s move (`last` the action written) from row p,
    its expansion outputs i and, with `encode`, its first two planes (own stones, the
    opponent's, from the view of the player to move, -stone); returns whether the game is over."""
    cells, planes = row.shape[0], out.planes
    mover = state.to_play[p]
    move = state.move_number[p] + 1
    finished = hit or move >= cells
    state.to_play[c] = 1 - mover
    state.move_number[c] = move
    state.done[c] = finished
    state.winner[c] = stone if hit else np.int8(0)
    state.last_action[c] = last
    out.to_play[i] = 1 - mover
    out.parent_to_play[i] = mover
    out.done[i] = finished
    out.result[i] = np.float32(stone) if hit else np.float32(0.0)
    if encode:
        for x in range(cells):  # plane by plane: contiguous, vectorised loops
            planes[i, 0, x] = np.float32(row[x] == -stone)
        for x in range(cells):
            planes[i, 1, x] = np.float32(row[x] == stone)
    return finished


@njit(cache=True, nogil=True)
def _expand_stones(state, parent, child, action, rays, k, exact, encode, out):  # pragma: no cover - compiled
    """A search's expansion of k-in-a-row positions in one pass (games.base.Game.expand_rows):
    row child[i] of the state's arrays becomes row parent[i] with the stone of the player to
    move on cell action[i] (_play_stones's move); out (an Expansion of numpy arrays): the new
    rows' legal mask (_empty_cells), result, planes (_stone_planes; only with `encode`), player
    to move, the parent's, done."""
    board, legal = state.board, out.legal  # (fields read once: see search/kernels.py)
    rows, cells = board.shape
    for i in range(parent.shape[0]):
        p, c, a = parent[i], child[i], action[i]
        if a < 0 or a >= cells or p < 0 or p >= rows or c < 0 or c >= rows:  # numba does not check bounds
            raise IndexError("expand_stones: a row or an action out of range")
        row = board[c]
        row[:] = board[p]
        stone = np.int8(1 - 2 * state.to_play[p])
        row[a] = stone
        hit = _line_through(row, a, stone, rays, k, exact)
        finished = _after_move(i, p, c, row, stone, hit, a, state, encode, out)
        if encode:
            out.planes[i, 2, :] = np.float32(0.0)
            out.planes[i, 3, :] = np.float32(1.0)
            out.planes[i, 2, a] = np.float32(1.0)
        if finished:
            out.legal[i, :] = False
        else:
            for x in range(cells):
                legal[i, x] = row[x] == 0


class Expansion(NamedTuple):
    """The new positions of `Game.expand_rows`, what a search needs of them (n rows):
    legal bool [n, A], result float [n], planes float [n, C, H, W] (`encode`; None if not asked), to_play long [n],
    parent_to_play long [n] (the player who moved into them), done bool [n]. arrays: an
    Expansion of the same six as numpy arrays sharing the tensors' memory (the planes
    [n, C, H * W], a placeholder without `encode`; arrays None), where a compiled loop made
    them (the search's compiled bookkeeping takes them as they are), else None."""

    legal: torch.Tensor
    result: torch.Tensor
    planes: torch.Tensor
    to_play: torch.Tensor
    parent_to_play: torch.Tensor
    done: torch.Tensor
    arrays: "Expansion | None" = None


def _expansion_outputs(count: int, cells: int, planes: int, actions: int, encode: bool):
    """The Expansion of numpy arrays a compiled expansion fills: legal, result, planes (a dummy
    without `encode`), to_play, parent_to_play, done."""
    return Expansion(np.empty((count, actions), np.bool_), np.empty(count, np.float32),
                     np.empty((count, planes, cells) if encode else (1, planes, 1), np.float32),
                     np.empty(count, np.int64), np.empty(count, np.int64), np.empty(count, np.bool_))


def _expansion_tensors(out, board_shape, encode: bool):
    """The Expansion of tensors sharing `out`'s memory (planes [n, C, H, W], None without
    `encode`), with `out` itself as its arrays."""
    legal, result, planes, to_play, parent_to_play, done = (torch.from_numpy(array) for array in out[:6])
    planes = planes.view(-1, planes.shape[1], *board_shape) if encode else None
    return type(out)(legal, result, planes, to_play, parent_to_play, done, out)


def expand_stones(state, parent: torch.Tensor, child: torch.Tensor, action: torch.Tensor, rays: np.ndarray, k: int,
                  exact: bool, encode: bool = True):
    """The compiled form of a k-in-a-row game's expand_rows (games.base.Game.expand_rows; CPU
    tensors, the board contiguous): writes rows `child` of the BoardState `state` in place and
    returns the new rows' Expansion (planes [n, 4, H, W] or None without `encode`; its arrays
    the same fields as numpy arrays)."""
    count, cells = parent.shape[0], state.board.shape[1] * state.board.shape[2]
    out = _expansion_outputs(count, cells, 4, cells, encode)
    _expand_stones(state_arrays(state), parent.numpy(), child.numpy(), action.numpy(), rays, k, exact, encode, out)
    return _expansion_tensors(out, state.board.shape[1:], encode)


@njit(cache=True, nogil=True)
def _expand_discs(state, parent, child, action, rows_, rays, k, encode, out):  # pragma: no cover - compiled
    """A search's expansion of Connect Four positions in one pass (games.base.Game.expand_rows):
    row child[i] becomes row parent[i] with the disc of the player to move dropped into
    column action[i] (_drop_discs's move); out (an Expansion of numpy arrays): the new rows'
    legal mask (columns with room), result, planes (own discs, the opponent's, ones; only with
    `encode`), player to move, the parent's, done."""
    board, heights, legal = state.board, state.heights, out.legal  # (fields read once)
    count, cells = board.shape
    width = heights.shape[1]
    for i in range(parent.shape[0]):
        p, c, column = parent[i], child[i], action[i]
        if column < 0 or column >= width or p < 0 or p >= count or c < 0 or c >= count:  # numba does not check bounds
            raise IndexError("expand_discs: a row or a column out of range")
        row = board[c]
        row[:] = board[p]
        height = heights[c]
        height[:] = heights[p]
        cell = max(rows_ - 1 - height[column], 0) * width + column
        stone = np.int8(1 - 2 * state.to_play[p])
        row[cell] = stone
        height[column] += 1
        hit = _line_through(row, cell, stone, rays, k, False)
        finished = _after_move(i, p, c, row, stone, hit, column, state, encode, out)
        if encode:
            out.planes[i, 2, :] = np.float32(1.0)
        for x in range(width):
            legal[i, x] = height[x] < rows_ and not finished


def expand_discs(state, parent: torch.Tensor, child: torch.Tensor, action: torch.Tensor, rows: int, rays: np.ndarray,
                 k: int, encode: bool = True):
    """The compiled form of ConnectFour.expand_rows (CPU tensors, board and heights contiguous):
    writes rows `child` of `state` in place and returns the new rows' Expansion (planes
    [n, 3, H, W] or None without `encode`; its arrays the same fields as numpy arrays)."""
    count, width = parent.shape[0], state.heights.shape[1]
    cells = state.board.shape[1] * state.board.shape[2]
    out = _expansion_outputs(count, cells, 3, width, encode)
    _expand_discs(state_arrays(state), parent.numpy(), child.numpy(), action.numpy(), rows, rays, k, encode, out)
    return _expansion_tensors(out, state.board.shape[1:], encode)


@njit(cache=True, nogil=True)
def _empty_cells(board, done, out):  # pragma: no cover - compiled
    for b in range(board.shape[0]):
        if done[b]:
            out[b, :] = False
        else:
            for a in range(board.shape[1]):
                out[b, a] = board[b, a] == 0


def empty_cells(board_flat: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
    """bool [B, A]: the empty cells of unfinished games (a stone game's legal mask)."""
    out = np.empty(board_flat.shape, np.bool_)
    _empty_cells(board_flat.contiguous().numpy(), done.contiguous().numpy(), out)
    return torch.from_numpy(out)


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
def hash_one(v):  # pragma: no cover - compiled; games.keyed_random._hash32 of one int64
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
def _fold(keys, data, out):  # pragma: no cover - compiled; games.keyed_random.fold
    if data.shape[0] == 1:  # one tag for every key: hashed once
        tag = hash_one(data[0] + 0x632BE5AB)
        for i in range(keys.shape[0]):
            out[i] = hash_one(keys[i] * 0x9E3779B1 + tag)
    else:
        for i in range(keys.shape[0]):
            out[i] = hash_one(keys[i] * 0x9E3779B1 + hash_one(data[i] + 0x632BE5AB))


def fold(keys: torch.Tensor, data) -> torch.Tensor:
    """The compiled form of games.keyed_random.fold for keys long [B] and data one Python int
    (which needs no tensor), or a tag of B or 1 entries (NotImplemented for other shapes)."""
    if keys.dim() != 1:
        return NotImplemented
    if isinstance(data, int):
        tags = np.array([data], np.int64)
    else:
        data = torch.as_tensor(data, dtype=torch.long)
        if data.numel() not in (1, keys.shape[0]) or data.dim() > 1:
            return NotImplemented
        tags = data.contiguous().view(-1).numpy()
    out = np.empty(keys.shape[0], np.int64)
    _fold(keys.contiguous().numpy(), tags, out)
    return torch.from_numpy(out)


def hash32(x: torch.Tensor) -> torch.Tensor:
    """The compiled form of games.keyed_random._hash32 (long tensor of any shape, on the CPU)."""
    out = torch.empty(x.shape, dtype=torch.long)
    _hash32(x.contiguous().view(-1).numpy(), out.view(-1).numpy())
    return out



@njit(cache=True, nogil=True, inline="always")
def _guess(row, draw):  # pragma: no cover - compiled
    width = row.shape[0]
    return min(np.int64(np.float32(draw) * np.float32(width)), width - 1)


@njit(cache=True, nogil=True, inline="always")
def _by_count(row, draw, no_action):  # pragma: no cover - compiled
    n = 0
    for a in range(row.shape[0]):
        n += row[a]
    return nth_true(row, nth_of(draw, n)) if n > 0 else no_action


@njit(cache=True, nogil=True)
def _sample_legal(mask, draws, no_action, out):  # pragma: no cover - compiled
    for b in range(mask.shape[0]):
        row = mask[b]
        first, second = _guess(row, draws[b, 0]), _guess(row, draws[b, 1])
        out[b] = first if row[first] else second if row[second] else _by_count(row, draws[b, 2], no_action)


@njit(cache=True, nogil=True, inline="always")
def _key_draw(key, column):  # pragma: no cover - compiled; column `column` of games.keyed_random.uniform(keys, (B, n))
    return np.float32(hash_one(key + column * 0x632BE5AB) >> 8) * np.float32(1.0 / (1 << 24))


@njit(cache=True, nogil=True)
def _sample_legal_keys(mask, keys, no_action, out):  # pragma: no cover - compiled
    for b in range(mask.shape[0]):  # the draws of games.keyed_random.uniform(keys, (B, 3)), made when needed
        row = mask[b]
        a = _guess(row, _key_draw(keys[b], 0))
        if not row[a]:
            a = _guess(row, _key_draw(keys[b], 1))
            if not row[a]:
                a = _by_count(row, _key_draw(keys[b], 2), no_action)
        out[b] = a


def sample_legal(mask: torch.Tensor, draws: torch.Tensor | None, no_action: int, keys: torch.Tensor | None = None):
    """The compiled form of games.base.sample_uniform_legal, from its draws (float [B, 3]) or,
    with draws None, from per-game keys (the same draws as games.keyed_random.uniform makes)."""
    out = np.empty(mask.shape[0], np.int64)
    rows = mask.contiguous().numpy().view(np.uint8)
    if draws is None:
        _sample_legal_keys(rows, keys.contiguous().numpy(), no_action, out)
    else:
        _sample_legal(rows, draws.contiguous().numpy(), no_action, out)
    return torch.from_numpy(out)
