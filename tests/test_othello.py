"""Othello rules on ASCII boards, move text, perft from the start, and a cross-check against
a plain one-board implementation. X = black (first player, +1), O = white (-1); rows from the top."""

from __future__ import annotations

import random

import pytest
import torch

import games
from boards import legal_texts, parse_ascii_board, play
from games import GameError, IllegalActionError

SYMBOLS = {"X": 1, "O": -1, ".": 0}
BLACK, WHITE = 0, 1


def board(text: str) -> torch.Tensor:
    return parse_ascii_board(text, SYMBOLS)


@pytest.fixture
def othello():
    return games.make("othello")


def test_start_position_and_black_openings(othello):
    s = othello.initial_state()
    assert torch.equal(s.board[0, 3:5, 3:5], torch.tensor([[-1, 1], [1, -1]], dtype=torch.int8))
    assert legal_texts(othello, s) == {"d3", "c4", "f5", "e6"}
    after = play(othello, s, "d3")
    assert int(after.to_play[0]) == WHITE and not bool(after.done[0])
    assert torch.equal(after.board[0, 2:5, 3], torch.tensor([1, 1, 1], dtype=torch.int8))
    assert legal_texts(othello, after) == {"c3", "e3", "c5"}


def test_one_move_flips_every_bracketed_line_and_only_those(othello):
    s = othello.from_board(
        board("""
            X . X . X . . .
            . O O O . . . .
            X O . O O X O X
            . O O O X . . .
            X . . O O . . .
            . . X . . X . .
            . . . . . . . .
            . . . . . . . .
        """),
        to_play=BLACK,
    )
    # From c3: seven bracketed lines (one of length two on the right and on the down-right
    # diagonal); down stops at an empty square before the X on c6; g3 lies beyond X's own f3.
    after = play(othello, s, "c3")
    expected = board("""
        X . X . X . . .
        . X X X . . . .
        X X X X X X O X
        . X O X X . . .
        X . . O X . . .
        . . X . . X . .
        . . . . . . . .
        . . . . . . . .
    """)
    assert torch.equal(after.board[0], expected)
    assert int(after.to_play[0]) == WHITE and int(after.move_number[0]) == s.move_number[0] + 1


def test_corner_and_edge_moves_and_no_wrap_around_the_board_edge(othello):
    s = othello.from_board(
        board("""
            . O O X . . . .
            O O . . . . . .
            X . X . . . . .
            . . . O X . . .
            . . . X O . . .
            O X . . . . . .
            . . . . . . . .
            . O O O O O O O
        """),
        to_play=BLACK,
    )
    legal = legal_texts(othello, s)
    assert "a1" in legal
    assert "h5" not in legal, "h5's right neighbour is off the board, not a6 on the next row"
    assert "a8" not in legal, "a line of O running into the edge is not bracketed"
    with pytest.raises(IllegalActionError, match="a8 flips nothing"):
        play(othello, s, "a8")
    after = play(othello, s, "a1")
    assert after.board[0, 0, :4].tolist() == [1, 1, 1, 1]
    assert after.board[0, :3, 0].tolist() == [1, 1, 1]
    assert after.board[0, 1, 1] == 1


def test_forced_pass_then_the_same_player_moves_again_and_full_board_win():
    game = games.make("othello", size=4)
    s = game.from_board(
        board("""
            X X X X
            . O X X
            X X O X
            X X . X
        """),
        to_play=BLACK,
    )
    s = play(game, s, "a2")
    assert int(s.to_play[0]) == WHITE and not bool(s.done[0])
    mask = game.legal_mask(s)[0]
    assert mask.nonzero().flatten().tolist() == [game.pass_action], "pass is white's only legal action"
    assert "must pass" in game.render(s)
    with pytest.raises(IllegalActionError, match="must pass"):
        play(game, s, "c4")
    s = play(game, s, "pass")
    assert int(s.to_play[0]) == BLACK and legal_texts(game, s) == {"c4"}
    with pytest.raises(IllegalActionError, match="pass is only legal when no move is"):
        play(game, s, "pass")
    s = play(game, s, "c4")
    assert bool(s.done[0]) and int(s.winner[0]) == 1 and game.result(s).tolist() == [1.0]
    assert not game.legal_mask(s).any()
    assert "X wins" in game.render(s)


def test_game_ends_when_neither_player_can_move_before_the_board_is_full():
    game = games.make("othello", size=4)
    s = game.from_board(
        board("""
            O O O .
            O O O X
            O X O X
            . O X X
        """),
        to_play=WHITE,
    )
    s = play(game, s, "a4")  # flips b3; then d1 is empty but brackets nothing for either side
    assert bool(s.done[0]) and int((s.board[0] == 0).sum()) == 1
    assert int(s.winner[0]) == -1, "white wins 11 to 4"
    assert "O wins" in game.render(s)


def test_wipe_out_ends_the_game_at_once(othello):
    s = othello.from_board(
        board("""
            . . . . . . . .
            . . . . . . . .
            . . . . . . . .
            . . . O X . . .
            . . . X X . . .
            . . . . . . . .
            . . . . . . . .
            . . . . . . . .
        """),
        to_play=BLACK,
    )
    s = play(othello, s, "c4")
    assert bool(s.done[0]) and int(s.winner[0]) == 1 and int(s.board[0].sum()) == 5


