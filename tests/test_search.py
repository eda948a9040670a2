"""The array-tree engine with UCB1 and rollouts: hand-computable cases, batch independence, criteria."""

from __future__ import annotations

import math

import pytest
import torch

import games
from azero.search import UCB1, RolloutEvaluator, choose, search
from azero.search.final import max_robust_exists
from boards import position
from games import State
from games.keyed_random import make_keys

TTT = games.make("tictactoe")


def ucb1_split(payoffs: list[float], iterations: int, c: float = math.sqrt(2.0)) -> list[int]:
    """Visits per arm of UCB1 on deterministic payoffs (each arm tried once first, in order)."""
    visits = [0] * len(payoffs)
    total = 0
    for t in range(iterations):
        if t < len(payoffs):
            arm = t
        else:
            scores = [p + c * math.sqrt(math.log(total) / n) for p, n in zip(payoffs, visits)]
            arm = max(range(len(payoffs)), key=lambda i: scores[i])
        visits[arm] += 1
        total += 1
    return visits


def test_two_armed_bandit_visits_follow_ucb1_by_hand():
    # O to move with two empty squares: a1 wins at once (payoff 1); a2 leaves X the last
    # square, which draws (payoff 0.5). Both payoffs are exact, so the split is known.
    s = position(TTT, """
    X X O
    . X X
    . O O""", to_play=1)
    for iterations in (10, 50, 300):
        tree = search(TTT, s, RolloutEvaluator(TTT), UCB1(), iterations, make_keys(0, 1))
        visits = tree.root_visits()[0]
        win, draw = int(visits[TTT.parse_action("a1")]), int(visits[TTT.parse_action("a2")])
        assert [win, draw] == ucb1_split([1.0, 0.5], iterations)
        assert tree.root_q()[0, TTT.parse_action("a1")] == 1.0
        assert tree.root_q()[0, TTT.parse_action("a2")] == 0.0


def test_one_winning_move_is_found():
    s = position(TTT, """
    X X .
    O O .
    . . .""", to_play=0)
    tree = search(TTT, s, RolloutEvaluator(TTT), UCB1(), 200, make_keys(1, 1))
    assert TTT.format_action(int(tree.root_visits()[0].argmax())) == "c3"
    assert tree.root_q()[0, TTT.parse_action("c3")] == 1.0
    assert tree.principal_variation(0)[0] == TTT.parse_action("c3")


def test_values_are_from_the_view_of_the_player_to_move_at_the_root():
    # O to move and X threatens c3: O must block; every other move loses at once.
    s = position(TTT, """
    X X .
    O . .
    . . .""", to_play=1)
    tree = search(TTT, s, RolloutEvaluator(TTT), UCB1(), 2000, make_keys(2, 1))
    q = tree.root_q()[0]
    assert int(tree.root_visits()[0].argmax()) == TTT.parse_action("c3")
    assert q[TTT.parse_action("b2")] < q[TTT.parse_action("c3")]


def test_batch_of_three_equals_each_searched_alone():
    g = games.make("gomoku", size=7, k=4)
    a = g.initial_state(1)
    b = g.step(a, torch.tensor([10]))
    c = g.step(g.step(b, torch.tensor([24])), torch.tensor([0]))
    roots = State.cat([a, b, c])  # different positions, different legal masks
    keys = make_keys(7, 3)
    together = search(g, roots, RolloutEvaluator(g), UCB1(), 150, keys)
    for i in range(3):
        alone = search(g, roots[i], RolloutEvaluator(g), UCB1(), 150, keys[i : i + 1])
        assert torch.equal(alone.root_visits()[0], together.root_visits()[i])
        assert torch.equal(alone.root_q()[0], together.root_q()[i])


@pytest.mark.parametrize("parallel", [8, 1])
def test_a_leaf_parallel_batch_equals_each_tree_searched_alone(parallel):
    g = games.make("gomoku", size=7, k=4)
    a = g.initial_state(1)
    b = g.step(a, torch.tensor([10]))
    roots = State.cat([a, b, g.step(b, torch.tensor([24]))])
    keys = make_keys(9, 3)
    together = search(g, roots, RolloutEvaluator(g), UCB1(), 150, keys, parallel=parallel)
    assert torch.equal(together.root_visits().sum(dim=1), torch.full((3,), 150.0))
    for i in range(3):
        alone = search(g, roots[i], RolloutEvaluator(g), UCB1(), 150, keys[i : i + 1], parallel=parallel)
        assert torch.equal(alone.root_visits()[0], together.root_visits()[i])
        assert torch.equal(alone.root_q()[0], together.root_q()[i])


