"""Gumbel AlphaZero (search/gumbel.py, selection.Gumbel): the schedule, sigma, the mixed value
and the deterministic selection by hand; a whole search against a one-simulation-at-a-time
reference; the move and the target's properties; batch independence; self-play, the az:
player and the config."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import games
from azero.checkpoint import atomic_save, network_checkpoint
from azero.config import ConfigError, config_from_dict, load_config
from azero.errors import UserError
from azero.network import NetworkConfig, PolicyValueNet
from azero.network_search import NetworkSearch
from azero.players import make
from azero.search import Gumbel, gumbel_noise, gumbel_search, new_tree
from azero.search.gumbel import _schedule_table, visit_schedule
from azero.search.selection import NodeView, completed_q, mixed_value, sigma
from azero.selfplay import SelfPlay
from games import State
from games.keyed_random import make_keys
from networks import small_net

TTT = games.make("tictactoe")


# -- the schedule, sigma, the mixed value and the selection by hand ------------------------------------


@pytest.mark.parametrize("considered, simulations, expected", [
    # m = 4, n = 8: 2 phases; 8 // (2 * 4) = 1 visit each for the 4, then 8 // (2 * 2) = 2 for the best 2
    (4, 8, (0, 0, 0, 0, 1, 1, 2, 2)),
    # fewer simulations than moves: the first n of the Gumbel-top-k order, once each
    (16, 8, (0,) * 8),
    # m = 2, n = 5: 1 phase; 5 // 2 = 2 rounds of both, then the last simulation goes on
    (2, 5, (0, 0, 1, 1, 2)),
    # m = 3: ceil(log2 3) = 2 phases; 10 // 6 = 1 round of 3, 10 // 4 = 2 rounds of 2, and on
    (3, 10, (0, 0, 0, 1, 1, 2, 2, 3, 3, 4)),
    # m = 8, n = 32: 3 phases; 32 // 24 = 1 round of 8, 32 // 12 = 2 rounds of 4, 32 // 6 = 5 rounds
    # of 2, then the last 2 take the 6 simulations left
    (8, 32, (0,) * 8 + (1,) * 4 + (2,) * 4 + tuple(v for level in range(3, 11) for v in (level, level))),
    # m = 16, n = 64: 4 phases of 64 // 4 = 16 simulations: 16 x 1, 8 x 2, 4 x 4, 2 x 8
    (16, 64, (0,) * 16 + (1,) * 8 + (2,) * 8 + tuple(v for level in range(3, 7) for v in (level,) * 4)
     + tuple(v for level in range(7, 15) for v in (level, level))),
    (1, 4, (0, 1, 2, 3)),  # a single move takes every simulation
])
def test_sequential_halving_schedule_by_hand(considered, simulations, expected):
    assert visit_schedule(considered, simulations) == expected


def listed_schedule_table(considered, simulations):
    """_schedule_table the plain way: rows from visit_schedule, runs counted back from each row's end."""
    rows = [visit_schedule(c, simulations) for c in range(considered + 1)]
    runs = [[1] * simulations for _ in rows]
    for row, run in zip(rows, runs):
        for k in range(simulations - 2, -1, -1):
            if row[k + 1] == row[k]:
                run[k] = run[k + 1] + 1
    return torch.tensor(rows, dtype=torch.float32), torch.tensor(runs, dtype=torch.long)


@pytest.mark.parametrize("simulations", [1, 2, 3, 7, 8, 50, 200])
@pytest.mark.parametrize("considered", [1, 2, 3, 4, 5, 7, 16])
def test_the_schedule_table_is_built_with_tensors_as_visit_schedule_lists_it(monkeypatch, considered, simulations):
    """The table is built a phase at a time with tensors (a Python list of visit_schedule's per
    row was rows x simulations of Python work: az:...:considered=1000000000 hung), and is the
    same table; its cache keeps a few."""
    import azero.search.gumbel as module

    expected = listed_schedule_table(considered, simulations)
    monkeypatch.setattr(module, "visit_schedule", lambda *args: pytest.fail("the table lists visit_schedule"))
    table, runs = module._build_schedule_table(considered, simulations)
    assert table.dtype == torch.float32 and runs.dtype == torch.long
    assert torch.equal(table, expected[0]) and torch.equal(runs, expected[1])
    assert module._cached_schedule_table.cache_info().maxsize == 8


def test_only_small_schedule_tables_are_kept_after_their_search(monkeypatch):
    """An analysis request of millions of simulations built a table of gigabytes, and the
    cache kept eight of them; now only tables up to CACHED_TABLE_ENTRIES are kept."""
    import azero.search.gumbel as module

    monkeypatch.setattr(module, "CACHED_TABLE_ENTRIES", 100)
    module._cached_schedule_table.cache_clear()
    big = _schedule_table(4, 50)  # 5 x 50 entries
    assert module._cached_schedule_table.cache_info().currsize == 0
    assert torch.equal(big[0], listed_schedule_table(4, 50)[0])
    assert _schedule_table(4, 10) is _schedule_table(4, 10)  # 5 x 10: kept
    assert module._cached_schedule_table.cache_info().currsize == 1
    module._cached_schedule_table.cache_clear()


@pytest.mark.parametrize("considered, simulations, start, stop", [
    (16, 200, 0, 200), (16, 200, 37, 101), (5, 50, 49, 50), (1, 30, 3, 9), (2, 7, 0, 3), (7, 1000, 640, 1000)])
