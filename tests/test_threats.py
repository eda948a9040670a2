"""The threat search (games/threats.py) against a brute-force minimax and on positions built by hand.

The reference below knows nothing of forced replies: the attacker may play any move that
completes a line or is a four (leaves it a completing square), the defender any empty cell,
and the attacker wins within d moves if some such move wins at once or, with d > 1, every
reply leaves a position it wins within d - 1. The search must find a win exactly when this
does, and a shortest one. Every sequence it returns is replayed with the game's own rules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

import games
from games import NO_ACTION, threats

DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


# -- the reference -------------------------------------------------------------------------------
class Reference:
    """Plain-Python minimax over fours on a flat list board (+1 / -1 / 0)."""

    def __init__(self, game):
        self.height, self.width, self.k, self.exact = game.height, game.width, game.k, game.exact
        self.memo: dict = {}

    def completes(self, board, cell, color) -> bool:
        """Whether `color` on `cell` (empty or already its own) makes a line of k (exactly k)."""
        row, col = divmod(cell, self.width)
        for dr, dc in DIRECTIONS:
            run = 1
            for sign in (1, -1):
                r, c = row + sign * dr, col + sign * dc
                while 0 <= r < self.height and 0 <= c < self.width and board[r * self.width + c] == color:
                    run += 1
                    r, c = r + sign * dr, c + sign * dc
            if run == self.k if self.exact else run >= self.k:
                return True
        return False

    def completing(self, board, color) -> list[int]:
        return [c for c in range(len(board)) if board[c] == 0 and self.completes(board, c, color)]

    def wins_within(self, board: list, color: int, depth: int) -> bool:
        key = (tuple(board), color, depth)
        if key not in self.memo:
            self.memo[key] = self._wins_within(board, color, depth)
        return self.memo[key]

    def _wins_within(self, board, color, depth):
        empty = [c for c in range(len(board)) if board[c] == 0]
        if any(self.completes(board, c, color) for c in empty):
            return True
        if depth == 1:
            return False
        for move in empty:
            board[move] = color
            won = False
            if self.completing(board, color):  # a four
                won = True
                for reply in empty:
                    if reply == move:
                        continue
                    board[reply] = -color
                    survives = self.completes(board, reply, -color) or not self.wins_within(board, color, depth - 1)
                    board[reply] = 0
                    if survives:
                        won = False
                        break
            board[move] = 0
            if won:
                return True
        return False


def random_positions(game, count: int, seed: int, *, min_moves: int = 4, quiet: bool = True) -> list:
    """Unfinished positions of uniformly random play, of `min_moves` moves or more; `quiet`: only
    those where the side to move cannot complete a line at once (most random positions can)."""
    generator = torch.Generator().manual_seed(seed)
    reference = Reference(game)
    out = []
    while len(out) < count:
        state = game.initial_state(1)
        plies = int(torch.randint(min_moves, game.num_actions - 2, (1,), generator=generator))
        for _ in range(plies):
            legal = game.legal_mask(state)[0].nonzero().view(-1)
            action = legal[torch.randint(len(legal), (1,), generator=generator)]
            state = game.step(state, action)
            if bool(state.done[0]):
                break
        color = 1 - 2 * int(state.to_play[0])
        if not bool(state.done[0]) and not (quiet and reference.completing(state.board.view(-1).tolist(), color)):
            out.append(state)
    return out


def stack(states) -> games.BoardState:
    return games.BoardState.cat(states)


# -- replaying a sequence with the game's own rules ----------------------------------------------
def completing_squares(game, state, player: int) -> set[int]:
    """The empty cells where `player` (0 / 1) would complete a line, by stepping the game."""
    board = state.board[0]
    position = game.from_board(board, to_play=player)
    empty = (board.view(-1) == 0).nonzero().view(-1)
    if len(empty) == 0:
        return set()
    after = game.step(position.repeat_interleave(len(empty)), empty)
    sign = 1 - 2 * player
    return {int(c) for c, w in zip(empty, after.winner) if int(w) == sign}


def assert_forces(game, state, sequence: list[int]):
    """Play `sequence` from `state`: each defender reply is its only move that does not lose at
    once (the attacker has one completing square, the defender none), or after a four with two
    completing squares every reply loses; the last move wins."""
    attacker = int(state.to_play[0])
    assert len(sequence) % 2 == 1
    for i, move in enumerate(sequence):
        if i % 2 == 1:  # the defender's turn
            squares = completing_squares(game, state, attacker)
            assert not completing_squares(game, state, 1 - attacker), "the defender could complete a line"
            assert move in squares, "the reply does not block the four"
            assert len(squares) == 1 or i == len(sequence) - 2, "a reply that was not forced"
            if len(squares) > 1:  # two completing squares: every reply loses
                for reply in range(game.num_actions):
                    if int(state.board.view(-1)[reply]) == 0:
                        after = game.step(state, torch.tensor([reply]))
                        assert completing_squares(game, after, attacker) or bool(after.done[0])
        else:
            assert i == len(sequence) - 1 or completing_squares(game, game.step(state, torch.tensor([move])), attacker)
        state = game.step(state, torch.tensor([move]))
        assert bool(state.done[0]) == (i == len(sequence) - 1), "the game ended early, or not at the end"
    assert int(state.winner[0]) == 1 - 2 * attacker


# -- exactness against the reference -------------------------------------------------------------
SMALL_GAMES = [
    dict(size=5, k=3, rule="freestyle"),
    dict(size=5, k=4, rule="standard"),
    dict(size=6, k=4, rule="freestyle"),
    dict(size=6, k=4, rule="standard"),
    dict(size=7, k=4, rule="standard"),
]


def check_find_win(options: dict, count: int, seed: int, max_depth: int) -> set[int]:
    """Compare find_win with the reference at every depth 1..max_depth; returns the lengths
    (attacker moves) of the shortest wins met."""
    game = games.make("gomoku", **options)
    reference = Reference(game)
    positions = random_positions(game, count, seed)
    found = set()
    for depth in range(1, max_depth + 1):
        win = threats.find_win(game, stack(positions), max_depth=depth, max_nodes=10**7)
        assert not bool((win.status == threats.CUT_OFF).any())
        for i, state in enumerate(positions):
            color = 1 - 2 * int(state.to_play[0])
            expected = reference.wins_within(state.board.view(-1).tolist(), color, depth)
            assert bool(win.status[i] == threats.FOUND) == expected, (options, depth, game.render(state))
            if expected:
                length = int(win.length[i])
                shortest = min(d for d in range(1, depth + 1)
                               if reference.wins_within(state.board.view(-1).tolist(), color, d))
                assert length == 2 * shortest - 1
                sequence = win.sequence[i, :length].tolist()
                assert int(win.action[i]) == sequence[0] and bool((win.sequence[i, length:] == NO_ACTION).all())
                assert_forces(game, state, sequence)
                found.add(shortest)
            else:
                assert int(win.action[i]) == NO_ACTION and int(win.length[i]) == 0
    return found


@pytest.mark.parametrize("options", SMALL_GAMES, ids=lambda o: f"{o['size']}x{o['size']}k{o['k']}{o['rule'][0]}")
def test_find_win_agrees_with_brute_force(options):
    shortest = check_find_win(options, count=30, seed=options["size"] * 10 + options["k"], max_depth=4)
    assert {2, 3} <= shortest  # the positions hold wins by fours to find, not only their absence


def check_defence(options: dict, count: int, seed: int, max_depth: int) -> int:
    """Compare forced_defence with the reference; returns how many positions were threatened."""
    game = games.make("gomoku", **options)
    reference = Reference(game)
    positions = random_positions(game, count, seed)
    guard = threats.forced_defence(game, stack(positions), max_depth=max_depth, max_nodes=10**7)
    threatened = 0
    for i, state in enumerate(positions):
        board = state.board.view(-1).tolist()
        me = 1 - 2 * int(state.to_play[0])
        empty = [c for c in range(len(board)) if board[c] == 0]
        own = reference.completing(board, me)
        status = int(guard.status[i])
        if own:
            assert status == threats.WINS and guard.moves[i].nonzero().view(-1).tolist() == own
            continue
        if not reference.wins_within(board, -me, max_depth):
            assert status == threats.NO_THREAT and guard.moves[i].nonzero().view(-1).tolist() == empty
            continue
        threatened += 1
        stops = []
        for x in empty:
            board[x] = me
            if not reference.wins_within(board, -me, max_depth):
                stops.append(x)
            board[x] = 0
        assert guard.moves[i].nonzero().view(-1).tolist() == stops, game.render(state)
        assert status == (threats.DEFENDED if stops else threats.LOST)
        assert int(guard.action[i]) == (stops[0] if len(stops) == 1 else NO_ACTION)
        threat = guard.threat[i, :int(guard.threat_length[i])].tolist()
        assert_forces(game, game.from_board(state.board[0], to_play=1 - int(state.to_play[0])), threat)
        delaying = []
        for x in stops:  # a four whose forced block leaves the opponent threatening again
            board[x] = me
            block = reference.completing(board, me)
            if len(block) == 1:
                board[block[0]] = -me
                if reference.wins_within(board, -me, max_depth):
                    delaying.append(x)
                board[block[0]] = 0
            board[x] = 0
        assert guard.delaying[i].nonzero().view(-1).tolist() == delaying
    return threatened


@pytest.mark.parametrize("options", SMALL_GAMES[:3], ids=lambda o: f"{o['size']}x{o['size']}k{o['k']}{o['rule'][0]}")
def test_forced_defence_agrees_with_brute_force(options):
    assert check_defence(options, count=10, seed=options["size"] + options["k"], max_depth=3) > 0


@pytest.mark.slow
@pytest.mark.parametrize("options", SMALL_GAMES, ids=lambda o: f"{o['size']}x{o['size']}k{o['k']}{o['rule'][0]}")
def test_deeper_sweeps_agree_with_brute_force(options):
    assert {2, 3} <= check_find_win(options, count=120, seed=options["size"] * 100 + options["k"], max_depth=5)
    check_defence(options, count=40, seed=options["size"] * 7 + options["k"], max_depth=4)


OTHER_SHAPES = [  # rectangles, and k = 5 and 6 on boards the reference still searches
    dict(width=7, height=5, k=4, rule="freestyle"),
    dict(width=5, height=8, k=3, rule="standard"),
    dict(size=7, k=5, rule="standard"),
    dict(size=8, k=6, rule="freestyle"),
]


@pytest.mark.slow
@pytest.mark.parametrize("options", OTHER_SHAPES, ids=lambda o: "-".join(f"{key}{value}" for key, value in o.items()))
def test_other_shapes_agree_with_brute_force(options):
    assert 2 in check_find_win(options, count=40, seed=3, max_depth=4)
    check_defence(options, count=10, seed=3, max_depth=3)


@pytest.mark.slow
@pytest.mark.parametrize("options", [dict(size=15, k=5, rule="standard"), dict(size=19, k=6, rule="freestyle"),
                                     dict(size=9, k=5, rule="freestyle"), dict(width=19, height=11, k=3, rule="standard")],
                         ids=lambda o: "-".join(f"{key}{value}" for key, value in o.items()))
def test_every_win_found_on_large_boards_replays_and_is_shortest(options):
    game = games.make("gomoku", **options)
    positions = stack(random_positions(game, 60, 11, min_moves=10))
    win = threats.find_win(game, positions, max_depth=20, max_nodes=200_000)
    found = (win.status == threats.FOUND).nonzero().view(-1).tolist()
    assert found and not bool((win.status == threats.CUT_OFF).any())
    for i in found:
        length = int(win.length[i])
        assert_forces(game, positions[i], win.sequence[i, :length].tolist())
        if length > 1:
            shorter = threats.find_win(game, positions[i], max_depth=(length + 1) // 2 - 1, max_nodes=200_000)
            assert int(shorter.status[0]) == threats.NONE


# -- positions built by hand ---------------------------------------------------------------------
def position(game, stones: dict[str, list[str]], to_play: int) -> games.BoardState:
    """A position from square names: {"X": ["h8", ...], "O": [...]}."""
    board = torch.zeros(game.height * game.width, dtype=torch.int8)
    for mark, color in (("X", 1), ("O", -1)):
        for square in stones.get(mark, []):
            board[game.parse_action(square)] = color
    return game.from_board(board.view(game.height, game.width), to_play=to_play)


def squares(game, sequence) -> list[str]:
    return [game.format_action(int(a)) for a in sequence]


GOMOKU = games.make("gomoku", size=15)


# a position of uniformly random play on 15 x 15: O, to move, wins by five attacker moves and no fewer
LONG_VCF = {
    "X": ["a15", "c15", "e14", "d13", "e13", "l13", "d12", "l12", "f10", "m8", "o8", "e7", "h7", "b6", "d6", "e6",
          "m6", "i5", "d4", "i4", "m3", "a2", "g1", "n1"],
    "O": ["e15", "f15", "f14", "k14", "i13", "k13", "m12", "h11", "m11", "j10", "b9", "c9", "j9", "o9", "c7", "f7",
          "m7", "f5", "h3", "k3", "k2", "k1", "m1"],
}


def test_a_long_vcf_is_found_and_really_forces():
    state = position(GOMOKU, LONG_VCF, to_play=1)
    win = threats.find_win(GOMOKU, state, max_depth=12)
    assert int(win.status[0]) == threats.FOUND
    length = int(win.length[0])
    sequence = win.sequence[0, :length].tolist()
    assert length == 9, squares(GOMOKU, sequence)  # five attacker moves
    assert_forces(GOMOKU, state, sequence)
    shorter = threats.find_win(GOMOKU, state, max_depth=4)
    assert int(shorter.status[0]) == threats.NONE
    # the defender, to move instead, sees the threat and the moves that stop it
    guard = threats.forced_defence(GOMOKU, position(GOMOKU, LONG_VCF, to_play=0))
    assert int(guard.status[0]) == threats.DEFENDED and int(guard.threat_length[0]) == 9
    defences = guard.moves[0].nonzero().view(-1)
    assert 0 < len(defences) < 60
    # out of budget, the moves still unsettled are kept: more moves, never fewer
    hurried = threats.forced_defence(GOMOKU, position(GOMOKU, LONG_VCF, to_play=0), max_total_nodes=0)
    assert bool((hurried.moves[0] >= guard.moves[0]).all())
    assert int(hurried.nodes[0]) < int(guard.nodes[0])
    after = GOMOKU.step(position(GOMOKU, LONG_VCF, to_play=0).repeat_interleave(len(defences)), defences)
    assert not bool((threats.find_win(GOMOKU, after).status == threats.FOUND).any())


def test_the_only_win_blocks_with_a_four():
    # O threatens five at h11 (d11..g11, c11 blocked); X's open three on row 4 would win, but X
    # must block first, and only because h11 is also a four for X (h8, h9, h10) does it keep the move.
    stones = {"X": ["c11", "h8", "h9", "h10", "d4", "e4", "f4"], "O": ["d11", "e11", "f11", "g11", "h7", "a15"]}
    state = position(GOMOKU, stones, to_play=0)
    win = threats.find_win(GOMOKU, state)
    assert int(win.status[0]) == threats.FOUND
    sequence = win.sequence[0, :int(win.length[0])].tolist()
    assert squares(GOMOKU, sequence[:2]) == ["h11", "h12"]
    assert_forces(GOMOKU, state, sequence)
    # without the column, the block is not a four: no VCF, although the open three is still there
    stones["X"].remove("h9")
    stones["O"].remove("a15")
    plain = threats.find_win(GOMOKU, position(GOMOKU, stones, to_play=0))
    assert int(plain.status[0]) == threats.NONE


def test_a_counter_four_refutes_the_line():
    # X's h8 is a four (e8..h8, d8 blocked) and then h6/h10 would make an open four on column h
    # (h7, h9 + h8) -- but O's forced reply i8 completes O's own four on column i (i9..i11,
    # i12 blocked), so X must block at i7, which is no four of X: the line fails.
    base = {"X": ["e8", "f8", "g8", "h7", "h9", "i12"], "O": ["d8", "a1"]}
    counter = {"X": base["X"], "O": base["O"] + ["i9", "i10", "i11"]}
    without = threats.find_win(GOMOKU, position(GOMOKU, base, to_play=0))
    assert int(without.status[0]) == threats.FOUND
    assert_forces(GOMOKU, position(GOMOKU, base, to_play=0), without.sequence[0, :int(without.length[0])].tolist())
    state = position(GOMOKU, counter, to_play=0)
    refuted = threats.find_win(GOMOKU, state)
    assert int(refuted.status[0]) == threats.NONE
    after = GOMOKU.step(GOMOKU.step(state, torch.tensor([GOMOKU.parse_action("h8")])),
                        torch.tensor([GOMOKU.parse_action("i8")]))
    assert completing_squares(GOMOKU, after, 1) == {GOMOKU.parse_action("i7")}
    assert int(threats.find_win(GOMOKU, after).status[0]) == threats.NONE


def test_an_overline_wins_only_in_freestyle():
    stones = {"X": ["c8", "d8", "e8", "g8", "h8"], "O": ["c9", "d9", "e9", "g9", "a1"]}
    for rule, expected in (("freestyle", "f8"), ("standard", None)):
        game = games.make("gomoku", size=15, rule=rule)
        win = threats.find_win(game, position(game, stones, to_play=0), max_depth=1)
        assert (game.format_action(int(win.action[0])) if int(win.status[0]) == threats.FOUND else None) == expected


def test_forced_defence_blocks_and_reports_a_lost_position():
    # X (to move... no: O to move) faces X's open four: lost; facing a closed four: the one block
    open_four = {"X": ["d8", "e8", "f8", "g8"], "O": ["d9", "e9", "f9"]}
    closed_four = {"X": ["d8", "e8", "f8", "g8"], "O": ["c8", "e9", "f9"]}
    guard = threats.forced_defence(GOMOKU, stack([position(GOMOKU, open_four, to_play=1),
                                                  position(GOMOKU, closed_four, to_play=1)]))
    assert guard.status.tolist() == [threats.LOST, threats.DEFENDED]
    assert not bool(guard.moves[0].any())
    assert squares(GOMOKU, guard.moves[1].nonzero().view(-1)) == ["h8"] and squares(GOMOKU, guard.action[1:]) == ["h8"]


def test_finished_and_other_games():
    state = position(GOMOKU, {"X": ["d8", "e8", "f8", "g8", "h8"], "O": ["d9", "e9", "f9", "g9"]}, to_play=1)
    assert bool(state.done[0])
    assert int(threats.find_win(GOMOKU, state).action[0]) == NO_ACTION
    assert int(threats.forced_defence(GOMOKU, state).status[0]) == threats.NO_THREAT
    tictactoe = games.make("tictactoe")
    fork = tictactoe.from_board(torch.tensor([[1, 0, -1], [0, -1, 0], [0, 0, 1]]), to_play=0)
    win = threats.find_win(tictactoe, fork)  # X must block at 7 (action 6), which threatens 4 and 8 at once
    assert win.sequence[0, :int(win.length[0])].tolist()[:1] == [6] and int(win.length[0]) == 3
    assert_forces(tictactoe, fork, win.sequence[0, :3].tolist())
    assert threats.supports(tictactoe) and not threats.supports(games.make("connect4"))

    class OwnRules(games.Gomoku):  # a variant that plays by rules of its own is not searched as gomoku
        def _apply(self, state, action):
            return super()._apply(state, action)

    assert not threats.supports(OwnRules(size=9))
    with pytest.raises(games.GameError, match="k-in-a-row"):
        threats.find_win(games.make("connect4"), games.make("connect4").initial_state(1))
    with pytest.raises(games.GameError, match="max_depth"):
        threats.find_win(GOMOKU, GOMOKU.initial_state(1), max_depth=0)


def test_the_node_bound_cuts_the_search_off():
    win = threats.find_win(GOMOKU, position(GOMOKU, LONG_VCF, to_play=1), max_nodes=3)
    assert int(win.status[0]) == threats.CUT_OFF and int(win.action[0]) == NO_ACTION
    assert int(win.nodes[0]) == 4  # the fourth node is the one over the bound


# -- the same answers without numba --------------------------------------------------------------
FALLBACK = """
import json, games
from games import threats
from tests.test_threats import random_positions, stack
answers = []
for rule in ("freestyle", "standard"):
    game = games.make("gomoku", size=6, k=4, rule=rule)
    states = stack(random_positions(game, 4, 1 if rule == "freestyle" else 101))
    win = threats.find_win(game, states, max_depth=3)
    guard = threats.forced_defence(game, states, max_depth=3)
    answers.append([win.sequence.tolist(), win.status.tolist(), win.nodes.tolist(), guard.moves.tolist(),
                    guard.status.tolist(), guard.delaying.tolist(), guard.nodes.tolist()])
print(json.dumps(answers))
"""


def test_without_numba_the_answers_are_the_same():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    answers = []
    for switch in ("0", "1"):
        env = {**os.environ, "AZERO_NO_KERNELS": switch, "PYTHONPATH": root}
        run = subprocess.run([sys.executable, "-c", FALLBACK], env=env, cwd=root, capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, run.stderr
        answers.append(json.loads(run.stdout))
    assert answers[0] == answers[1]
    wins = [status for rule in answers[0] for status in rule[1]]
    defences = [status for rule in answers[0] for status in rule[4]]
    assert threats.FOUND in wins and threats.DEFENDED in defences  # wins and defences to agree on
