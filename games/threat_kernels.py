"""The compiled loops of the threat search (games/threats.py): victory by continuous fours.

One board is a flat int8 array (+1 / -1 stones, 0 empty) with, beside it, how many stones of
each colour every k-cell window holds (`counts` int16 [N, 2], column 0 the first player's,
1 the second's), kept up to date stone by stone. From the counts:

* a *completing square* of a colour is the empty cell of a window holding k - 1 of its
  stones and none of the other colour's, where the stone really makes a line of k
  (exactly k under the standard rule: `kernels._line_through` decides);
* a *four* is a move after which its colour has a completing square; the move and that
  square lie in one window that held k - 2 of its stones, two empty cells and nothing
  else, so the candidates are the empty cells of such windows.

Without numba these run as plain Python over the same arrays (slow, same answers); see
games/kernels.py for the switch. After editing, delete games/__pycache__/threat_kernels.*.nb?
if a changed function compiled into another one is not picked up.
"""

from __future__ import annotations

import numpy as np

from .kernels import _line_through, njit

# statuses of a search for a win
FOUND, NONE, CUT_OFF = 1, 0, -1
_UNBOUNDED = 127  # a failure stored without a depth limit: it fails at every depth


@njit(cache=True, nogil=True, inline="always")
def _column(stone):  # pragma: no cover - compiled
    return 0 if stone > 0 else 1


@njit(cache=True, nogil=True)
def _count_windows(board, windows, counts):  # pragma: no cover - compiled
    """counts[w, 0 / 1]: the first / second player's stones in window w of `board`."""
    counts[:, :] = 0
    for w in range(windows.shape[0]):
        for j in range(windows.shape[1]):
            v = board[windows[w, j]]
            if v > 0:
                counts[w, 0] += 1
            elif v < 0:
                counts[w, 1] += 1


@njit(cache=True, nogil=True)
def _board_hash(board, zobrist):  # pragma: no cover - compiled
    h = np.int64(0)
    for c in range(board.shape[0]):
        if board[c] != 0:
            h ^= zobrist[c, _column(board[c])]
    return h


@njit(cache=True, nogil=True, inline="always")
def _place(board, counts, cell_windows, zobrist, h, cell, stone):  # pragma: no cover - compiled
    """Put `stone` on the empty `cell`; returns the new hash."""
    board[cell] = stone
    s = _column(stone)
    for j in range(cell_windows.shape[1]):
        w = cell_windows[cell, j]
        if w < 0:
            break
        counts[w, s] += 1
    return h ^ zobrist[cell, s]


@njit(cache=True, nogil=True, inline="always")
def _lift(board, counts, cell_windows, zobrist, h, cell):  # pragma: no cover - compiled
    """Take the stone off `cell`; returns the new hash."""
    s = _column(board[cell])
    board[cell] = 0
    for j in range(cell_windows.shape[1]):
        w = cell_windows[cell, j]
        if w < 0:
            break
        counts[w, s] -= 1
    return h ^ zobrist[cell, s]


@njit(cache=True, nogil=True, inline="always")
def _window_gap(board, windows, w):  # pragma: no cover - compiled
    """The first empty cell of window w (-1 if none)."""
    for j in range(windows.shape[1]):
        if board[windows[w, j]] == 0:
            return windows[w, j]
    return -1


@njit(cache=True, nogil=True, inline="always")
def _add_distinct(out, n, cell):  # pragma: no cover - compiled
    for i in range(n):
        if out[i] == cell:
            return n
    out[n] = cell
    return n + 1


@njit(cache=True, nogil=True)
def completing_squares(board, counts, windows, rays, k, exact, stone, out, limit):  # pragma: no cover - compiled
    """The distinct empty cells where `stone` would complete a line, at most `limit` of them,
    into out[:n]; returns n."""
    s = _column(stone)
    n = 0
    for w in range(windows.shape[0]):
        if counts[w, s] == k - 1 and counts[w, 1 - s] == 0:
            e = _window_gap(board, windows, w)
            if e >= 0 and _line_through(board, e, stone, rays, k, exact):
                n = _add_distinct(out, n, e)
                if n >= limit:
                    return n
    return n