def test_a_window_of_the_schedule_table_is_those_columns_of_the_whole(considered, simulations, start, stop):
    from azero.search.gumbel import _build_schedule_table

    table, runs = _build_schedule_table(considered, simulations)
    part, part_runs = _build_schedule_table(considered, simulations, start, stop)
    assert torch.equal(part, table[:, start:stop]) and torch.equal(part_runs, runs[:, start:stop])


def test_a_search_holding_its_schedule_a_window_at_a_time_is_the_same_search(monkeypatch):
    """A search of millions of simulations built its whole schedule table (gigabytes) before its
    first simulation, even with a deadline; now it holds SCHEDULE_WINDOW columns at a time."""
    import azero.search.gumbel as gumbel_module

    game = games.make("gomoku", size=5, k=4)
    searcher = NetworkSearch(game, small_net(game), algorithm="gumbel")
    states, keys = game.initial_state(3), make_keys(5, 3)
    whole = searcher.gumbel_search(states, keys, 100, noise=True)
    built = []
    monkeypatch.setattr(gumbel_module, "CACHED_TABLE_ENTRIES", 10)
    monkeypatch.setattr(gumbel_module, "SCHEDULE_WINDOW", 40)

    def columns(considered, simulations, start, stop):
        built.append((start, stop))
        return gumbel_module._build_schedule_table(considered, simulations, start, stop)

    monkeypatch.setattr(gumbel_module, "schedule_columns", columns)
    windowed = searcher.gumbel_search(states, keys, 100, noise=True)
    assert built == [(0, 40), (32, 72), (64, 100)]  # chunks of 32 simulations
    assert torch.equal(windowed.tree.visits, whole.tree.visits) and torch.equal(windowed.action, whole.action)
    assert torch.allclose(windowed.policy, whole.policy)


def test_a_gumbel_tree_that_starts_small_grows_and_searches_as_a_whole_one(monkeypatch):
    """A Gumbel search that may stop early, of more nodes than INITIAL_TREE_BYTES holds, starts
    there and grows (an analysis request with simulations=1000000 and seconds=0.01 allocated the
    whole tree first); the search is the same. One without a stop gets its whole tree at once."""
    import azero.search.run as search_module

    game = games.make("gomoku", size=5, k=4)
    searcher = NetworkSearch(game, small_net(game), algorithm="gumbel")
    states, keys = game.initial_state(2), make_keys(3, 2)
    whole = searcher.gumbel_search(states, keys, 40, noise=True, should_stop=lambda: False)
    assert whole.tree.capacity == 41
    import azero.search.tree as tree_module

    sizes = []

    def grow(tree, capacity):
        sizes.append((tree.capacity, capacity))
        return search_module.grow(tree, capacity)

    monkeypatch.setattr(tree_module, "grow", grow)  # (the growth of search.tree.room_for)
    monkeypatch.setattr(search_module, "INITIAL_TREE_BYTES", 1)  # start at MIN_NODES, then grow
    monkeypatch.setattr(search_module, "MIN_NODES", 8)
    assert searcher.gumbel_search(states, keys, 40, noise=True).tree.capacity == 41  # no deadline: all at once
    assert sizes == []
    grown = searcher.gumbel_search(states, keys, 40, noise=True, should_stop=lambda: False)  # (a deadline's kind)
    assert sizes == [(8, 40), (40, 41)]  # 32 simulations a chunk, each adding at most a node
    assert grown.tree.capacity == 41 and torch.equal(grown.tree.visits, whole.tree.visits)
    assert torch.equal(grown.action, whole.action) and torch.allclose(grown.policy, whole.policy)


def test_sigma_is_monotone_in_q_and_scales_with_visits_and_c_scale():
    q = torch.linspace(-1, 1, 21).unsqueeze(0)
    visits = torch.zeros(1, 21)
    visits[0, 3] = 7.0  # max visits 7
    s = sigma(q, visits, 50.0, 1.0)
    assert torch.all(s[0, 1:] > s[0, :-1])
    assert s[0, 0] == 0.0 and s[0, -1] == pytest.approx(57.0) and s[0, 10] == pytest.approx(28.5)  # loss, win, draw
    assert torch.allclose(sigma(q, visits, 50.0, 0.1), 0.1 * s)
    assert torch.allclose(sigma(q, visits * 3, 50.0, 1.0), s * (50 + 21) / 57)
    assert torch.equal(sigma(q, visits, 0.0, 1.0)[0, -1], torch.tensor(7.0))


