"""One conformance test of the game contract (games/base.py), run over every game and option set."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import games
from game_specs import GAME_SPECS
from games import NO_ACTION, GameError, IllegalActionError, State


def random_walk(game, batch, seed, max_plies=2000):
    """Random batched playouts; yields (state, action) before each step until all games end."""
    gen = torch.Generator().manual_seed(seed)
    state = game.initial_state(batch)
    for _ in range(max_plies):
        if bool(state.done.all()):
            return
        action = games.sample_uniform_legal(game.legal_mask(state), gen)
        yield state, action
        state = game.step(state, action)
    raise AssertionError(f"{game.spec}: random games did not end within {max_plies} plies")


@pytest.fixture(params=GAME_SPECS)
def game(request):
    return games.make_from_spec(request.param)


def test_registry_knows_every_spec():
    listed = {games.parse_spec(s)[0] for s in GAME_SPECS}
    assert listed == set(games.names()), "every registered game is in GAME_SPECS"


def test_shapes_and_dtypes(game):
    h, w = game.board_shape
    assert isinstance(game.num_actions, int) and game.num_actions >= 2
    assert game.symmetries[0].name == "identity"
    s = game.initial_state(batch=5)
    assert s.batch_size == 5
    for f in dataclasses.fields(s):
        assert getattr(s, f.name).shape[0] == 5, f.name
    assert s.to_play.dtype == torch.long and s.move_number.dtype == torch.long
    assert s.done.dtype == torch.bool and s.winner.dtype == torch.int8
    mask = game.legal_mask(s)
    assert mask.dtype == torch.bool and mask.shape == (5, game.num_actions)
    x = game.encode(s)
    assert x.dtype == torch.float32 and x.shape == (5, game.num_planes, h, w)
    assert game.result(s).dtype == torch.float32
    assert torch.equal(game.to_play(s), torch.zeros(5, dtype=torch.long))
    assert isinstance(game.render(s, 4), str)


def test_random_playouts_keep_the_invariants(game):
    steps = 0
    for state, action in random_walk(game, batch=12, seed=1):
        mask = game.legal_mask(state)
        assert torch.equal(mask.any(dim=1), ~state.done), "mask empty exactly when the game is over"
        assert torch.all(game.result(state)[~state.done] == 0), "results are zero until the end"
        assert set(game.result(state).tolist()) <= {-1.0, 0.0, 1.0}
        assert torch.all((state.to_play == 0) | (state.to_play == 1))
        new = game.step(state, action)
        # finished games step nowhere
        assert new[state.done].equal(state[state.done])
        # each game steps as it would alone (batch independence)
        if steps % 7 == 0:
            for i in range(state.batch_size):
                assert game.step(state[i], action[i : i + 1]).equal(new[i])
        assert torch.all(new.move_number[~state.done] == state.move_number[~state.done] + 1)
        steps += 1
    assert steps > 0


def test_finished_games_stay_finished_and_refuse_moves(game):
    *_, (state, action) = random_walk(game, batch=3, seed=2)
    final = game.step(state, action)
    assert bool(final.done.all())
    assert not game.legal_mask(final).any()
    again = game.step(final, torch.full((3,), NO_ACTION))
    assert again.equal(final)
    with pytest.raises(IllegalActionError, match="already over"):
        game.step(final, torch.zeros(3, dtype=torch.long))


def test_illegal_action_is_an_error_naming_game_action_and_index(game):
    s = game.initial_state(batch=3)
    legal = game.legal_mask(s)
    illegal = (~legal[2]).nonzero().flatten()
    actions = legal.float().argmax(dim=1)
    if len(illegal):
        actions[2] = illegal[0]
        with pytest.raises(IllegalActionError, match=rf"{game.name}: action {int(illegal[0])} .* game 2 of the batch"):
            game.step(s, actions)
    actions = legal.float().argmax(dim=1)
    actions[1] = game.num_actions
    with pytest.raises(IllegalActionError, match="game 1 of the batch"):
        game.step(s, actions)
    actions[1] = NO_ACTION
    with pytest.raises(IllegalActionError, match="no move given"):
        game.step(s, actions)
    with pytest.raises(GameError, match="actions for a batch of 3"):
        game.step(s, actions[:2])


def test_action_text_round_trips(game):
    for a in range(game.num_actions):
        text = game.format_action(a)
        assert game.parse_action(text) == a, text
        assert game.parse_action(text.upper()) == a
    with pytest.raises(GameError):
        game.parse_action("zz99")
    with pytest.raises(GameError):
        game.parse_action("")


def test_symmetries_commute_with_step_encode_and_mask(game):
    for state, action in random_walk(game, batch=6, seed=3):
        if int(state.move_number.max()) > 12:
            break
        new = game.step(state, action)
        for sym in game.symmetries:
            moved = game.transform_state(state, sym)
            assert torch.equal(game.legal_mask(moved), sym.policy(game.legal_mask(state)))
            assert torch.equal(game.encode(moved), sym.planes(game.encode(state)))
            stepped = game.step(moved, sym.action(action))
            assert stepped.equal(game.transform_state(new, sym)), sym.name
            # policy and action agree: the probability of a moves to the image of a
            p = torch.rand(game.num_actions)
            assert torch.equal(sym.policy(p)[sym.action(torch.arange(game.num_actions))], p)


def test_symmetries_are_distinct_and_form_a_group(game):
    perms = [tuple(sym.action_perm.tolist()) for sym in game.symmetries]
    assert len(set(perms)) == len(perms), "no transform is listed twice"
    if len(perms) > 1:
        assert tuple(range(game.num_actions)) in perms
        composed = {tuple(torch.tensor(a)[torch.tensor(b)].tolist()) for a in perms for b in perms}
        assert composed == set(perms), "closed under composition"


def test_random_playout_gives_results_of_finished_games(game):
    gen = torch.Generator().manual_seed(4)
    s = game.initial_state(batch=64)
    result = game.random_playout(s, gen)
    assert result.shape == (64,) and result.dtype == torch.float32
    assert set(result.tolist()) <= {-1.0, 0.0, 1.0}
    *_, (state, action) = random_walk(game, batch=4, seed=5)
    final = game.step(state, action)
    assert torch.equal(game.random_playout(final, gen), game.result(final))


def test_state_batch_plumbing(game):
    *_, (state, _) = random_walk(game, batch=4, seed=6)
    parts = [state[i] for i in range(4)]
    assert State.cat(parts).equal(state)
    mask = torch.tensor([True, False, True, False])
    other = game.initial_state(4)
    mixed = State.where(mask, state, other)
    assert mixed[0].equal(state[0]) and mixed[1].equal(other[1])
    copy = other.clone()
    copy.put_(mask.nonzero().squeeze(1), state[mask])
    assert copy.equal(mixed)


def test_bad_options_are_clear_errors(game):
    with pytest.raises(GameError, match="unknown option"):
        games.make(game.name, no_such_option=1)
    with pytest.raises(GameError, match="unknown game"):
        games.make("chess")
    assert games.make_from_spec(game.spec) == game


def test_random_orders_are_permutations_drawn_evenly_and_per_game():
    """The cell orders of random playouts: each row a permutation, all orders of 3 cells about
    equally likely, and a game's order depends only on its own key (not on the batch)."""
    from games.keyed_random import make_keys, random_orders

    keys = make_keys(7, 60_000)
    orders = random_orders(keys, 60_000, 3)
    assert torch.equal(orders.sort(dim=1).values, torch.arange(3).expand(60_000, 3))
    code = orders[:, 0] * 9 + orders[:, 1] * 3 + orders[:, 2]
    counts = torch.bincount(code, minlength=27)[code.unique()]
    assert len(counts) == 6 and (counts - 10_000).abs().max() < 400  # 4 standard deviations
    big = random_orders(keys[:100], 100, 225)
    assert torch.equal(big[37], random_orders(keys[37:38], 1, 225)[0])
    assert len({tuple(row.tolist()) for row in big}) == 100
    generator_orders = random_orders(torch.Generator().manual_seed(0), 50, 64)
    assert torch.equal(generator_orders.sort(dim=1).values, torch.arange(64).expand(50, 64))