@njit(cache=True, nogil=True)
def _squares_through(board, counts, windows, cell_windows, rays, k, exact, stone, cell, out):  # pragma: no cover
    """Up to two distinct completing squares of `stone` on the windows through `cell` (where it
    has just played) into out[:n]; returns n."""
    s = _column(stone)
    n = 0
    for j in range(cell_windows.shape[1]):
        w = cell_windows[cell, j]
        if w < 0:
            break
        if counts[w, s] == k - 1 and counts[w, 1 - s] == 0:
            e = _window_gap(board, windows, w)
            if e >= 0 and _line_through(board, e, stone, rays, k, exact):
                n = _add_distinct(out, n, e)
                if n >= 2:
                    return n
    return n


@njit(cache=True, nogil=True)
def _four_candidates(board, counts, windows, k, stone, out, seen, stamp):  # pragma: no cover - compiled
    """The distinct empty cells of windows holding k - 2 stones of `stone`, two empty cells and
    none of the other colour (every four is among them) into out[:n]; returns n. `seen` int32
    [cells] marks the cells already taken with `stamp`."""
    s = _column(stone)
    n = 0
    for w in range(windows.shape[0]):
        if counts[w, s] == k - 2 and counts[w, 1 - s] == 0:
            for j in range(windows.shape[1]):
                e = windows[w, j]
                if board[e] == 0 and seen[e] != stamp:
                    seen[e] = stamp
                    out[n] = e
                    n += 1
    return n


@njit(cache=True, nogil=True)
def _prepare(board, counts, windows, rays, k, exact, stone, d, candidates, count, seen, stamp,
             pair):  # pragma: no cover - compiled
    """A node of the attacker `stone` (to move): returns 1 with pair[0] its completing square if it
    wins at once; else fills candidates[d, :count[d]] with the moves to try (none if the defender
    has two completing squares, only the defender's completing square if it has one) and returns 0.
    """
    if completing_squares(board, counts, windows, rays, k, exact, stone, pair, np.int64(1)) > 0:
        return 1
    threats = completing_squares(board, counts, windows, rays, k, exact, -stone, pair, np.int64(2))
    if threats >= 2:
        count[d] = 0
    elif threats == 1:
        candidates[d, 0] = pair[0]
        count[d] = 1
    else:
        count[d] = _four_candidates(board, counts, windows, k, stone, candidates[d], seen, stamp)
    return 0


@njit(cache=True, nogil=True)
def _unwind(board, counts, cell_windows, zobrist, moves, replies, d):  # pragma: no cover - compiled
    for i in range(d - 1, -1, -1):
        _lift(board, counts, cell_windows, zobrist, np.int64(0), replies[i])
        _lift(board, counts, cell_windows, zobrist, np.int64(0), moves[i])