def test_rescaled_sigma_puts_the_legal_moves_q_on_0_to_1_by_hand():
    q = torch.tensor([[-0.2, 0.1, 0.05, 0.3], [0.02, 0.02, 0.02, 0.02]])
    legal = torch.tensor([[True, True, True, False], [True, True, False, True]])
    visits = torch.tensor([[4.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    s = sigma(q, visits, 50.0, 0.1, legal, rescale=True)
    # row 0: min -0.2, max 0.1 over the legal moves (the illegal 0.3 is not the max); scale (50 + 4) * 0.1
    assert torch.allclose(s[0, :3], 5.4 * torch.tensor([0.0, 1.0, 0.25 / 0.3]))
    assert torch.equal(s[1], torch.zeros(4))  # all equal: no preference, whatever their value
    # the point of it: values ten times closer together (a drawish node) weigh as much
    assert torch.allclose(sigma(0.1 * q + 0.3, visits, 50.0, 0.1, legal, rescale=True), s, atol=1e-5)
    assert not torch.allclose(sigma(0.1 * q + 0.3, visits, 50.0, 0.1), sigma(q, visits, 50.0, 0.1))
    with pytest.raises(ValueError, match="legal"):
        sigma(q, visits, 50.0, 0.1, rescale=True)


def test_rescaled_improved_policy_ignores_the_scale_and_offset_of_the_values():
    """With rescale_q the target depends on how the moves' values compare, not on their spread:
    a node whose values (visited Q and raw value) are a * v + b gives the same target."""
    prior, visits = [0.4, 0.3, 0.2, 0.1], [3.0, 2.0, 1.0, 0.0]
    value_sum, raw = np.array([0.6, -0.2, 0.3, 0.0]), 0.1  # q = 0.2, -0.1, 0.3; the last completed by v_mix
    rule = Gumbel(c_scale=0.1, rescale=True)
    target = rule.improved_policy(view(prior, visits, value_sum.tolist(), raw))
    for a, b in ((0.1, 0.0), (0.05, -0.5), (2.0, 0.1)):
        moved = rule.improved_policy(view(prior, visits, (a * value_sum + b * np.array(visits)).tolist(), a * raw + b))
        assert torch.allclose(moved, target, atol=1e-5)
    plain = Gumbel(c_scale=0.1)
    shrunk = plain.improved_policy(view(prior, visits, (0.1 * value_sum).tolist(), 0.1 * raw))
    assert not torch.allclose(shrunk, plain.improved_policy(view(prior, visits, value_sum.tolist(), raw)), atol=1e-3)
    # the best move by q (0.3, action 2) gains the most over its prior share
    assert int(torch.argmax(target[0] / torch.tensor(prior))) == 2


def test_mixed_value_and_completed_q_by_hand():
    prior = torch.tensor([[0.5, 0.2, 0.2, 0.1]])
    visits = torch.tensor([[2.0, 0.0, 1.0, 0.0]])
    value_sum = torch.tensor([[1.0, 0.0, -0.6, 0.0]])  # q = 0.5 and -0.6
    raw = torch.tensor([0.3])
    # (0.3 + 3 * (0.5 * 0.5 + 0.2 * -0.6) / 0.7) / (1 + 3)
    v_mix = (0.3 + 3 * (0.25 - 0.12) / 0.7) / 4
    assert float(mixed_value(raw, visits, value_sum, prior)) == pytest.approx(v_mix, abs=1e-6)
    assert torch.allclose(completed_q(raw, visits, value_sum, prior), torch.tensor([[0.5, v_mix, -0.6, v_mix]]))
    nothing = torch.zeros(1, 4)
    assert float(mixed_value(raw, nothing, nothing, prior)) == pytest.approx(0.3)  # no visits: the raw value


def view(prior, visits, value_sum, raw, legal=None) -> NodeView:
    prior, visits, value_sum = (torch.tensor([x], dtype=torch.float32) for x in (prior, visits, value_sum))
    legal = prior > 0 if legal is None else torch.tensor([legal])
    return NodeView(visits=visits.sum(1) + 1, q=torch.zeros(1), child_visits=visits, child_value_sum=value_sum,
                    prior=prior, legal=legal, uniform=None, raw_value=torch.tensor([raw]))


def test_interior_selection_by_hand():
    prior, visits, value_sum, raw = [0.5, 0.3, 0.2, 0.0], [3.0, 1.0, 0.0, 0.0], [-0.3, 0.4, 0.0, 0.0], -0.2
    rule = Gumbel()
    p = np.array(prior[:3])
    q_visited = np.array([-0.1, 0.4])
    v_mix = (raw + 4 * (p[:2] @ q_visited) / p[:2].sum()) / 5
    q = np.array([-0.1, 0.4, v_mix])
    logits = np.log(p) + (50 + 3) * (q + 1) / 2
    improved = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    node = view(prior, visits, value_sum, raw)
    assert torch.allclose(rule.improved_policy(node)[0, :3], torch.tensor(improved, dtype=torch.float32), atol=1e-6)
    assert rule.improved_policy(node)[0, 3] == 0.0  # illegal
    scores = improved - np.array(visits[:3]) / (1 + 4)
    assert int(rule.select(node)) == int(np.argmax(scores)) == 1


def test_interior_selection_makes_visits_follow_the_improved_policy():
    """With the values held fixed, the visit shares approach pi' (the paper's section 5)."""
    prior = [0.4, 0.3, 0.2, 0.1]
    q = np.array([0.0, 0.02, -0.02, 0.05])
    rule = Gumbel(c_visit=2.0, c_scale=1.0)
    visits = np.zeros(4)
    for _ in range(200):
        node = view(prior, visits.tolist(), (visits * q).tolist(), 0.0)
        visits[int(rule.select(node))] += 1
    target = rule.improved_policy(view(prior, visits.tolist(), (visits * q).tolist(), 0.0))[0].numpy()
    assert np.abs(visits / visits.sum() - target).max() < 0.01


# -- a whole search against a plain one-simulation-at-a-time reference ---------------------------------


def fake_evaluation(board: tuple, to_play: int, legal: list[bool]):
    """A deterministic fake network: prior and value (first player's view) from the position."""
    seed = 29
    for v in board:
        seed = (seed * 31 + v + 2) % 1_000_003
    rng = np.random.default_rng(seed + 7 * to_play)
    prior = np.where(legal, np.exp(1.5 * rng.normal(size=len(legal))), 0.0)
    return prior / max(prior.sum(), 1e-30), float(np.tanh(rng.normal()))


class FakeEvaluator:
    """The fake network as a batched evaluator."""

    uses_keys = False

    def __init__(self, game):
        self.game = game

    def __call__(self, states, keys=None, legal=None):
        legal = self.game.legal_mask(states)
        out = [fake_evaluation(tuple(states.board[i].flatten().tolist()), int(states.to_play[i]), legal[i].tolist())
               for i in range(states.batch_size)]
        return (torch.tensor(np.array([p for p, _ in out]), dtype=torch.float32),
                torch.tensor([v for _, v in out], dtype=torch.float32))


class Node:
    def __init__(self, game, state):
        self.state = state
        self.legal = game.legal_mask(state)[0].numpy()
        prior, value = fake_evaluation(tuple(state.board[0].flatten().tolist()), int(state.to_play[0]),
                                       self.legal.tolist())
        self.sign = 1.0 - 2.0 * int(state.to_play[0])  # first player's view -> the chooser's here
        self.prior, self.raw = prior, value * self.sign
        self.n, self.w = np.zeros(len(prior)), np.zeros(len(prior))  # per action: visits, value sums (chooser's view)
        self.children = {}

    def logits_plus_sigma(self, c_visit=50.0, c_scale=1.0, rescale=False):
        visited = self.n > 0
        q = np.divide(self.w, self.n, out=np.zeros_like(self.w), where=visited)
        total = self.n.sum()
        weighted = (self.prior[visited] @ q[visited]) / self.prior[visited].sum() if visited.any() else 0.0
        completed = np.where(visited, q, (self.raw + total * weighted) / (1 + total))
        if rescale:  # min-max over the legal moves' completed Q
            low, high = completed[self.legal].min(), completed[self.legal].max()
            q_hat = (completed - low) / max(high - low, 1e-8)
        else:
            q_hat = (completed + 1) / 2
        out = np.log(np.maximum(self.prior, 1e-300)) + (c_visit + self.n.max()) * c_scale * q_hat
        return np.where(self.legal, out, -np.inf)

    def improved_policy(self, **sigma):
        logits = self.logits_plus_sigma(**sigma)
        e = np.exp(logits - logits.max())
        return e / e.sum()

    def interior_action(self, **sigma):
        share = self.n / (1 + self.n.sum())
        return int(np.argmax(np.where(self.legal, self.improved_policy(**sigma) - share, -np.inf)))


def scalar_gumbel(game, root_state, simulations, considered, gumbel, **sigma):
    """Gumbel AlphaZero one simulation at a time with the fake network, in float64: the hand calculation
    (sigma: Node.logits_plus_sigma's c_scale and rescale). Returns (root visits, move, improved policy)."""
    root = Node(game, root_state)
    schedule = visit_schedule(min(considered, int(root.legal.sum())), simulations)
    for k in range(simulations):
        candidates = root.legal & (root.n == schedule[k])
        action = int(np.argmax(np.where(candidates, gumbel + root.logits_plus_sigma(**sigma), -np.inf)))
        node, path = root, []
        while True:
            path.append((node, action))
            child = node.children.get(action)
            if child is None:
                state = game.step(node.state, torch.tensor([action]))
                child = node.children[action] = Node(game, state)
                value = float(game.result(state)[0]) if bool(state.done[0]) else child.raw * child.sign
                break
            if bool(child.state.done[0]):
                value = float(game.result(child.state)[0])
                break
            node, action = child, child.interior_action(**sigma)
        for visited, a in path:  # value: the first player's view
            visited.n[a] += 1
            visited.w[a] += value * visited.sign
    most = root.legal & (root.n == root.n[root.legal].max())
    move = int(np.argmax(np.where(most, gumbel + root.logits_plus_sigma(**sigma), -np.inf)))
    return root.n, move, root.improved_policy(**sigma)


@pytest.mark.parametrize("parallel, rescale", [(1, False), (3, False), (16, False), (1, True)])
@pytest.mark.parametrize("moves, considered, simulations", [
    ([], 4, 8), ([], 16, 24), (["b2"], 3, 10), (["a1", "b2", "c3"], 2, 7), (["a1", "b2", "c3", "a3"], 16, 12),
])
def test_search_matches_the_reference(moves, considered, simulations, parallel, rescale):
    """The search, one simulation at a time or a round's simulations together (at most
    `parallel`), against the reference that chooses each root move just before its simulation;
    with rescaled Q (and mctx's c_scale 0.1) one at a time."""
    state = TTT.initial_state(1)
    for m in moves:
        state = TTT.step(state, torch.tensor([TTT.parse_action(m)]))
    evaluator = FakeEvaluator(TTT)
    prior, value = evaluator(state)
    g = gumbel_noise(make_keys(len(moves), 1), TTT.num_actions)
    tree = new_tree(TTT, state, simulations + 1, make_keys(0, 1), root_prior=prior, root_value=value)
    sigma = dict(c_scale=0.1, rescale=True) if rescale else {}
    result = gumbel_search(tree, TTT, evaluator, Gumbel(**sigma), simulations, g, considered=considered,
                           parallel=parallel)
    visits, move, policy = scalar_gumbel(TTT, state, simulations, considered, g[0].double().numpy(), **sigma)
    assert tree.root_visits()[0].tolist() == visits.tolist()
    assert int(result.action) == move
    assert torch.allclose(result.policy[0], torch.tensor(policy, dtype=torch.float32), atol=1e-5)


# -- the move and the target -------------------------------------------------------------------------


class UniformEvaluator:
    """No knowledge: uniform priors (the engine's default) and value 0."""

    uses_keys = False

    def __call__(self, states, keys=None, legal=None):
        return None, torch.zeros(states.batch_size)


@pytest.mark.parametrize("board, to_play, simulations, best", [
    ("X X . / O O . / . . .", 0, 8, "c3"),     # X wins at once
    ("X X . / O . . / . . O", 1, 48, "c3"),    # O must block: every other move loses next move
])
def test_the_search_finds_the_win_and_the_block_without_knowledge(board, to_play, simulations, best):
    from boards import position

    state = position(TTT, board.replace("/", "\n"), to_play=to_play)
    tree = new_tree(TTT, state, simulations + 1, make_keys(0, 1), root_value=torch.zeros(1))
    result = gumbel_search(tree, TTT, UniformEvaluator(), Gumbel(), simulations, torch.zeros(1, 9), considered=16)
    assert TTT.format_action(int(result.action)) == best
    assert int(result.policy[0].argmax()) == TTT.parse_action(best)



def searched(considered, simulations, batch=4, seed=0):
    game = games.make("gomoku", size=5, k=4)
    states = game.initial_state(batch)
    states = game.step(states, torch.arange(batch) * 3)  # four different positions
    evaluator = FakeEvaluator(game)
    prior, value = evaluator(states)
    keys = make_keys(seed, batch)
    g = gumbel_noise(keys, game.num_actions)
    tree = new_tree(game, states, simulations + 1, keys, root_prior=prior, root_value=value)
    return tree, gumbel_search(tree, game, evaluator, Gumbel(), simulations, g, considered=considered), g, prior


def by_hand_logits(tree, prior, b, c_visit=50.0, c_scale=1.0):
    """logits + sigma(completed Q) of root b, from the tree's root statistics, in float64."""
    n = tree.child_visits[b, 0].double()
    w = tree.child_value_sum[b, 0].double()
    p = prior[b].double()
    legal = tree.legal[b, 0]
    visited = n > 0
    q = torch.where(visited, w / n.clamp(min=1), torch.zeros_like(w))
    raw = float(tree.raw_value[b, 0] * tree.q_sign[b, 0])
    v_mix = (raw + n.sum() * (p[visited] @ q[visited]) / p[visited].sum()) / (1 + n.sum())
    completed = torch.where(visited, q, v_mix)
    out = torch.log(p) + (c_visit + n.max()) * c_scale * (completed + 1) / 2
    return out.masked_fill(~legal, -math.inf)


@pytest.mark.parametrize("considered, simulations", [(4, 8), (8, 32), (16, 64), (16, 16)])
def test_the_move_is_the_best_of_the_most_visited_by_gumbel_plus_logits_plus_sigma(considered, simulations):
    tree, result, g, prior = searched(considered, simulations)
    for b in range(tree.batch_size):
        n = tree.child_visits[b, 0]
        # the visits are the schedule's: as many moves went past each visit count as it lists
        schedule = visit_schedule(considered, simulations)
        reached = [int((n > level).sum()) for level in range(int(n.max()))]
        assert reached == [schedule.count(level) for level in range(max(schedule) + 1)]
        most = n == n.max()
        score = g[b].double() + by_hand_logits(tree, prior, b)
        assert int(result.action[b]) == int(score.masked_fill(~most, -math.inf).argmax())


@pytest.mark.parametrize("considered", [4, 9])
def test_with_one_simulation_per_considered_move_the_target_is_softmax_of_logits_plus_sigma(considered):
    tree, result, g, prior = searched(considered, considered)
    for b in range(tree.batch_size):
        n = tree.child_visits[b, 0]
        assert sorted(n.tolist(), reverse=True)[:considered + 1] == [1.0] * considered + [0.0]
        # the visited moves are the Gumbel-top-k of g + logits
        top = torch.topk((g[b] + torch.log(prior[b])).masked_fill(~tree.legal[b, 0], -math.inf), considered).indices
        assert set(top.tolist()) == set(n.nonzero().squeeze(1).tolist())
        expected = torch.softmax(by_hand_logits(tree, prior, b), dim=0)
        assert torch.allclose(result.policy[b].double(), expected, atol=1e-6)
        assert result.policy[b][~tree.legal[b, 0]].eq(0).all() and result.policy[b][tree.legal[b, 0]].gt(0).all()


def test_batch_of_three_with_different_legal_moves_equals_each_searched_alone():
    game = games.make("gomoku", size=5, k=4)
    a = game.initial_state(1)
    b = game.step(a, torch.tensor([12]))
    c = game.step(game.step(b, torch.tensor([0])), torch.tensor([24]))
    roots = State.cat([a, b, c])
    torch.manual_seed(0)
    net = PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), game).eval()
    searcher = NetworkSearch(game, net, algorithm="gumbel", considered_actions=8, precision="float32")
    keys = make_keys(3, 3)
    together = searcher.gumbel_search(roots, keys, 20, noise=True)
    assert together.tree.legal[:, 0].sum(dim=1).tolist() == [25, 24, 22]
    for i in range(3):
        alone = searcher.gumbel_search(roots[i], keys[i:i + 1], 20, noise=True)
        assert torch.equal(alone.tree.root_visits()[0], together.tree.root_visits()[i])
        assert int(alone.action) == int(together.action[i])
        assert torch.allclose(alone.policy[0], together.policy[i], atol=1e-6)


class CountingEvaluator(FakeEvaluator):
    def __init__(self, game):
        super().__init__(game)
        self.calls = []

    def __call__(self, states, keys=None, legal=None):
        self.calls.append(states.batch_size)
        return super().__call__(states, keys, legal)


@pytest.mark.parametrize("considered, simulations, parallel, calls", [
    # m = 16, n = 64: rounds of 16, 8, 8, 4 x 4 and 8 x 2 walks, one network call each
    (16, 64, 16, 1 + 2 + 4 + 8),
    # rounds longer than parallel go in pieces: 16 = 4 x 4, 8 = 2 x 4
    (16, 64, 4, 4 + 2 * 2 + 4 + 8),
    # m = 3, n = 10: schedule 0 0 0 1 1 2 2 3 3 4, rounds of 3, 2, 2, 2 and the last one
    (3, 10, 8, 1 + 3 + 1),
])
def test_a_round_of_the_schedule_is_one_call_and_the_same_search(considered, simulations, parallel, calls):
    game = games.make("gomoku", size=5, k=4)
    roots = game.step(game.initial_state(3), torch.tensor([0, 6, 12]))
    roots = game.step(roots, torch.tensor([1, 7, 13]))
    keys = make_keys(5, 3)
    g = gumbel_noise(keys, game.num_actions)

    def run(k):
        evaluator = CountingEvaluator(game)
        prior, value = evaluator(roots)
        tree = new_tree(game, roots, simulations + 1, keys, root_prior=prior, root_value=value)
        result = gumbel_search(tree, game, evaluator, Gumbel(), simulations, g, considered=considered, parallel=k)
        return tree, result, evaluator.calls[1:]

    alone, one, one_calls = run(1)
    tree, together, calls_made = run(parallel)
    assert len(one_calls) == simulations and len(calls_made) == calls
    assert sum(calls_made) == sum(one_calls)  # the same leaves
    for name in ("visits", "parent", "action", "children", "child_visits"):
        assert torch.equal(getattr(tree, name), getattr(alone, name)), name
    assert torch.allclose(tree.value_sum, alone.value_sum, atol=1e-5)
    assert torch.equal(together.action, one.action)
    assert torch.allclose(together.policy, one.policy, atol=1e-6)


def test_trees_whose_rounds_differ_search_together_as_alone():
    """Roots with 9, 6 and 3 legal moves: their schedules' rounds differ in length, and trees
    end their rounds, and their simulations, at different steps."""
    roots = [TTT.initial_state(1)]
    for moves in (["a1", "b2", "c3"], ["a1", "b2", "c3", "a3", "c1", "b1"]):
        state = TTT.initial_state(1)
        for m in moves:
            state = TTT.step(state, torch.tensor([TTT.parse_action(m)]))
        roots.append(state)
    roots = State.cat(roots)
    evaluator = FakeEvaluator(TTT)
    keys = make_keys(2, 3)
    g = gumbel_noise(keys, TTT.num_actions)

    def run(parallel, rows):
        prior, value = evaluator(roots[rows])
        tree = new_tree(TTT, roots[rows], 15, keys[rows], root_prior=prior, root_value=value)
        return gumbel_search(tree, TTT, evaluator, Gumbel(), 14, g[rows], considered=16, parallel=parallel)

    together = run(8, slice(0, 3))
    assert together.tree.legal[:, 0].sum(dim=1).tolist() == [9, 6, 3]
    for i in range(3):
        alone = run(1, slice(i, i + 1))
        assert torch.equal(alone.tree.root_visits()[0], together.tree.root_visits()[i])
        assert int(alone.action) == int(together.action[i])
        assert torch.allclose(alone.policy[0], together.policy[i], atol=1e-6)


def test_without_noise_the_search_considers_the_moves_of_highest_prior():
    tree, *_ = searched(4, 4)
    game = games.make("gomoku", size=5, k=4)
    states = game.step(game.initial_state(4), torch.arange(4) * 3)
    evaluator = FakeEvaluator(game)
    prior, value = evaluator(states)
    tree = new_tree(game, states, 5, make_keys(0, 4), root_prior=prior, root_value=value)
    gumbel_search(tree, game, evaluator, Gumbel(), 4, torch.zeros(4, game.num_actions), considered=4)
    for b in range(4):
        assert set(tree.child_visits[b, 0].nonzero().squeeze(1).tolist()) == set(prior[b].topk(4).indices.tolist())


def test_a_search_stopped_early_plays_the_best_of_its_most_visited_moves():
    game = games.make("gomoku", size=5, k=4)
    states = game.step(game.initial_state(2), torch.tensor([0, 12]))
    evaluator = FakeEvaluator(game)
    prior, value = evaluator(states)
    tree = new_tree(game, states, 65, make_keys(0, 2), root_prior=prior, root_value=value)
    g = gumbel_noise(make_keys(4, 2), game.num_actions)
    seen = []
    result = gumbel_search(tree, game, evaluator, Gumbel(), 64, g, considered=8, chunk=12,
                           on_progress=lambda t: seen.append(t.root_visits().sum(dim=1).tolist()),
                           should_stop=lambda: len(seen) == 2)
    assert seen == [[12.0, 12.0], [24.0, 24.0]]
    # 24 of the 64 planned: 64 // (3 * 8) = 2 rounds of the 8, then 2 of the 5 rounds planned for the better 4
    for b in range(2):
        assert sorted(tree.child_visits[b, 0].tolist(), reverse=True)[:9] == [4.0] * 4 + [2.0] * 4 + [0.0]
    for b in range(2):
        most = tree.child_visits[b, 0] == tree.child_visits[b, 0].max()
        score = g[b].double() + by_hand_logits(tree, prior, b)
        assert int(result.action[b]) == int(score.masked_fill(~most, -math.inf).argmax())


def test_an_absurd_considered_asks_the_schedule_for_no_more_rows_than_the_game_has_moves(monkeypatch, tmp_path):
    """considered=10**9 (az:...:considered=N, search.considered_actions) built a table of 10**9
    rows; no root considers more moves than the game has, so the search asks for at most
    num_actions of them, and searches as with considered = num_actions."""
    import azero.search.gumbel as module

    asked = []

    def spy(considered, simulations):
        asked.append(considered)
        assert considered <= TTT.num_actions, f"a schedule table of {considered} + 1 rows asked for"
        return _schedule_table(considered, simulations)

    monkeypatch.setattr(module, "_schedule_table", spy)
    state = TTT.initial_state(1)
    evaluator = FakeEvaluator(TTT)
    prior, value = evaluator(state)
    g = gumbel_noise(make_keys(7, 1), TTT.num_actions)

    def run(considered):
        tree = new_tree(TTT, state, 25, make_keys(0, 1), root_prior=prior, root_value=value)
        return gumbel_search(tree, TTT, evaluator, Gumbel(), 24, g, considered=considered, parallel=4)

    absurd, full = run(10**9), run(TTT.num_actions)
    assert asked == [TTT.num_actions, TTT.num_actions]
    assert torch.equal(absurd.tree.root_visits(), full.tree.root_visits())
    assert torch.equal(absurd.action, full.action) and torch.equal(absurd.policy, full.policy)
    # the player option the hole came through
    torch.manual_seed(0)
    net = PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), TTT).eval()
    saved = tmp_path / "net.pt"
    atomic_save(network_checkpoint(net, TTT, 1), saved)
    player = make(f"az:{saved}:sims=8,algorithm=gumbel,considered=100000", TTT)  # the most the option allows
    analysis = player.analyse(TTT.initial_state(2))
    assert analysis.visits.sum(dim=1).tolist() == [8.0, 8.0] and asked[2:] == [TTT.num_actions]