def test_leaf_parallel_walks_spread_over_the_moves_and_find_the_win():
    # X wins at c3. A step of 8 walks from the root goes 8 ways (pending visits steer each
    # walk away from the others), and the search still settles on the win.
    s = position(TTT, """
    X X .
    O O .
    . . .""", to_play=0)
    calls = []

    def evaluator(states, keys, legal=None):
        calls.append(states.batch_size)
        return RolloutEvaluator(TTT)(states, keys, legal)

    tree = search(TTT, s, evaluator, UCB1(), 200, make_keys(1, 1), parallel=8)
    assert calls[0] == 5  # the first step: each of the 5 moves once, then walks that collide end it
    assert TTT.format_action(int(tree.root_visits()[0].argmax())) == "c3"
    assert tree.root_q()[0, TTT.parse_action("c3")] == 1.0 and not bool(tree.pending.any())


def test_parallel_must_be_positive():
    with pytest.raises(ValueError, match="parallel must be at least 1"):
        search(TTT, TTT.initial_state(1), RolloutEvaluator(TTT), UCB1(), 10, make_keys(0, 1), parallel=0)


def test_gumbel_walks_one_leaf_at_a_time_unless_each_walk_gets_its_root_move():
    from azero.search import Gumbel, new_tree, simulate

    tree = new_tree(TTT, TTT.initial_state(1), 20, make_keys(0, 1))
    with pytest.raises(ValueError, match="Gumbel selection walks one leaf at a time"):
        simulate(tree, TTT, RolloutEvaluator(TTT), Gumbel(), 8, parallel=4)
    with pytest.raises(ValueError, match="only with one imposed root action per walk"):  # they would all collide
        simulate(tree, TTT, RolloutEvaluator(TTT), Gumbel(), 8, parallel=4, root_action=torch.tensor([4]))
    # one imposed root move for every walk of a step, with pending visits below it
    simulate(tree, TTT, RolloutEvaluator(TTT), UCB1(), 8, parallel=4, root_action=torch.tensor([4]))
    assert tree.root_visits()[0].tolist() == [0, 0, 0, 0, 8, 0, 0, 0, 0]


def test_imposed_root_moves_one_per_walk_go_to_the_evaluator_together():
    from azero.search import new_tree, simulate

    tree = new_tree(TTT, TTT.initial_state(2), 20, make_keys(0, 2))
    calls, budgets = [], []

    class Counting(RolloutEvaluator):
        def __call__(self, states, keys, legal=None):
            calls.append(states.batch_size)
            return super().__call__(states, keys, legal)

    def moves(budget):  # tree 0: three walks a step, tree 1: one
        budgets.append(budget.tolist())
        return torch.tensor([[0, 4, 8], [2, -1, -1]])

    simulate(tree, TTT, Counting(TTT), UCB1(), 6, parallel=3, root_action=moves)
    assert tree.root_visits()[0].tolist() == [2, 0, 0, 0, 2, 0, 0, 0, 2]  # two steps of three
    assert tree.root_visits()[1].tolist() == [0, 0, 6, 0, 0, 0, 0, 0, 0]  # six steps of one
    assert budgets[0] == [3, 3] and budgets[2] == [0, 3]  # what each tree had left, at most 3
    assert calls == [4, 4, 1, 1, 1, 1]  # a step's walks in one call: both trees, then tree 1 alone
    with pytest.raises(ValueError, match="4 root actions a step for parallel=3"):
        simulate(tree, TTT, RolloutEvaluator(TTT), UCB1(), 3, parallel=3, root_action=torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="no walk to a tree with simulations left"):
        simulate(tree, TTT, RolloutEvaluator(TTT), UCB1(), 3, parallel=3, root_action=torch.full((2, 3), -1))
    before = tree.root_visits().clone()
    with pytest.raises(ValueError, match="no walk to a tree with simulations left"):  # not a walk lost
        simulate(tree, TTT, RolloutEvaluator(TTT), UCB1(), 4, root_action=torch.tensor([[0], [-1]]))
    assert torch.equal(tree.root_visits(), before)


def test_same_keys_same_search_other_keys_other_search():
    g = games.make("gomoku", size=7, k=4)
    s = g.initial_state(1)
    one = search(g, s, RolloutEvaluator(g), UCB1(), 100, make_keys(3, 1)).root_visits()
    two = search(g, s, RolloutEvaluator(g), UCB1(), 100, make_keys(3, 1)).root_visits()
    three = search(g, s, RolloutEvaluator(g), UCB1(), 100, make_keys(4, 1)).root_visits()
    assert torch.equal(one, two) and not torch.equal(one, three)


def test_every_iteration_adds_one_visit_and_at_most_one_node():
    g = games.make("gomoku", size=5, k=4)
    tree = search(g, g.initial_state(4), RolloutEvaluator(g), UCB1(), 60, make_keys(5, 4))
    assert torch.all(tree.visits[:, 0] == 60)
    assert torch.all(tree.root_visits().sum(dim=1) == 60)
    assert torch.all(tree.next_node <= 61)
    # each expanded node's visits equal the sum of its children's plus its own expansion
    for b in range(4):
        for node in range(1, int(tree.next_node[b])):
            own = 0 if bool(tree.terminal[b, node]) else 1
            inner = tree.child_visits[b, node].sum()
            assert tree.visits[b, node] >= inner + own - 1e-6 or bool(tree.terminal[b, node])


