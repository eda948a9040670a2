"""Every search and training constant has bounds, named in its error, and the search's move is
legal whatever its arithmetic gives (NaN or infinite scores, in the compiled loops and in torch).
"""

from __future__ import annotations

import dataclasses
import math
import typing

import pytest
import torch

import games
from azero.config import Config, ConfigError, load_config
from azero.errors import UserError
from azero.players import REGISTRY, make
from azero.search import PUCT, UCB1, Gumbel, choose, gumbel_noise, gumbel_search, new_tree, search, simulate
from games import kernels
from games.keyed_random import make_keys

NUMBERS = (int, float)


def _numeric_fields():
    for section in dataclasses.fields(Config):
        cls = typing.get_type_hints(Config)[section.name]
        kinds = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if kinds[f.name] in NUMBERS:
                yield f"{section.name}.{f.name}", f


@pytest.mark.parametrize("name, field", list(_numeric_fields()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_numeric_config_value_has_both_bounds(name, field):
    """A new number in the config schema without a lower and an upper bound fails here."""
    meta = field.metadata or {}
    assert meta.get("low") is not None and meta.get("high") is not None, f"{name} has no bounds"
    assert math.isfinite(meta["high"]), name


def _numeric_player_options():
    for entry in REGISTRY.values():
        for key, option in entry.options.items():
            if option.kind in NUMBERS:
                yield f"{entry.name}:{key}", option
        if entry.argument is not None and entry.argument.kind in NUMBERS:
            yield f"{entry.name}:argument", entry.argument


@pytest.mark.parametrize("name, option", list(_numeric_player_options()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_numeric_player_option_has_both_bounds(name, option):
    assert option.low is not None and option.high is not None, f"{name} has no bounds"
    assert math.isfinite(option.high), name


@pytest.mark.parametrize("setting", [
    "search.dirichlet_alpha=1e300", "search.c_visit=1e39", "search.c_scale=1e39", "search.c_init=1e39",
    "search.fpu_reduction=1e39", "search.forced_playouts=1e39", "train.learning_rate=1e30",
    "train.momentum=5", "train.decay_factor=1e9", "train.grad_clip=1e39", "train.ownership_weight=1e39",
    "selfplay.games=100000000000",
])
def test_an_absurd_config_value_is_refused_with_its_limit(setting):
    key = setting.partition("=")[0]
    with pytest.raises(ConfigError) as error:
        load_config(game="tictactoe", overrides=[setting])
    message = str(error.value)
    assert key in message and "out of range; allowed: " in message and "\n" not in message


@pytest.mark.parametrize("spec", ["uct:5:c=1e39", "uct:5:seed=-1", "uct:5:seed=99999999999999"])
def test_an_absurd_player_option_is_refused_with_its_limit(spec):
    game = games.make("tictactoe")
    with pytest.raises(UserError, match="out of range; allowed: "):
        make(spec, game)


@pytest.mark.parametrize("setting", ["search.dirichlet_alpha=1000", "search.c_visit=10000", "search.c_scale=100",
                                     "search.c_init=100", "train.learning_rate=10"])
def test_the_largest_allowed_values_are_accepted(setting):
    load_config(game="tictactoe", overrides=[setting])


def test_the_largest_allowed_noise_is_finite():
    """Dirichlet noise at the largest concentration allowed is a distribution (not NaN)."""
    import numpy as np

    from azero.network_search import add_dirichlet_noise
    from azero.search.settings import SearchSettings

    high = next(f for f in dataclasses.fields(SearchSettings) if f.name == "dirichlet_alpha").metadata["high"]
    legal = torch.ones(4, 9, dtype=torch.bool)
    noisy = add_dirichlet_noise(torch.full((4, 9), 1 / 9), legal, high, 0.25, np.random.default_rng(0))
    assert bool(torch.isfinite(noisy).all()) and torch.allclose(noisy.sum(dim=1), torch.ones(4))


class BrokenEvaluator:
    """A network whose weights went NaN: every prior and value is NaN."""

    uses_keys = False

    def __init__(self, game, prior: bool = True):
        self.game, self.prior = game, prior

    def __call__(self, states, keys=None, legal=None):
        value = torch.full((states.batch_size,), math.nan)
        if not self.prior:
            return None, value
        return torch.full((states.batch_size, self.game.num_actions), math.nan), value


@pytest.fixture(params=["compiled", "torch"])
def form(request):
    """The compiled loops, then their torch twins (what a GPU or a machine without numba runs)."""
    if request.param == "compiled" and not kernels.AVAILABLE:
        pytest.skip("numba is not installed")
    saved = kernels.AVAILABLE
    kernels.AVAILABLE = request.param == "compiled"
    yield request.param
    kernels.AVAILABLE = saved


def _roots(game):
    """Three tic-tac-toe positions whose first squares are taken (action 0 illegal in all)."""
    states = game.step(game.initial_state(3), torch.tensor([0, 0, 0]))
    return game.step(states, torch.tensor([1, 4, 8]))


def _assert_legal_search(tree, legal, action):
    visited = tree.root_visits() > 0
    assert not bool((visited & ~legal).any()), "the search walked an illegal move"
    assert bool(legal.gather(1, action.view(-1, 1)).all()), f"illegal moves chosen: {action.tolist()}"


@pytest.mark.parametrize("criterion", ["robust", "max", "secure", "max-robust"])
def test_non_finite_values_still_give_legal_moves_with_ucb1(form, criterion):
    game = games.make("tictactoe")
    roots = _roots(game)
    legal = game.legal_mask(roots)
    tree = search(game, roots, BrokenEvaluator(game, prior=False), UCB1(), 40, make_keys(0, 3))
    action = choose(criterion, tree.root_visits(), tree.child_value_sum[:, 0], c=1e30)
    _assert_legal_search(tree, legal, action)


def test_non_finite_priors_and_values_still_give_legal_moves_with_puct(form):
    game = games.make("tictactoe")
    roots = _roots(game)
    legal = game.legal_mask(roots)
    evaluator = BrokenEvaluator(game)
    prior, _ = evaluator(roots)
    tree = new_tree(game, roots, 41, make_keys(0, 3), root_prior=prior)
    simulate(tree, game, evaluator, PUCT(), 40)
    _assert_legal_search(tree, legal, choose("robust", tree.root_visits(), tree.child_value_sum[:, 0]))


def test_non_finite_priors_and_values_still_give_legal_moves_with_gumbel(form):
    game = games.make("tictactoe")
    roots = _roots(game)
    legal = game.legal_mask(roots)
    evaluator = BrokenEvaluator(game)
    prior, value = evaluator(roots)
    tree = new_tree(game, roots, 41, make_keys(0, 3), root_prior=prior, root_value=value)
    result = gumbel_search(tree, game, evaluator, Gumbel(), 40, gumbel_noise(make_keys(1, 3), game.num_actions),
                           considered=4)
    _assert_legal_search(result.tree, legal, result.action)


@pytest.mark.parametrize("criterion", ["robust", "max", "secure", "max-robust"])
def test_the_final_choice_overflowing_to_infinity_is_still_a_visited_move(criterion):
    """choose's arithmetic may overflow (secure's bound with a huge c is -inf for every move):
    the move is still one of the visited, never the illegal first action."""
    visits = torch.tensor([[0.0, 3.0, 5.0, 0.0], [0.0, 0.0, 0.0, 2.0]])
    value_sum = torch.tensor([[0.0, 1.0, math.inf, 0.0], [0.0, 0.0, 0.0, -math.inf]])
    action = choose(criterion, visits, value_sum, c=1e39)
    assert bool((visits.gather(1, action.view(-1, 1)) > 0).all()), action.tolist()