def test_a_used_tree_or_a_tree_without_priors_is_refused():
    tree, *_ = searched(4, 8)
    with pytest.raises(ValueError, match="fresh trees"):
        gumbel_search(tree, games.make("gomoku", size=5, k=4), FakeEvaluator(None), Gumbel(), 4,
                      torch.zeros(4, 25))
    bare = new_tree(TTT, TTT.initial_state(1), 5, make_keys(0, 1), with_prior=False)
    with pytest.raises(ValueError, match="priors"):
        gumbel_search(bare, TTT, FakeEvaluator(TTT), Gumbel(), 4, torch.zeros(1, 9))


def test_gumbel_noise_is_per_key_and_gumbel_distributed():
    keys = make_keys(5, 4000)
    g = gumbel_noise(keys, 9)
    assert torch.equal(g[7], gumbel_noise(keys[7:8], 9)[0])
    assert torch.isfinite(g).all()
    assert float(g.mean()) == pytest.approx(0.5772, abs=0.02)  # Euler-Mascheroni
    assert float(g.var()) == pytest.approx(math.pi**2 / 6, abs=0.06)


def test_the_largest_uniform_draw_gives_finite_noise(monkeypatch):
    import azero.search.gumbel as module

    # uniform's largest draw, 1 - 2^-24: adding 2^-25 rounds it to 1.0 in float32, whose noise was +inf
    monkeypatch.setattr(module, "uniform", lambda keys, shape, device="cpu": torch.full(shape, 1.0 - 2.0**-24))
    g = gumbel_noise(make_keys(0, 2), 9)
    assert torch.isfinite(g).all() and float(g.max()) == pytest.approx(24 * math.log(2), abs=0.01)


