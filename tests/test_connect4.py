"""Connect Four rules, drawn as ASCII boards (row 0 on top; X moves first)."""

from __future__ import annotations

import pytest
import torch

import games
from boards import parse_ascii_board
from games import GameError, IllegalActionError

SYMBOLS = {"X": 1, "O": -1, ".": 0}


def position(game, text: str, to_play: int | None = None):
    return game.from_board(parse_ascii_board(text, SYMBOLS), to_play)


def play(game, state, text: str):
    """Play one move written as text ("4") in a one-game state."""
    return game.step(state, torch.tensor([game.parse_action(text)]))


@pytest.fixture
def game():
    return games.make("connect4")


def perft(game, depth: int) -> list[int]:
    """Move sequences of each length 1..depth, by batched breadth-first expansion.

    Each level expands every position by every legal action in one `step` call.
    """
    state = game.initial_state(1)
    counts = []
    for _ in range(depth):
        parent, action = game.legal_mask(state).nonzero(as_tuple=True)
        state = game.step(state[parent], action)
        counts.append(len(action))
    return counts


def test_discs_drop_to_the_lowest_empty_row(game):
    s = play(game, game.initial_state(1), "4")
    assert s.board[0, 5, 3] == 1 and int(s.board.abs().sum()) == 1
    s = play(game, s, "4")
    assert s.board[0, 4, 3] == -1
    assert s.heights[0].tolist() == [0, 0, 0, 2, 0, 0, 0]
    assert int(s.last_action[0]) == 3 and int(s.to_play[0]) == 0


@pytest.mark.parametrize(
    "board, move, winner",
    [
        # horizontal, left edge, bottom row
        (
            """
            .......
            .......
            .......
            .......
            OOO....
            XXX....
            """,
            "4",
            1,
        ),
        # horizontal, right edge, O fills the left end
        (
            """
            .......
            .......
            .......
            .......
            ....OOO
            XX.XXOX
            """,
            "4",
            -1,
        ),
        # horizontal, the disc lands in the middle of the line
        (
            """
            .......
            .......
            .......
            .......
            ..OO.O.
            ..XX.X.
            """,
            "5",
            1,
        ),
        # vertical, right edge, reaching the top row
        (
            """
            .......
            ......X
            ......X
            ......X
            ......O
            O.....O
            """,
            "7",
            1,
        ),
        # diagonal down-right, from the left edge to the bottom row
        (
            """
            .......
            .......
            .......
            OX.....
            XOX....
            OXOX..O
            """,
            "1",
            1,
        ),
        # diagonal down-left (anti-diagonal), from the right edge to the bottom row
        (
            """
            .......
            .......
            .......
            .....OX
            ....OXO
            XX.OXOX
            """,
            "7",
            -1,
        ),
    ],
)
def test_four_in_a_row_wins_in_every_direction(game, board, move, winner):
    s = position(game, board)
    assert not bool(s.done[0])
    new = play(game, s, move)
    assert bool(new.done[0]) and int(new.winner[0]) == winner
    assert float(game.result(new)[0]) == winner
    assert not game.legal_mask(new).any()
    assert ("X wins" if winner == 1 else "O wins") in game.render(new)


def test_three_in_a_row_does_not_win(game):
    s = position(game, ".......\n.......\n.......\n.......\n.......\n.......")
    for move in "1122":
        s = play(game, s, move)
    s = play(game, s, "3")
    assert not bool(s.done[0])


def test_full_column_is_refused(game):
    s = position(
        game,
        """
        ...O...
        ...X...
        ...O...
        ...X...
        ...O...
        ...X...
        """,
    )
    assert game.legal_mask(s)[0].tolist() == [True, True, True, False, True, True, True]
    with pytest.raises(IllegalActionError, match="column 4 is full"):
        play(game, s, "4")


def test_full_board_without_a_line_is_a_draw(game):
    s = position(
        game,
        """
        XX.OXXO
        XXOOXXO
        OOXXOOX
        XXOOXXO
        OOXXOOX
        OOXXOOX
        """,
    )
    assert int(s.to_play[0]) == 1 and not bool(s.done[0])
    assert game.legal_actions(s) == [2]
    final = play(game, s, "3")
    assert bool(final.done[0]) and int(final.winner[0]) == 0
    assert "draw" in game.render(final)


