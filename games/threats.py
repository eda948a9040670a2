"""Threat search for k-in-a-row games: victory by continuous fours (VCF), and the defence against it.

    import games
    from games import threats
    game = games.make("gomoku", size=15)
    win = threats.find_win(game, state, max_depth=20, max_nodes=20_000)
    win.action        # long [B]: the first move of a forced win, NO_ACTION where none was found
    guard = threats.forced_defence(game, state)
    guard.moves       # bool [B, A]: the moves that do not lose at once to the opponent's fours

Words. A *completing square* of a side is an empty cell where its stone makes a line of k
(exactly k under gomoku's standard rule, where an overline does not win: the game's own
line test decides). A *four* is a move after which its side has a completing square. A
*VCF* of the side to move (the attacker) is a sequence of its moves, each a four, each
answered by the defender's one forced reply, that ends with a move completing a line or a
four with two completing squares (an open four, a double four: the defender blocks one,
the attacker plays the other).

The search, exactly. At the attacker's turn, in this order:

1. If the attacker has a completing square, it wins at once (one attacker move).
2. If the defender has two completing squares, the attacker has no VCF: a four does not
   stop the defender from completing its own line instead of blocking. If the defender has
   one, the attacker's only move is that square, and it must also be a four (blocking by a
   four); a four played elsewhere would be answered by the defender's completed line.
3. Otherwise every four is tried. After a four the defender has no completing square (an
   attacker's stone never gives the defender one, and step 2 took the only one there was);
   so with two completing squares the attacker has won (whatever the defender plays,
   another remains: a stone of one colour never changes the other colour's lines), and with
   one, every other reply loses at once, so the defender's reply is forced. The forced reply
   may make the defender's own fours: step 2 at the next turn handles them (the counter-four
   that refutes a line, or that the next four must block).

`max_depth` bounds the attacker's moves in the sequence, its last included (1 = a win at
once, 2 = a four with two completing squares, ...); the search deepens one move at a time,
so the sequence returned is a shortest one. `max_nodes` bounds the attacker moves tried (the
*nodes*). A table of positions known to fail (64-bit Zobrist keys) spares repeated work;
the only error a key collision could make is to miss a win, never to claim a false one.
Within its bounds the search is exact: it finds a win exactly when a minimax over the same
moves (the attacker's fours, every reply of the defender) finds one (tests/test_threats.py
checks it against one).

The compiled loops are in games/threat_kernels.py (about a million nodes a second on one core
of a server CPU; a search of a 15 x 15 position from random play takes tens of microseconds). Without
numba the same loops run as plain Python: the same answers about a thousand times slower, so
a caller should lower `max_nodes` where `games.kernels.AVAILABLE` is False.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

import numpy as np
import torch

from . import threat_kernels as loops
from .base import NO_ACTION, BoardState, Game, GameError, keeps_rules, player_sign
from .gomoku import Gomoku
from .line_geometry import window_table
from .threat_kernels import CUT_OFF, DEFENDED, FOUND, LOST, NO_THREAT, NONE, UNKNOWN, WINS

__all__ = [
    "CUT_OFF", "DEFENDED", "FOUND", "LOST", "NONE", "NO_THREAT", "UNKNOWN", "WINS",
    "Defence", "Win", "find_win", "forced_defence", "supports",
]

MAX_DEPTH_LIMIT = 100  # the table stores depths as int8


@dataclass(frozen=True)
class Win:
    """What `find_win` found for each of B positions (L = 2 * max_depth - 1).

    action:   long [B]     the first move of a forced win, NO_ACTION where none was found
    sequence: long [B, L]  the win: attacker, defender, attacker, ... moves, NO_ACTION after
                           `length`, the last completing a line; after a four with two
                           completing squares the reply written blocks one of them (every
                           other reply loses as well) and the attacker completes the other
    length:   long [B]     moves in `sequence` (0 where none was found; 2 * attacker moves - 1)
    status:   int8 [B]     FOUND, NONE (no VCF within max_depth, or the game is over) or
                           CUT_OFF (the node bound ended the search first: unknown)
    nodes:    long [B]     attacker moves tried
    """

    action: torch.Tensor
    sequence: torch.Tensor
    length: torch.Tensor
    status: torch.Tensor
    nodes: torch.Tensor


@dataclass(frozen=True)
class Defence:
    """What `forced_defence` found for each of B positions (A actions, L = 2 * max_depth - 1).

    status:  int8 [B]     NO_THREAT (the opponent has no completing square and no VCF even if
                          the side to move passed, or the game is over), DEFENDED (it has one;
                          `moves` stop it), LOST (it has one and no move stops it), WINS (the
                          side to move completes a line at once: `moves` are those squares),
                          UNKNOWN (the node bound ended the search for the opponent's threat)
    moves:   bool [B, A]  the moves after which the opponent has no completing square and no
                          VCF within the bounds (with NO_THREAT and UNKNOWN, every legal move;
                          a move whose check ran out of nodes is kept)
    delaying: bool [B, A] the fours in `moves` after whose forced block the opponent threatens
                          again (a completing square or a VCF as if the side to move passed):
                          they postpone the threat rather than stop it
    action:  long [B]     the one move in `moves` where there is exactly one, else NO_ACTION
    threat:  long [B, L]  the opponent's win as if the side to move passed (a completing square
                          or a VCF, as in Win.sequence), NO_ACTION after `threat_length`
    threat_length: long [B]
    nodes:   long [B]     attacker moves tried in all the searches
    """

    status: torch.Tensor
    moves: torch.Tensor
    delaying: torch.Tensor
    action: torch.Tensor
    threat: torch.Tensor
    threat_length: torch.Tensor
    nodes: torch.Tensor


def supports(game: Game) -> bool:
    """Whether the threat search knows the game's rules: gomoku's and tic-tac-toe's (stones placed
    anywhere, k in a row wins), not a subclass that plays by rules of its own."""
    return isinstance(game, Gomoku) and keeps_rules(type(game), Gomoku)


@functools.lru_cache(maxsize=16)
def _tables(height: int, width: int, k: int) -> tuple[np.ndarray, ...]:
    """(windows int32 [N, k], cell_windows int32 [cells, 4k] (-1 padded), zobrist int64 [cells, 2])."""
    windows = window_table(height, width, k)[0].numpy().astype(np.int32)
    cells = height * width
    cell_windows = np.full((cells, 4 * k), -1, np.int32)
    filled = np.zeros(cells, np.int64)
    for w, row in enumerate(windows):
        for cell in row:
            cell_windows[cell, filled[cell]] = w
            filled[cell] += 1
    zobrist = np.random.default_rng(20260).integers(1, 2**63 - 1, size=(cells, 2), dtype=np.int64)
    return windows, cell_windows, zobrist


_THREAD = threading.local()


def _scratch(cells: int, max_depth: int, table_bits: int) -> tuple:
    """The scratch arrays and the table of failed positions of this thread's searches, reused from
    call to call (their stamps only grow, so nothing needs clearing)."""
    kept = _THREAD.__dict__.setdefault("scratch", {})
    key = (cells, max_depth, table_bits)
    if key not in kept:
        if len(kept) >= 8:
            kept.clear()
        kept[key] = (loops.new_work(cells, max_depth), loops.new_table(table_bits))
    return kept[key]


def _arguments(game: Game, state: BoardState, max_depth: int, max_nodes: int) -> tuple:
    if not supports(game):
        raise GameError(f"the threat search plays k-in-a-row games (gomoku, tic-tac-toe), not {game.name}")
    if not 1 <= max_depth <= MAX_DEPTH_LIMIT:
        raise GameError(f"max_depth must be 1..{MAX_DEPTH_LIMIT}, not {max_depth}")
    if max_nodes < 0:
        raise GameError(f"max_nodes must be 0 or more, not {max_nodes}")
    windows, cell_windows, zobrist = _tables(game.height, game.width, game.k)
    batch = state.batch_size
    boards = state.board.detach().to("cpu", torch.int8).reshape(batch, -1).contiguous().numpy()
    stones = player_sign(state.to_play.detach().cpu()).to(torch.int64).contiguous().numpy()
    done = state.done.detach().cpu().contiguous().numpy()
    rays = np.ascontiguousarray(game._kernel_rays)
    work, table = _scratch(game.num_actions, max_depth, int(min(20, max(10, np.ceil(np.log2(2 * max_nodes + 2))))))
    return (boards, stones, done, windows, cell_windows, rays, zobrist, game.k, game.exact, max_depth, max_nodes,
            work, table)


def find_win(game: Game, state: BoardState, *, max_depth: int = 20, max_nodes: int = 20_000) -> Win:
    """A forced win by fours for the side to move in each position (the module's docstring says
    exactly what is searched); results on the state's device."""
    arguments = _arguments(game, state, max_depth, max_nodes)
    batch, span = state.batch_size, 2 * max_depth - 1
    sequences = np.empty((batch, span), np.int64)
    lengths, statuses, nodes = np.empty(batch, np.int64), np.empty(batch, np.int8), np.empty(batch, np.int64)
    loops.find_wins(*arguments, sequences, lengths, statuses, nodes)
    sequence = torch.from_numpy(sequences)
    action = torch.where(torch.from_numpy(statuses) == FOUND, sequence[:, 0], torch.tensor(NO_ACTION))
    device = state.device
    return Win(action.to(device), sequence.to(device), torch.from_numpy(lengths).to(device),
               torch.from_numpy(statuses).to(device), torch.from_numpy(nodes).to(device))