@pytest.mark.parametrize("simulations", [1, 6])
def test_infinite_noise_on_an_illegal_move_never_puts_it_in_the_tree(simulations):
    # a3 (action 0) is taken; its noise +inf made its score -inf + inf = NaN, which the
    # compiled root's first-max kept (no comparison passes a NaN at index 0), so the first
    # simulation stepped into a3
    state = TTT.step(TTT.initial_state(1), torch.tensor([TTT.parse_action("a3")]))
    evaluator = FakeEvaluator(TTT)
    prior, value = evaluator(state)
    g = torch.zeros(1, 9)
    g[0, TTT.parse_action("a3")] = math.inf
    tree = new_tree(TTT, state, simulations + 1, make_keys(0, 1), root_prior=prior, root_value=value)
    result = gumbel_search(tree, TTT, evaluator, Gumbel(), simulations, g, considered=4)
    assert float(tree.root_visits()[0, TTT.parse_action("a3")]) == 0
    assert int(result.action) in TTT.legal_actions(state) and torch.isfinite(result.policy).all()


# -- self-play, the az: player, the config -----------------------------------------------------------


def tiny_config(algorithm: str, overrides: tuple | list = ()):
    return load_config(game="tictactoe", overrides=[f"search.algorithm={algorithm}", "search.simulations=8",
                                                    "search.considered_actions=4", "selfplay.games=4", *overrides])