@njit(cache=True, nogil=True)
def _search_to(board, counts, windows, cell_windows, rays, zobrist, k, exact, stone, limit, max_nodes, work, table,
               sequence, info):  # pragma: no cover - compiled
    """A depth-first search for a VCF of `stone` (to move, with no completing square of its own)
    of at most `limit` attacker moves. Returns FOUND (sequence[:info[1]] holds it), NONE (info[2]
    says whether a depth limit cut the search) or CUT_OFF (info[0], the nodes, passed max_nodes).
    The board and counts are as given on return."""
    candidates, count, nexti, moves, replies, hashes, cut, seen, pair, squares, stamp = work
    table_keys, table_depth, table_stamp, stamp_now = table
    mask = table_keys.shape[0] - 1
    d = 0
    h = _board_hash(board, zobrist)
    hashes[0] = h
    stamp[0] += 1
    if _prepare(board, counts, windows, rays, k, exact, stone, np.int64(0), candidates, count, seen, stamp[0], pair):
        sequence[0] = pair[0]
        info[1] = 1
        return FOUND
    if limit < 2:  # a win at once only
        info[2] = 1 if count[0] > 0 else 0
        return NONE
    nexti[0] = 0
    cut[0] = 0
    while True:
        if nexti[d] >= count[d]:  # every move of this node fails: remember it
            slot = hashes[d] & mask
            table_keys[slot] = hashes[d]
            table_depth[slot] = limit - d if cut[d] else _UNBOUNDED
            table_stamp[slot] = stamp_now[0]
            if d == 0:
                info[2] = cut[0]
                return NONE
            d -= 1
            _lift(board, counts, cell_windows, zobrist, np.int64(0), replies[d])
            _lift(board, counts, cell_windows, zobrist, np.int64(0), moves[d])
            cut[d] |= cut[d + 1]
            continue
        m = np.int64(candidates[d, nexti[d]])
        nexti[d] += 1
        info[0] += 1
        if info[0] > max_nodes:
            _unwind(board, counts, cell_windows, zobrist, moves, replies, np.int64(d))
            return CUT_OFF
        h = _place(board, counts, cell_windows, zobrist, hashes[d], m, stone)
        threats = _squares_through(board, counts, windows, cell_windows, rays, k, exact, stone, m, squares)
        if threats == 0:  # not a four
            _lift(board, counts, cell_windows, zobrist, np.int64(0), m)
            continue
        if threats >= 2:  # two completing squares (the defender has none of its own): won
            for i in range(d):
                sequence[2 * i] = moves[i]
                sequence[2 * i + 1] = replies[i]
            sequence[2 * d] = m
            sequence[2 * d + 1] = squares[0]  # one reply (every other loses as well), then the other square
            sequence[2 * d + 2] = squares[1]
            info[1] = 2 * d + 3
            _lift(board, counts, cell_windows, zobrist, np.int64(0), m)
            _unwind(board, counts, cell_windows, zobrist, moves, replies, np.int64(d))
            return FOUND
        if limit - (d + 1) < 2:  # the child could only win at once, and a forced reply leaves no win
            _lift(board, counts, cell_windows, zobrist, np.int64(0), m)
            cut[d] = 1
            continue
        t = squares[0]
        h = _place(board, counts, cell_windows, zobrist, h, t, -stone)
        slot = h & mask
        if table_stamp[slot] == stamp_now[0] and table_keys[slot] == h and table_depth[slot] >= limit - (d + 1):
            if table_depth[slot] != _UNBOUNDED:
                cut[d] = 1
            _lift(board, counts, cell_windows, zobrist, np.int64(0), t)
            _lift(board, counts, cell_windows, zobrist, np.int64(0), m)
            continue
        moves[d] = m
        replies[d] = t
        d += 1
        hashes[d] = h
        nexti[d] = 0
        cut[d] = 0
        stamp[0] += 1
        if _prepare(board, counts, windows, rays, k, exact, stone, d, candidates, count, seen, stamp[0], pair):
            # (cannot happen: the forced reply leaves the attacker no completing square; kept exact anyway)
            for i in range(d):
                sequence[2 * i] = moves[i]
                sequence[2 * i + 1] = replies[i]
            sequence[2 * d] = pair[0]
            info[1] = 2 * d + 1
            _unwind(board, counts, cell_windows, zobrist, moves, replies, np.int64(d))
            return FOUND


def new_work(cells: int, max_depth: int) -> tuple:
    """The scratch arrays of one search (reused from game to game)."""
    plies = max_depth + 1
    return (np.zeros((plies, cells), np.int16), np.zeros(plies, np.int64), np.zeros(plies, np.int64),
            np.zeros(plies, np.int64), np.zeros(plies, np.int64), np.zeros(plies, np.int64), np.zeros(plies, np.int64),
            np.zeros(cells, np.int64), np.zeros(2, np.int64), np.zeros(2, np.int64), np.zeros(1, np.int64))


def new_table(bits: int) -> tuple:
    """The transposition table of failed nodes: keys, depths, stamps (a search's own entries carry
    its stamp, so no clearing between searches) and the current stamp."""
    size = 1 << bits
    return (np.zeros(size, np.int64), np.zeros(size, np.int8), np.full(size, -1, np.int64), np.zeros(1, np.int64))