def forced_defence(game: Game, state: BoardState, *, max_depth: int = 20, max_nodes: int = 20_000,
                   max_total_nodes: int = 200_000) -> Defence:
    """The moves of the side to move that stop the opponent's immediate win or VCF, in each
    position; results on the state's device.

    The opponent threatens when it would win by a completing square or a VCF if the side to
    move passed (an extra stone of the side to move never helps the opponent, so without such
    a threat no move loses to one). Then every empty cell is tried: a move stops the threat when
    afterwards the opponent, to move, has no completing square and no VCF within the bounds.
    Most moves are settled by replaying the threat found (if it still wins, the move does not
    stop it); the others by a search of their own, each within `max_nodes` and all of a
    position's within about `max_total_nodes` (a move left unsettled is kept). A four of the side
    to move counts as stopping it when the opponent's forced block is not itself the start of
    a VCF; if the opponent threatens again after that block, the four is also in `delaying`
    (`moves & ~delaying`, where not empty, are the moves that really stop the threat).
    """
    arguments = _arguments(game, state, max_depth, max_nodes)
    batch, span = state.batch_size, 2 * max_depth - 1
    moves = np.empty((batch, game.num_actions), np.bool_)
    delaying = np.empty((batch, game.num_actions), np.bool_)
    threats = np.empty((batch, span), np.int64)
    statuses, lengths, nodes = np.empty(batch, np.int8), np.empty(batch, np.int64), np.empty(batch, np.int64)
    if max_total_nodes < 0:
        raise GameError(f"max_total_nodes must be 0 or more, not {max_total_nodes}")
    loops.defend(*arguments, max_total_nodes, moves, delaying, statuses, threats, lengths, nodes)
    moves_tensor = torch.from_numpy(moves)
    single = moves_tensor.sum(dim=1) == 1
    status = torch.from_numpy(statuses)
    only = torch.where(single & ((status == DEFENDED) | (status == WINS)), moves_tensor.to(torch.uint8).argmax(dim=1),
                       torch.tensor(NO_ACTION))
    tensors = (status, moves_tensor, torch.from_numpy(delaying), only, torch.from_numpy(threats),
               torch.from_numpy(lengths), torch.from_numpy(nodes))
    return Defence(*(t.to(state.device) for t in tensors))
