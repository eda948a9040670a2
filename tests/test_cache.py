"""The evaluation cache (azero/search/cache.py): its keys, and a search that reads it makes the same
choices as one that does not, with fewer network calls."""

from __future__ import annotations

import pytest
import torch

import games
from azero.search import PUCT, Gumbel, gumbel_noise, gumbel_search, new_tree, simulate
from azero.search import cache as cache_module
from azero.search.cache import CachedEvaluator, hash_positions
from azero.search.rollouts import RolloutEvaluator
from games.keyed_random import make_keys


class HashEvaluator:
    """A deterministic evaluator whose answer for a position depends on that position alone, to the
    last bit (a network's float32 arithmetic on a CPU may depend on the rest of its batch)."""

    uses_keys = False

    def __init__(self, game):
        self.game, self.positions = game, 0

    def __call__(self, states, keys=None, legal=None):
        legal = self.game.legal_mask(states) if legal is None else legal
        return self.evaluate_encoded(self.game.encode(states), legal, states.to_play)

    def evaluate_encoded(self, planes, legal, to_play):
        self.positions += planes.shape[0]
        key = hash_positions(planes, legal, to_play)
        actions = torch.arange(1, legal.shape[1] + 1, dtype=torch.int64)
        noise = ((key.unsqueeze(1) * (actions * 0x9E3779B97F4A7C15 % (1 << 61))) >> 40) & 0xFFFF
        weight = (noise.to(torch.float64) / 65536 + 0.05) * legal
        prior = (weight / weight.sum(dim=1, keepdim=True)).to(torch.float32)
        value = ((key >> 20) & 0xFFFF).to(torch.float64).div(32768).sub(1).to(torch.float32)
        return prior, value


def random_positions(game, count: int, plies: int, seed: int = 0):
    from games import sample_uniform_legal
    from games.keyed_random import fold

    state = game.initial_state(count)
    keys = make_keys(seed, count)
    for ply in range(plies):
        state = game.step(state, sample_uniform_legal(game.legal_mask(state), fold(keys, ply)))
    return state


@pytest.mark.parametrize("spec", ["gomoku:size=9,k=5", "go:size=7", "connect4", "othello:size=6"])
def test_the_compiled_and_torch_keys_agree_and_tell_positions_apart(spec):
    game = games.make_from_spec(spec)
    states = random_positions(game, 64, 6)
    planes, legal = game.encode(states), game.legal_mask(states)
    compiled = hash_positions(planes, legal, states.to_play)
    constants = cache_module._constants(planes[0].numel() + legal.shape[1] + 1)
    assert torch.equal(cache_module._hash.reference(planes, legal, states.to_play, constants), compiled)
    distinct_positions = {planes[i].numpy().tobytes() + legal[i].numpy().tobytes()
                          + states.to_play[i:i + 1].numpy().tobytes() for i in range(64)}
    assert len(set(compiled.tolist())) == len(distinct_positions)  # one key per position, equal ones shared
    other_player = hash_positions(planes, legal, 1 - states.to_play)
    assert not (other_player == compiled).any()


@pytest.mark.parametrize("rule", ["puct", "gumbel"])
def test_a_search_with_the_cache_makes_the_same_tree_with_fewer_evaluations(rule):
    game = games.make("gomoku", size=7, k=4)
    roots = random_positions(game, 8, 4)
    roots = roots.take(torch.tensor([0, 1, 2, 3, 0, 1, 2, 3]))  # the games of a batch share positions
    keys = make_keys(3, 8)

    def run(evaluator):
        if rule == "puct":
            tree = new_tree(game, roots, 257, keys, with_prior=True)
            simulate(tree, game, evaluator, PUCT(), 256, parallel=4)
            return tree.child_visits[:, 0], tree.child_value_sum[:, 0]
        tree = new_tree(game, roots, 65, keys, with_prior=True)
        result = gumbel_search(tree, game, evaluator, Gumbel(), 64, gumbel_noise(keys, game.num_actions),
                               considered=8, parallel=4)
        return result.tree.child_visits[:, 0], result.action

    plain = HashEvaluator(game)
    cached = CachedEvaluator(HashEvaluator(game), entries=1 << 14)
    first = run(plain)
    second = run(cached)
    assert all(torch.equal(a, b) for a, b in zip(first, second))
    assert cached.inner.positions < plain.positions and cached.hits > 0
    assert cached.lookups == plain.positions
    again = run(cached)  # the same searches again: every position from the table
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert cached.hit_rate() > 0.5


def test_new_weights_empty_the_table_and_random_evaluators_are_refused():
    game = games.make("tictactoe")
    weights = [0]
    cached = CachedEvaluator(HashEvaluator(game), entries=64, version=lambda: weights[0])
    states = random_positions(game, 4, 2)
    cached(states)
    cached(states)
    assert cached.hits == 4 and cached.inner.positions == 4
    weights[0] = 1  # a training step later
    cached(states)
    assert cached.hits == 4 and cached.inner.positions == 8
    with pytest.raises(ValueError, match="deterministic"):
        CachedEvaluator(RolloutEvaluator(game), entries=64)
    assert CachedEvaluator(HashEvaluator(game), entries=100).entries == 64  # a power of two


def test_self_play_with_the_cache_reports_its_hit_rate_and_memory():
    """search.cache_entries puts the table under self-play's network; the games of a batch begin
    alike, so their first positions come from it."""
    from azero.config import load_config
    from azero.network import PolicyValueNet
    from azero.selfplay import SelfPlay

    config = load_config(game="tictactoe", overrides=["selfplay.games=16", "search.simulations=8",
                                                      "search.cache_entries=1000"])
    game = games.make_from_spec(config.game.spec)
    torch.manual_seed(0)
    selfplay = SelfPlay(game, PolicyValueNet(config.network, game).eval(), config.search, config.selfplay, seed=0)
    assert isinstance(selfplay.searcher.evaluator, CachedEvaluator) and selfplay.searcher.evaluator.entries == 512
    _, stats = selfplay.run(60, progress=False)
    summary = stats.summary()
    assert 0.3 < summary["charts/cache_hit_rate"] < 1  # (16 games from one start: most early positions repeat)
    assert summary["charts/cache_megabytes"] == pytest.approx(512 * (8 + 4 * 10) / 2**20)
    plain = load_config(game="tictactoe", overrides=["selfplay.games=16"])
    assert "charts/cache_hit_rate" not in SelfPlay(game, PolicyValueNet(plain.network, game).eval(), plain.search,
                                                   plain.selfplay, seed=0).run(20, progress=False)[1].summary()