@njit(cache=True, nogil=True)
def vcf(board, counts, windows, cell_windows, rays, zobrist, k, exact, stone, max_depth, max_nodes, work, table,
        sequence, info):  # pragma: no cover - compiled
    """The shortest VCF of `stone` (to move) of at most max_depth attacker moves, by iterative
    deepening: FOUND (sequence[:info[1]]), NONE or CUT_OFF (node bound). info[0] counts the
    nodes (attacker moves tried). The board and counts are as given on return."""
    info[:] = 0
    table[3][0] += 1  # a new stamp: the table's old entries are forgotten
    status = NONE
    for limit in range(1, max_depth + 1):
        status = _search_to(board, counts, windows, cell_windows, rays, zobrist, k, exact, stone, limit, max_nodes,
                            work, table, sequence, info)
        if status != NONE or info[2] == 0:  # found, out of nodes, or no depth limit was met: deeper finds nothing more
            return status
    return status


@njit(cache=True, nogil=True)
def _replay_holds(board, counts, windows, cell_windows, rays, zobrist, k, exact, stone, sequence, length, placed,
                  pair, squares):  # pragma: no cover - compiled
    """Whether the attacker `stone` (to move) still wins by playing the attacker moves of
    `sequence[:length]` (a VCF found in a position with fewer defender stones), each reply the
    forced one. A quick test that a defender's move changes nothing. Board and counts unchanged."""
    n = 0
    holds = False
    i = 0
    while True:
        if completing_squares(board, counts, windows, rays, k, exact, stone, pair, np.int64(1)) > 0:
            holds = True
            break
        if i >= length:
            break
        m = sequence[i]
        if board[m] != 0:
            break
        threats = completing_squares(board, counts, windows, rays, k, exact, -stone, pair, np.int64(2))
        if threats >= 2 or (threats == 1 and pair[0] != m):
            break
        _place(board, counts, cell_windows, zobrist, np.int64(0), m, stone)
        placed[n] = m
        n += 1
        fours = _squares_through(board, counts, windows, cell_windows, rays, k, exact, stone, m, squares)
        if fours >= 2:
            holds = True
            break
        if fours == 0:
            break
        _place(board, counts, cell_windows, zobrist, np.int64(0), squares[0], -stone)
        placed[n] = squares[0]
        n += 1
        i += 2
    for j in range(n - 1, -1, -1):
        _lift(board, counts, cell_windows, zobrist, np.int64(0), placed[j])
    return holds


@njit(cache=True, nogil=True)
def find_wins(boards, stones, done, windows, cell_windows, rays, zobrist, k, exact, max_depth, max_nodes, work, table,
              sequences, lengths, statuses, nodes):  # pragma: no cover - compiled
    """For each board (int8 [B, cells]), the shortest VCF of the colour to move (stones long [B]):
    sequences [B, 2 * max_depth - 1] (-1 after lengths[b]), statuses FOUND / NONE / CUT_OFF, nodes."""
    cells = boards.shape[1]
    board = np.empty(cells, np.int8)
    counts = np.empty((windows.shape[0], 2), np.int16)
    info = np.zeros(4, np.int64)
    for b in range(boards.shape[0]):
        sequences[b, :] = -1
        lengths[b] = 0
        nodes[b] = 0
        statuses[b] = NONE
        if done[b]:
            continue
        board[:] = boards[b]
        _count_windows(board, windows, counts)
        statuses[b] = vcf(board, counts, windows, cell_windows, rays, zobrist, k, exact, stones[b], max_depth, max_nodes,
                          work, table, sequences[b], info)
        nodes[b] = info[0]
        if statuses[b] == FOUND:
            lengths[b] = info[1]
        else:
            sequences[b, :] = -1


# statuses of a defence
NO_THREAT, DEFENDED, LOST, WINS, UNKNOWN = 0, 1, 2, 3, -1