def test_searching_a_finished_game_is_an_error():
    s = position(TTT, """
    X X X
    O O .
    . . .""")
    with pytest.raises(ValueError, match="finished game"):
        search(TTT, s, RolloutEvaluator(TTT), UCB1(), 10, make_keys(0, 1))


# -- final-move criteria on a crafted root ---------------------------------------------------------

# four actions: visits and win rates chosen so that each criterion picks a different one
VISITS = torch.tensor([[40.0, 30.0, 2.0, 28.0]])
WIN_RATE = torch.tensor([[0.55, 0.70, 0.95, 0.58]])
VALUE_SUM = (2 * WIN_RATE - 1) * VISITS


def test_robust_child_is_the_most_visited():
    assert choose("robust", VISITS, VALUE_SUM).tolist() == [0]


def test_ties_in_visits_go_to_the_better_mean_or_for_plain_uct_to_the_child_expanded_first():
    visits = torch.tensor([[2.0, 2.0, 1.0, 2.0], [3.0, 1.0, 3.0, 0.0]])
    value_sum = torch.tensor([[0.0, 2.0, 1.0, -2.0], [-1.0, 1.0, 3.0, 0.0]])
    assert choose("robust", visits, value_sum).tolist() == [1, 2]
    created = torch.tensor([[3, 5, 2, 1], [4, 1, 6, -1]])  # node index of each child: its expansion order
    assert choose("robust", visits, value_sum, created=created).tolist() == [3, 0]


def test_max_child_is_the_best_mean():
    assert choose("max", VISITS, VALUE_SUM).tolist() == [2]


def test_secure_child_is_the_best_lower_bound():
    total = VISITS.sum()
    lower = WIN_RATE - math.sqrt(2) * torch.sqrt(torch.log(total) / VISITS)
    assert int(lower.argmax()) == 1
    assert choose("secure", VISITS, VALUE_SUM).tolist() == [1]


def test_max_robust_child_needs_both_most_visits_and_best_mean():
    assert not bool(max_robust_exists(VISITS, VALUE_SUM)[0])
    visits = torch.tensor([[40.0, 30.0, 2.0]])
    value_sum = (2 * torch.tensor([[0.7, 0.6, 0.65]]) - 1) * visits
    assert bool(max_robust_exists(visits, value_sum)[0])
    assert choose("max-robust", visits, value_sum).tolist() == [0]
    # without such a child it falls back to the most visited
    assert choose("max-robust", VISITS, VALUE_SUM).tolist() == [0]


def test_unknown_criterion_is_an_error():
    with pytest.raises(ValueError, match="robust, max, max-robust, secure"):
        choose("best", VISITS, VALUE_SUM)


@pytest.mark.parametrize("constants", [{"c_base": 0.0}, {"c_base": -5.0}, {"c_base": 1e10}, {"c_init": -0.1},
                                       {"c_init": math.inf}, {"c_init": math.nan}, {"c_base": math.nan}])
def test_puct_refuses_constants_whose_exploration_weight_is_not_positive(constants):
    """c(N) divides the value term in the compiled walks, which do not check for a zero divisor:
    constants that make it zero, negative or not a number are refused when the rule is made."""
    from azero.search.selection import PUCT

    with pytest.raises(ValueError, match="PUCT needs"):
        PUCT(**constants)
    PUCT(c_init=0.0, c_base=1e9)  # the edge: c(N) is small but above 0 in float32


def test_puct_select_is_the_argmax_of_its_scores():
    """PUCT.select computes the score scaled per tree (fewer operations); it must pick the same action."""
    from azero.search.selection import PUCT, NodeView

    for rule in (PUCT(), PUCT(c_init=0.5, c_base=10.0, fpu_reduction=0.2)):
        for seed in range(20):
            g = torch.Generator().manual_seed(seed)
            batch, actions = 64, 30
            n = (torch.rand(batch, actions, generator=g) < 0.4).float() * torch.randint(1, 40, (batch, actions), generator=g)
            view = NodeView(
                visits=n.sum(1) + torch.randint(0, 3, (batch,), generator=g),
                q=torch.rand(batch, generator=g) * 2 - 1,
                child_visits=n,
                child_value_sum=n * (torch.rand(batch, actions, generator=g) * 2 - 1),
                prior=torch.softmax(3 * torch.randn(batch, actions, generator=g), 1),
                legal=(torch.rand(batch, actions, generator=g) < 0.8) | (n > 0),
                uniform=None,
            )
            chosen = rule.select(view)
            scores = rule.scores(view)
            assert view.legal.gather(1, chosen.unsqueeze(1)).all()
            # the same action, or one whose score ties with the best to rounding
            best = scores.max(dim=1).values
            assert torch.allclose(scores.gather(1, chosen.unsqueeze(1)).squeeze(1), best, rtol=1e-5, atol=1e-6)