def test_full_board_draw():
    game = games.make("othello", size=4)
    s = game.from_board(
        board("""
            X X X X
            X X O .
            O O O O
            O O O O
        """),
        to_play=BLACK,
    )
    s = play(game, s, "d2")
    assert bool(s.done[0]) and int(s.winner[0]) == 0 and game.result(s).tolist() == [0.0]
    assert "draw" in game.render(s)


def test_occupied_square_and_pass_reasons(othello):
    s = othello.initial_state()
    with pytest.raises(IllegalActionError, match="d4 is occupied"):
        play(othello, s, "d4")
    with pytest.raises(IllegalActionError, match="a1 flips nothing"):
        play(othello, s, "a1")
    with pytest.raises(IllegalActionError, match="pass is only legal when no move is"):
        play(othello, s, "pass")


def test_move_text(othello):
    assert othello.format_action(19) == "d3" and othello.parse_action("D3") == 19
    assert othello.parse_action(" e6 ") == 44 and othello.format_action(0) == "a1"
    assert othello.format_action(63) == "h8" and othello.format_action(64) == "pass"
    assert othello.parse_action("PASS") == 64
    for bad in ("i1", "d9", "d0", "pass2", "", "33"):
        with pytest.raises(GameError, match="othello"):
            othello.parse_action(bad)


def test_options():
    assert games.make("othello").board_shape == (8, 8)
    game = games.make_from_spec("othello:size=6")
    assert game.num_actions == 37 and game.num_planes == 4 and len(game.symmetries) == 8
    for bad in (7, 2, 18):
        with pytest.raises(GameError, match="4, 6, 8, 10, 12, 14, 16"):
            games.make("othello", size=bad)


def test_from_board_checks(othello):
    with pytest.raises(GameError, match="8x8"):
        othello.from_board(torch.zeros(6, 6))
    with pytest.raises(GameError, match="centre"):
        othello.from_board(torch.zeros(8, 8))
    s = othello.from_board(othello.initial_state().board[0])
    assert s.equal(othello.initial_state())


def test_encode_is_from_the_view_of_the_player_to_move(othello):
    s = play(othello, othello.initial_state(), "d3")
    planes = othello.encode(s)[0]
    assert torch.equal(planes[0], (s.board[0] == -1).float()), "white to move: own = white"
    assert torch.equal(planes[1], (s.board[0] == 1).float())
    assert torch.equal(planes[2].flatten().nonzero().flatten(), torch.tensor([18, 20, 34]))
    assert bool((planes[3] == 1).all())


def perft(game, depth: int) -> list[int]:
    """Leaf counts for depths 1..depth, expanding every state of a depth in one batch."""
    states, counts = game.initial_state(), []
    for _ in range(depth):
        parents, actions = game.legal_mask(states).nonzero(as_tuple=True)
        states = game.step(states[parents], actions)
        counts.append(states.batch_size)
    return counts


def test_perft_from_the_start(othello):
    assert perft(othello, 6) == [4, 12, 56, 244, 1396, 8200]


def reference_moves(cells: list[list[int]], color: int) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """Plain one-board rules: legal squares -> the discs they flip."""
    size, moves = len(cells), {}
    for row in range(size):
        for col in range(size):
            if cells[row][col]:
                continue
            flips = []
            for row_step in (-1, 0, 1):
                for col_step in (-1, 0, 1):
                    line, r, c = [], row + row_step, col + col_step
                    while (row_step or col_step) and 0 <= r < size and 0 <= c < size and cells[r][c] == -color:
                        line.append((r, c))
                        r, c = r + row_step, c + col_step
                    if line and 0 <= r < size and 0 <= c < size and cells[r][c] == color:
                        flips += line
            if flips:
                moves[(row, col)] = flips
    return moves


@pytest.mark.parametrize("size", [4, 6, 8])
def test_random_games_agree_with_a_plain_implementation(size):
    game, rng = games.make("othello", size=size), random.Random(size)
    for _ in range(8):
        state = game.initial_state()
        cells, color = state.board[0].tolist(), 1
        while True:
            moves = reference_moves(cells, color)
            if not moves and not reference_moves(cells, -color):
                break
            expected = {r * size + c for r, c in moves} or {game.pass_action}
            assert set(game.legal_actions(state)) == expected
            assert not bool(state.done[0]) and int(state.to_play[0]) == (0 if color == 1 else 1)
            action = rng.choice(sorted(expected))
            if action != game.pass_action:
                row, col = divmod(action, size)
                for r, c in moves[(row, col)] + [(row, col)]:
                    cells[r][c] = color
            state = game.step(state, torch.tensor([action]))
            color = -color
            assert state.board[0].tolist() == cells
        total = sum(map(sum, cells))
        assert bool(state.done[0]) and int(state.winner[0]) == (total > 0) - (total < 0)


def test_random_playout_draws_what_stepping_draws():
    from games.keyed_random import make_keys

    game = games.make("othello", size=4)
    state, generator, positions = game.initial_state(8), torch.Generator().manual_seed(7), []
    while not bool(state.done.all()):
        positions.append(state)
        state = game.step(state, games.sample_uniform_legal(game.legal_mask(state), generator))
    state = games.State.cat([positions[5], state])  # 8 games under way, 8 over
    keys = make_keys(11, 16)
    fast = game.random_playout(state, keys)
    assert torch.equal(fast, games.Game.random_playout(game, state, keys))
    assert torch.equal(fast[3:4], game.random_playout(state[3], keys[3:4])), "batch independent"