def test_from_board_checks_the_position(game):
    empty = ".......\n" * 5
    with pytest.raises(GameError, match="floats"):
        position(game, ".......\n" * 4 + "...X...\n.......")
    with pytest.raises(GameError, match="cannot arise"):
        position(game, empty + "XX.....")
    with pytest.raises(GameError, match="both players"):
        position(game, ".......\n.......\nX...O..\nX...O..\nX...O..\nX...O..")
    with pytest.raises(GameError, match="moved after"):
        position(game, ".......\n.......\n.......\nO......\nOO.O...\nXXXX...")
    won = position(game, ".......\n.......\n.......\n.......\nOOO....\nXXXX...")
    assert bool(won.done[0]) and int(won.winner[0]) == 1
    with pytest.raises(GameError, match="6x7"):
        game.from_board(torch.zeros(5, 7))


@pytest.mark.slow
def test_perft_seven_plies_misses_the_moves_into_full_columns():
    # The seven sequences that fill one column in six plies have six moves at ply seven.
    assert perft(games.make("connect4"), 7)[-1] == 7**7 - 7 == 823536


def test_perft_from_the_start(game):
    assert perft(game, 6) == [7**d for d in range(1, 7)]


def test_small_board_perft_sees_full_columns():
    small = games.make("connect4", rows=5, columns=4)
    assert small.num_actions == 4 and small.board_shape == (5, 4)
    # Only the four sequences that fill one column in five plies lose a move at ply six.
    assert perft(small, 6) == [4, 16, 64, 256, 1024, 4**6 - 4]


def test_small_board_vertical_win():
    small = games.make_from_spec("connect4:rows=5,columns=4")
    s = position(small, "....\n....\nX...\nXO..\nXO.O")
    new = play(small, s, "1")
    assert bool(new.done[0]) and int(new.winner[0]) == 1


def test_k_option_changes_the_line_length():
    three = games.make("connect4", k=3)
    s = three.initial_state(1)
    for move in "1122":
        s = play(three, s, move)
    s = play(three, s, "3")
    assert bool(s.done[0]) and int(s.winner[0]) == 1


def test_options_are_validated():
    assert games.make("connectfour") == games.make("connect4")
    assert games.make("connect4").spec == "connect4:rows=6,columns=7,k=4"
    for bad in ({"rows": 3}, {"columns": 11}, {"k": 6}, {"rows": "six"}):
        with pytest.raises(GameError, match="connect4: option"):
            games.make("connect4", **bad)
    with pytest.raises(GameError, match="does not fit"):
        games.make("connect4", rows=4, columns=4, k=5)


def test_action_text_is_the_column_number(game):
    assert [game.format_action(a) for a in range(7)] == list("1234567")
    assert game.parse_action(" 7 ") == 6
    for bad in ("0", "8", "d", "4a", "-1", ""):
        with pytest.raises(GameError, match="column number 1..7"):
            game.parse_action(bad)


def test_mirror_moves_columns_cells_and_heights(game):
    s = play(game, game.initial_state(1), "1")
    mirror = game.symmetries[1]
    moved = game.transform_state(s, mirror)
    assert moved.equal(play(game, game.initial_state(1), "7"))


def test_encode_is_from_the_view_of_the_player_to_move(game):
    s = play(game, game.initial_state(1), "2")
    x = game.encode(s)
    assert x.shape == (1, 3, 6, 7)
    assert x[0, 0].sum() == 0 and x[0, 1, 5, 1] == 1 and bool((x[0, 2] == 1).all())


def test_render_shows_columns_and_status(game):
    text = game.render(play(game, game.initial_state(1), "4"))
    lines = text.splitlines()
    assert "O to move" in lines[0] and "last move 4" in lines[0]
    assert lines[-1] == "1 2 3 4 5 6 7"
    assert lines[-2] == ". . . X . . ."