def test_ucb1_select_takes_untried_moves_first_then_the_best_score():
    """UCB1.select: a random untried legal move while there is one, else the argmax of scores()."""
    from azero.search.selection import UCB1, NodeView

    rule = UCB1()
    for seed in range(20):
        g = torch.Generator().manual_seed(seed)
        batch, actions = 64, 30
        legal = torch.rand(batch, actions, generator=g) < 0.8
        n = legal * torch.randint(1, 40, (batch, actions), generator=g)
        n[: batch // 2] *= (torch.rand(batch // 2, actions, generator=g) < 0.7)  # some untried moves
        n = n.float()
        view = NodeView(
            visits=n.sum(1) + 1, q=torch.zeros(batch), child_visits=n,
            child_value_sum=n * (torch.rand(batch, actions, generator=g) * 2 - 1), prior=None, legal=legal,
            uniform=torch.rand(batch, generator=g),
        )
        chosen = rule.select(view)
        untried = legal & (n == 0)
        has_untried = untried.any(dim=1)
        assert untried[has_untried].gather(1, chosen[has_untried].unsqueeze(1)).all()
        scores = rule.scores(view)[~has_untried]
        picked = scores.gather(1, chosen[~has_untried].unsqueeze(1)).squeeze(1)
        assert torch.allclose(picked, scores.max(dim=1).values, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rule", ["ucb1", "puct"])
def test_a_tree_refilled_in_place_equals_a_new_one(rule):
    """new_tree(reuse=old) writes into the old arrays and gives exactly the tree a fresh call gives,
    also where the old tree's nodes below the root had children (whose rows a refill clears)."""
    import dataclasses

    from azero.search import PUCT
    from azero.search.tree import new_tree

    g = games.make("gomoku", size=6, k=4)
    roots = g.step(g.initial_state(3), torch.tensor([0, 7, 14]))
    with_prior = rule == "puct"
    if with_prior:  # a peaked prior: the search goes deep, leaf-parallel walks leave collisions behind
        prior = torch.softmax(torch.linspace(4.0, 0.0, 36).repeat(3, 1), dim=1)
        old = search(g, g.initial_state(3), RolloutEvaluator(g), PUCT(), 60, make_keys(1, 3), root_prior=prior,
                     parallel=4)
    else:
        old = search(g, g.initial_state(3), RolloutEvaluator(g), UCB1(), 20, make_keys(1, 3))
    assert not with_prior or bool((old.parent > 0).any())  # nodes below the root had children
    fresh = new_tree(g, roots, old.capacity, make_keys(2, 3), with_prior=with_prior)
    reused = new_tree(g, roots, old.capacity, make_keys(2, 3), with_prior=with_prior, reuse=old)
    assert reused.children.data_ptr() == old.children.data_ptr()  # the memory was taken over
    for f in dataclasses.fields(fresh):
        a, b = getattr(fresh, f.name), getattr(reused, f.name)
        assert a.equal(b) if isinstance(a, torch.Tensor) else (a is None and b is None) or a.equal(b), f.name
    other_size = new_tree(g, roots, 9, make_keys(2, 3), with_prior=with_prior, reuse=old)  # shapes differ: new arrays
    assert other_size.children.shape == (3, 9, 36) and other_size.children.data_ptr() != old.children.data_ptr()


def test_ucb1_answers_only_active_trees_when_told_which():
    """Trees whose path has ended (inactive) do not make UCB1 score tried moves for the others."""
    from azero.search.selection import UCB1, NodeView

    batch, actions = 8, 5
    n = torch.ones(batch, actions)
    n[:4, 2] = 0  # trees 0-3 have one untried move (2); trees 4-7 have tried everything
    legal = torch.ones(batch, actions, dtype=torch.bool)
    view = NodeView(visits=n.sum(1), q=torch.zeros(batch), child_visits=n, child_value_sum=torch.zeros(batch, actions),
                    prior=None, legal=legal, uniform=torch.rand(batch), active=torch.arange(batch) < 4)
    chosen = UCB1().select(view)
    assert (chosen[:4] == 2).all() and ((chosen >= 0) & (chosen < actions)).all()
    everyone = UCB1().select(NodeView(*[getattr(view, k) for k in ("visits", "q", "child_visits", "child_value_sum",
                                                                    "prior", "legal", "uniform")]))
    assert (everyone[:4] == 2).all() and (everyone[4:] == 0).all()  # all tried, all equal: the first
