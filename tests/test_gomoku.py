"""Gomoku and tic-tac-toe rules on ASCII boards, known counts, and the fast playout's distribution."""

from __future__ import annotations

import pytest
import torch

import games
from azero.solver import Solver
from boards import count_games, play, position
from games import GameError
from games.base import Game
from games.keyed_random import make_keys

G7 = games.make("gomoku", size=7, k=5)


@pytest.mark.parametrize(
    "text, move",
    [
        # horizontal along the top edge, completed at the corner
        ("""
        . X X X X . .
        O O O O . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .""", "a7"),
        # vertical along the right edge, completed in the middle
        ("""
        . . . . . . X
        . . . . . . X
        . . . . . . .
        . . . . . . X
        . . . . . . X
        O O O O . . .
        . . . . . . .""", "g5"),
        # diagonal from the bottom-left corner
        ("""
        . . . . . . .
        . . . . . . .
        . . . . X . .
        . . . X . . .
        . . X . . . .
        . X . . . O O
        . . . . O O .""", "a1"),
        # diagonal ending in the bottom-right corner
        ("""
        . . . . . . .
        . . . . . . .
        . . X . . . .
        . . . X . . .
        . . . . X . .
        . . . . . X .
        O O O O . . .""", "g1"),
    ],
)
def test_five_in_all_four_directions_at_edges_and_corners(text, move):
    s = position(G7, text, to_play=0)
    assert not bool(s.done[0])
    after = play(G7, s, move)
    assert bool(after.done[0]) and int(after.winner[0]) == 1
    assert G7.result(after).tolist() == [1.0]


def test_four_is_not_five_and_a_gap_does_not_join():
    s = position(G7, """
    X X . X X . .
    O O O . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .""", to_play=0)
    after = play(G7, s, "f7")  # X X . X X X: four, not five
    assert not bool(after.done[0])
    after = play(G7, after, "g1", "c7")
    assert int(after.winner[0]) == 1


OVERLINE = """
. X X . X X X . .
. . . . . . . . .
O O O O . . . . .
. . . . . . . . .
. O . . . . . . .
. . . . . . . . .
. . . . . . . . .
. . . . . . . . .
. . . . . . . . ."""


def test_overline_wins_in_freestyle_but_not_in_standard():
    free = games.make("gomoku", size=9, k=5)
    after = play(free, position(free, OVERLINE, to_play=0), "d9")  # six in a row
    assert int(after.winner[0]) == 1

    standard = games.make("gomoku", size=9, k=5, rule="standard")
    after = play(standard, position(standard, OVERLINE, to_play=0), "d9")
    assert not bool(after.done[0]), "an overline does not win under the standard rule"
    # exactly five still wins under the standard rule
    after = play(standard, position(standard, OVERLINE, to_play=0), "h9")
    assert not bool(after.done[0])  # e9 f9 g9 h9 is four with b9 c9 apart
    s = position(standard, """
    . X X X X . X . .
    . . . . . . . . .
    O O O O . . . . .
    . . . . . . . . .
    . O . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .""", to_play=0)
    assert int(play(standard, s, "a9").winner[0]) == 1  # a9..e9 exactly five, f9 empty
    assert not bool(play(standard, s, "f9").done[0])  # b9..g9 is six


def test_full_board_without_a_line_is_a_draw():
    ttt = games.make("tictactoe")
    s = play(ttt, ttt.initial_state(1), "a3", "b2", "c3", "b3", "b1", "a1", "a2", "c2", "c1")
    assert bool(s.done[0]) and int(s.winner[0]) == 0
    assert ttt.result(s).tolist() == [0.0]


def test_move_text_uses_rows_from_the_bottom():
    g = games.make("gomoku")
    assert g.format_action(7 * 15 + 7) == "h8"  # the centre of 15 x 15
    assert g.parse_action("a1") == 14 * 15
    assert g.parse_action("O15") == 14
    with pytest.raises(GameError, match="off the board"):
        g.parse_action("a16")
    ttt = games.make("tictactoe")
    assert ttt.parse_action("1") == 0 and ttt.parse_action("9") == 8 and ttt.parse_action("b2") == 4
    with pytest.raises(GameError, match="digit 1..9"):
        ttt.parse_action("0")


def test_options_are_validated():
    with pytest.raises(GameError, match="5..19"):
        games.make("gomoku", size=4)
    with pytest.raises(GameError, match="3..6"):
        games.make("gomoku", k=7)
    with pytest.raises(GameError, match="freestyle or standard"):
        games.make("gomoku", rule="renju")
    g = games.make_from_spec("gomoku:width=9,height=6,k=4")
    assert g.board_shape == (6, 9) and g.num_actions == 54 and len(g.symmetries) == 4


def test_tictactoe_known_counts():
    per_depth, finished = count_games(games.make("tictactoe"))
    assert finished == 255_168
    assert per_depth[:4] == [9, 72, 504, 3024]
    assert Solver(games.make("tictactoe")).num_positions == 5_478


def test_encode_is_from_the_view_of_the_player_to_move():
    g = games.make("gomoku", size=5, k=4)
    s = play(g, g.initial_state(1), "a1", "e5")
    x = g.encode(s)[0]  # X to move
    assert x[0, 4, 0] == 1 and x[1, 0, 4] == 1 and x[2, 0, 4] == 1 and x[3].sum() == 25
    s = play(g, s, "c3")
    x = g.encode(s)[0]  # O to move: O's stones are "own"
    assert x[0, 0, 4] == 1 and x[1, 4, 0] == 1 and x[1, 2, 2] == 1 and x[2, 2, 2] == 1


@pytest.mark.parametrize(
    "spec, opening",
    [
        ("tictactoe", [0]),
        ("gomoku:size=5,k=4", [0]),
        ("gomoku:size=5,k=3,rule=standard", [0]),
        ("gomoku:size=5,k=4", [12, 6, 18]),  # X to move, stones of both colours on the board
        ("gomoku:size=5,k=4,rule=standard", [12, 6, 18, 7]),
    ],
)
def test_fast_playout_has_the_distribution_of_stepping(spec, opening):
    """The permutation playout and move-by-move random play give the same outcome frequencies."""
    g = games.make_from_spec(spec)
    s = g.initial_state(1)
    for action in opening:
        s = g.step(s, torch.tensor([action]))
    n = 20000
    many = s.repeat_interleave(n)
    fast = g.random_playout(many, make_keys(1, n))
    slow = Game.random_playout(g, many, make_keys(2, n))
    for outcome in (1.0, 0.0, -1.0):
        p, q = (fast == outcome).float().mean(), (slow == outcome).float().mean()
        # 5 standard errors of a difference of two proportions
        tolerance = 5 * torch.sqrt(2 * q * (1 - q) / n) + 1e-3
        assert abs(p - q) < tolerance, (outcome, float(p), float(q))


def test_render_marks_the_last_move_and_status():
    g = games.make("gomoku", size=5, k=4)
    s = play(g, g.initial_state(1), "c3")
    text = g.render(s)
    assert "O to move" in text and "(X)" in text and text.splitlines()[1].split() == list("abcde")
