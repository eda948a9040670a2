"""Nim with one pile, take 1..3: rules, both variants, and the known theory."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import games
from games import GameError, IllegalActionError


def with_chips(game, chips: list[int], to_play: int = 0):
    """A batch of unfinished positions with the given chips left. chips: len B, each >= 1."""
    start = game.initial_state(len(chips))
    return dataclasses.replace(
        start,
        chips=torch.tensor(chips, dtype=torch.long),
        to_play=torch.full((len(chips),), to_play, dtype=torch.long),
    )


def play(game, state, moves: str):
    """Play moves written as text ("2", "3", ...) in a one-game state."""
    for move in moves:
        state = game.step(state, torch.tensor([game.parse_action(move)]))
    return state


def solve(game, max_chips: int) -> list[bool]:
    """Whether the player to move wins with perfect play, for 0..max_chips chips.

    Every position 1..max_chips is expanded by every legal action in one `step` call;
    then a retrograde pass in increasing chips reads the children's values.
    """
    chips = list(range(1, max_chips + 1))
    parents = with_chips(game, chips)
    parent, action = game.legal_mask(parents).nonzero(as_tuple=True)
    children = game.step(parents[parent], action)
    # The mover is the first player (to_play 0), so a result of +1 is the mover's win.
    mover_won = children.done & (game.result(children) > 0)
    wins = [False] * (max_chips + 1)  # 0 chips: nobody is to move; never read
    for n in chips:
        rows = (parent == n - 1).nonzero().flatten().tolist()
        wins[n] = any(
            bool(mover_won[r]) or (not bool(children.done[r]) and not wins[int(children.chips[r])]) for r in rows
        )
    return wins


def test_legal_actions_shrink_near_the_end():
    game = games.make("nim", pile=15)
    s = with_chips(game, [15, 3, 2, 1])
    assert game.legal_mask(s).tolist() == [
        [True, True, True],
        [True, True, True],
        [True, True, False],
        [True, False, False],
    ]
    with pytest.raises(IllegalActionError, match="only 2 chips left"):
        game.step(s, torch.tensor([0, 0, 2, 0]))


@pytest.mark.parametrize("misere, winner", [(False, 1), (True, -1)])
def test_who_takes_the_last_chip(misere, winner):
    game = games.make("nim", pile=5, misere=misere)
    s = play(game, game.initial_state(1), "22")
    assert not bool(s.done[0]) and float(game.result(s)[0]) == 0
    s = play(game, s, "1")  # the first player takes the last chip
    assert bool(s.done[0]) and int(s.chips[0]) == 0
    assert float(game.result(s)[0]) == winner
    assert not game.legal_mask(s).any()


@pytest.mark.parametrize("misere, lost_remainder", [(False, 0), (True, 1)])
def test_theory_positions_lost_for_the_player_to_move(misere, lost_remainder):
    game = games.make("nim", pile=20, misere=misere)
    wins = solve(game, 20)
    lost = [n for n in range(1, 21) if not wins[n]]
    assert lost == [n for n in range(1, 21) if n % 4 == lost_remainder]


def test_one_chip_pile():
    game = games.make("nim", pile=1)
    s = game.initial_state(2)
    assert game.legal_mask(s).tolist() == [[True, False, False]] * 2
    s = game.step(s, torch.tensor([0, 0]))
    assert game.result(s).tolist() == [1.0, 1.0]


def test_encode_is_one_hot_chips_and_a_misere_flag():
    normal, misere = games.make("nim", pile=7), games.make_from_spec("nim:pile=7,misere=true")
    s = play(normal, normal.initial_state(1), "2")
    x = normal.encode(s)
    assert x.shape == (1, 2, 1, 8) and normal.board_shape == (1, 8)
    assert x[0, 0, 0].tolist() == [0, 0, 0, 0, 0, 1, 0, 0]
    assert x[0, 1].sum() == 0
    assert bool((misere.encode(misere.initial_state(1))[0, 1] == 1).all())


def test_text():
    game = games.make("nim", pile=7)
    assert [game.format_action(a) for a in range(3)] == ["1", "2", "3"]
    for bad in ("0", "4", "two", ""):
        with pytest.raises(GameError, match="chips to take, 1..3"):
            game.parse_action(bad)
    assert game.render(game.initial_state(1)).splitlines()[-1] == "pile: 7 chips, first player to move"
    s = play(game, game.initial_state(1), "33")
    assert game.render(s).splitlines()[-1] == "pile: 1 chip, first player to move"
    s = play(game, s, "1")
    assert game.render(s).splitlines()[-1] == "pile: 0 chips, first player won"


def test_options_are_validated():
    assert games.make("nim").spec == "nim:pile=15,misere=false"
    assert games.make_from_spec("nim:pile=7,misere=true").misere is True
    for bad in ({"pile": 0}, {"pile": 101}, {"misere": "maybe"}, {"pile": 2.5}):
        with pytest.raises(GameError, match="nim: option"):
            games.make("nim", **bad)