def test_self_play_records_the_improved_policy_and_plays_the_gumbel_choice():
    config = tiny_config("gumbel")
    torch.manual_seed(0)
    net = PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), TTT).eval()
    play = SelfPlay(TTT, net, config.search, config.selfplay, seed=0)
    rng_before = play.rng.bit_generator.state
    states, keys = play.states, play._keys()
    expected = play.searcher.gumbel_search(states, keys, 8, noise=True)
    play.step()
    assert torch.allclose(play.policy[:, 0], expected.policy)
    # every legal move has a share of the target (completed Q), not only the 4 visited
    assert (play.policy[:, 0] > 0).all() and (expected.tree.root_visits() > 0).sum(dim=1).eq(4).all()
    assert torch.equal(play.states.board, TTT.step(states, expected.action).board)
    assert play.rng.bit_generator.state == rng_before  # no Dirichlet noise was drawn
    puct = SelfPlay(TTT, net, tiny_config("puct").search, config.selfplay, seed=0)
    puct.step()
    assert (puct.policy[:, 0] == 0).any()  # PUCT's visit distribution: unvisited moves get 0


def test_az_player_searches_as_its_checkpoint_or_its_spec_says(tmp_path):
    torch.manual_seed(0)
    net = PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), TTT).eval()
    old, gumbel = tmp_path / "old.pt", tmp_path / "gumbel.pt"
    atomic_save(network_checkpoint(net, TTT, 1), old)  # a checkpoint that names no algorithm
    config = tiny_config("gumbel")
    atomic_save(network_checkpoint(net, TTT, 2, config=config.to_dict()), gumbel)
    assert make(f"az:{old}:sims=8", TTT).searcher.algorithm == "puct"
    player = make(f"az:{gumbel}:sims=8", TTT)
    assert player.searcher.algorithm == "gumbel" and player.searcher.considered_actions == 4
    puct = make(f"az:{gumbel}:sims=8,algorithm=puct", TTT)
    assert puct.searcher.algorithm == "puct" and puct.spec == "az@2:sims=8,algorithm=puct"  # not as trained
    assert make(f"az:{old}:sims=8,algorithm=puct", TTT).spec == "az@1:sims=8"
    # virtual loss is PUCT's: named there, and not on a Gumbel search, which has no pending visits
    assert make(f"az:{old}:sims=8,virtual_loss=true", TTT).spec == "az@1:sims=8,virtual_loss=true"
    assert make(f"az:{gumbel}:sims=8,virtual_loss=true", TTT).spec == "az@2:sims=8,algorithm=gumbel,considered=4"
    player = make(f"az:{old}:sims=8,algorithm=gumbel,considered=3,c_scale=0.5", TTT)
    assert player.searcher.rule == Gumbel(c_visit=50.0, c_scale=0.5) and player.searcher.considered_actions == 3
    analysis = player.analyse(TTT.initial_state(2))
    assert analysis.visits.sum(dim=1).tolist() == [8.0, 8.0] and (analysis.visits > 0).sum(dim=1).tolist() == [3, 3]
    assert torch.equal(analysis.action, player.act(TTT.initial_state(2)))  # no noise: the same move every time
    seen = []
    timed = player.analyse(TTT.initial_state(1), seconds=30.0, on_progress=seen.append)
    assert timed.visits.sum() == 8 and seen and seen[-1].visits.sum() == 8
    with pytest.raises(UserError, match="puct, gumbel"):
        make(f"az:{old}:algorithm=alphago", TTT)
    # rescaled Q: from the spec or the checkpoint's config, named, and a round a call as without it
    rescaled = make(f"az:{old}:sims=8,algorithm=gumbel,rescale_q=true", TTT)
    assert rescaled.searcher.rule == Gumbel(rescale=True) and rescaled.leaves_per_step(8) == 16  # m, as without it
    assert rescaled.spec == "az@1:sims=8,algorithm=gumbel,rescale_q=true"
    assert make(f"az:{old}:sims=8,algorithm=gumbel,rescale_q=true,parallel=1", TTT).leaves_per_step(8) == 1
    saved = tmp_path / "rescaled.pt"
    config = tiny_config("gumbel", overrides=["search.rescale_q=true", "search.c_scale=0.1"])
    atomic_save(network_checkpoint(net, TTT, 3, config=config.to_dict()), saved)
    assert make(f"az:{saved}:sims=8", TTT).searcher.rule == Gumbel(c_scale=0.1, rescale=True)
    assert make(f"az:{saved}:sims=8,rescale_q=false", TTT).searcher.rule == Gumbel(c_scale=0.1)
    with pytest.raises(UserError, match="rescale_q"):
        make(f"az:{old}:rescale_q=maybe", TTT)


def test_config_names_the_algorithms_and_old_configs_stay_puct():
    assert load_config(game="tictactoe").search.algorithm == "puct"
    assert load_config(game="tictactoe", overrides=["search.algorithm=gumbel"]).search.algorithm == "gumbel"
    with pytest.raises(ConfigError, match="puct, gumbel"):
        load_config(game="tictactoe", overrides=["search.algorithm=muzero"])
    saved = load_config(game="tictactoe").to_dict()
    for key in ("algorithm", "considered_actions", "c_visit", "c_scale", "rescale_q"):
        del saved["search"][key]
    assert config_from_dict(saved).search.algorithm == "puct"
    assert config_from_dict(saved).search.rescale_q is False