@njit(cache=True, nogil=True)
def defend(boards, stones, done, windows, cell_windows, rays, zobrist, k, exact, max_depth, max_nodes, work, table,
           max_total_nodes, moves, delaying, statuses, threats, threat_lengths, nodes):  # pragma: no cover - compiled
    """For each board, the moves of the colour to move (stones long [B]) after which the opponent
    has neither a completing square nor a VCF (moves bool [B, cells]); among them the fours after
    whose forced block the opponent threatens again (delaying); the opponent's threat found
    with the side to move passing (threats [B, 2 * max_depth - 1], threat_lengths), the statuses
    NO_THREAT / DEFENDED / LOST / WINS / UNKNOWN and the nodes searched: each search within max_nodes,
    all of a board's within about max_total_nodes (moves left unsettled are kept). See
    threats.forced_defence."""
    cells = boards.shape[1]
    board = np.empty(cells, np.int8)
    counts = np.empty((windows.shape[0], 2), np.int16)
    info = np.zeros(4, np.int64)
    scratch = np.empty(threats.shape[1], np.int64)
    placed = np.empty(threats.shape[1] + 1, np.int64)
    wins = np.empty(cells, np.int64)
    pair = np.empty(2, np.int64)
    squares = np.empty(2, np.int64)
    for b in range(boards.shape[0]):
        moves[b, :] = False
        delaying[b, :] = False
        threats[b, :] = -1
        threat_lengths[b] = 0
        nodes[b] = 0
        statuses[b] = NO_THREAT
        if done[b]:
            continue
        board[:] = boards[b]
        _count_windows(board, windows, counts)
        stone = stones[b]
        own = completing_squares(board, counts, windows, rays, k, exact, stone, wins, cells)
        if own > 0:  # the side to move wins at once: nothing to defend
            statuses[b] = WINS
            for i in range(own):
                moves[b, wins[i]] = True
            continue
        found = vcf(board, counts, windows, cell_windows, rays, zobrist, k, exact, -stone, max_depth, max_nodes, work,
                    table, threats[b], info)
        nodes[b] += info[0]
        if found != FOUND:  # no threat (or none found within the node bound): every move is as good
            statuses[b] = NO_THREAT if found == NONE else UNKNOWN
            threats[b, :] = -1
            for x in range(cells):
                moves[b, x] = board[x] == 0
            continue
        length = info[1]
        threat_lengths[b] = length
        stopped = False
        for x in range(cells):
            if board[x] != 0:
                continue
            _place(board, counts, cell_windows, zobrist, np.int64(0), x, stone)
            if completing_squares(board, counts, windows, rays, k, exact, -stone, pair, np.int64(1)) > 0:
                stops = False
            elif _replay_holds(board, counts, windows, cell_windows, rays, zobrist, k, exact, -stone, threats[b], length,
                               placed, pair, squares):
                stops = False
            elif nodes[b] >= max_total_nodes:  # out of budget: the move is kept, unsettled
                stops = True
            else:
                again = vcf(board, counts, windows, cell_windows, rays, zobrist, k, exact, -stone, max_depth,
                            min(max_nodes, max_total_nodes - nodes[b]), work, table, scratch, info)
                nodes[b] += info[0]
                stops = again != FOUND  # a search cut off by the node bound keeps the move
            if stops and nodes[b] < max_total_nodes and _squares_through(board, counts, windows, cell_windows, rays, k,
                                                                         exact, stone, x, squares) == 1:
                # a four: after the forced block, would the opponent threaten again?
                _place(board, counts, cell_windows, zobrist, np.int64(0), squares[0], -stone)
                again = vcf(board, counts, windows, cell_windows, rays, zobrist, k, exact, -stone, max_depth,
                            min(max_nodes, max_total_nodes - nodes[b]), work, table, scratch, info)
                nodes[b] += info[0]
                delaying[b, x] = again == FOUND
                _lift(board, counts, cell_windows, zobrist, np.int64(0), squares[0])
            _lift(board, counts, cell_windows, zobrist, np.int64(0), x)
            moves[b, x] = stops
            stopped |= stops
        statuses[b] = DEFENDED if stopped else LOST
