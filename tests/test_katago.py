"""KataGo's training signals (Wu 2019), each by its own arithmetic: playout cap randomization,
forced playouts and policy target pruning, ownership and score targets, the opponent-reply
target, the win/draw/loss value, global pooling, and the search's value mixed into the value
target (Oracle's Connect Four lessons); and that checkpoints, the frozen and the int8
modules keep working with the new heads."""

from __future__ import annotations

import math
import pickle
from pathlib import Path

import pytest
import torch

import games
from azero.checkpoint import load_checkpoint, network_checkpoint, network_from_checkpoint
from azero.config import ConfigError, load_config
from azero.errors import UserError
from azero.loop import open_run, train
from azero.network import (
    GlobalPoolingBlock,
    NetworkConfig,
    NetworkEvaluator,
    PolicyValueNet,
    ResidualBlock,
    global_pool,
    pooling_blocks,
    wdl_value,
)
from azero.quantized import Int8Network, calibration_positions
from azero.replay import ReplayBuffer, chunks, restore
from azero.search import PUCT, NodeView
from azero.search.forced import forced_visits, prune_forced_visits
from azero.selfplay import Samples, SelfPlay, game_samples, stored_fields
from azero.trainer import losses, score_target, wdl_target
from games.keyed_random import fold, uniform
from networks import small_net
from runs import tiny_settings

DATA = Path(__file__).resolve().parent / "data"
TTT = games.make("tictactoe")


# -- playout cap randomization -----------------------------------------------------------------------


def test_cheap_searches_have_their_simulations_no_noise_and_no_policy_target():
    config = load_config(game="tictactoe", overrides=[
        "selfplay.games=64", "search.simulations=12", "search.cheap_simulations=3",
        "selfplay.full_search_fraction=0.25", "search.reuse_tree=false"])
    net = small_net(TTT)
    selfplay = SelfPlay(TTT, net, config.search, config.selfplay, seed=3)
    policy, _, full, _ = selfplay._search()
    assert torch.equal(selfplay.tree.root_visits().sum(dim=1), torch.where(full, 12.0, 3.0))
    assert torch.allclose(policy.sum(dim=1), torch.ones(64))
    assert 4 <= int(full.sum()) <= 30  # about a quarter of 64 (binomial: 16 +- 3.5)
    network_prior, _ = selfplay.searcher.evaluator(selfplay.states)
    root_prior = selfplay.tree.prior[:, 0]
    assert torch.allclose(root_prior[~full], network_prior[~full])  # no root noise in cheap searches
    assert not torch.allclose(root_prior[full], network_prior[full])
    selfplay.tree = None  # the same move again (the same draws of full and cheap), now played and recorded
    selfplay.step()
    assert torch.equal(selfplay.policy_weight[:, 0], full.float())


def test_a_finished_games_samples_carry_the_flags_and_the_next_moves_target():
    state = TTT.initial_state(1)
    for action in (4, 0, 8, 2, 1, 7, 3, 5, 6):  # a draw in nine moves
        state = TTT.step(state, torch.tensor([action]))
    assert bool(state.done[0]) and float(TTT.result(state)[0]) == 0.0
    n = 4
    policy = torch.eye(TTT.num_actions)[:n]  # position t's target: action t
    weight = torch.tensor([1.0, 0.0, 1.0, 1.0])
    planes = torch.zeros(n, TTT.num_planes, 3, 3, dtype=torch.uint8)
    legal = torch.ones(n, TTT.num_actions, dtype=torch.bool)
    samples = game_samples(TTT, state, planes, policy, weight, legal, torch.tensor([0, 1, 0, 1]))
    assert torch.equal(samples.policy_weight, weight)
    assert torch.equal(samples.opponent_weight, torch.tensor([0.0, 1.0, 1.0, 0.0]))  # the next move's flag
    assert torch.equal(samples.opponent_policy[:3], policy[1:]) and not samples.opponent_policy[3].any()
    assert not samples.ownership.any() and not samples.score.any()  # tic-tac-toe has neither


def test_self_play_records_and_sends_the_opponent_policy_only_for_a_network_with_its_head():
    config = load_config(game="tictactoe", overrides=["selfplay.games=32", "search.simulations=4"])
    sizes = {}
    for head in (False, True):
        samples, _ = SelfPlay(TTT, small_net(TTT, opponent_policy=head), config.search, config.selfplay,
                              seed=0).run(200, progress=False)
        assert bool(samples.opponent_weight.any()) == head
        # what a self-play actor's chunk costs on the wire to the learner
        sizes[head] = len(pickle.dumps(samples.map(lambda t: t[:200])))
    # 200 opponent-policy rows of 9 floats and their 200 flags: 9,000 bytes
    assert sizes[True] - sizes[False] >= 8000, sizes


def test_joining_samples_keeps_unrecorded_targets_free_and_recorded_ones_exact():
    def part(n, opponent=None):
        return Samples(torch.zeros(n, 2, 3, 3, dtype=torch.uint8), torch.rand(n, 9),
                       torch.ones(n, 9, dtype=torch.bool), torch.zeros(n), opponent_policy=opponent)
    joined = Samples.cat([part(3), part(1), part(0), part(2)])
    assert joined.opponent_policy.shape == (6, 9) and joined.opponent_policy.stride(0) == 0  # one row, shared
    assert not joined.opponent_policy.any() and torch.equal(joined.policy_weight, torch.ones(6))
    recorded = torch.rand(2, 9)
    mixed = Samples.cat([part(3), part(2, recorded)])
    assert mixed.opponent_policy.is_contiguous()
    assert not mixed.opponent_policy[:3].any() and torch.equal(mixed.opponent_policy[3:], recorded)


def test_the_policy_loss_skips_cheap_search_samples_and_the_value_loss_does_not():
    net = small_net(TTT).train()
    state = TTT.initial_state(4)
    legal = TTT.legal_mask(state)
    policy = torch.softmax(torch.randn(4, 9, generator=torch.Generator().manual_seed(0)), dim=1)
    batch = Samples(TTT.encode(state), policy, legal, torch.tensor([1.0, -1.0, 0.0, 1.0]),
                    policy_weight=torch.tensor([1.0, 0.0, 1.0, 0.0]))
    torch.manual_seed(0)
    terms = losses(net, batch)
    logits, _ = net(batch.planes, legal)
    cross_entropy = -(policy * torch.log_softmax(logits, dim=1)).sum(dim=1)
    assert torch.allclose(terms["policy"], (cross_entropy[0] + cross_entropy[2]) / 2)
    other = Samples(batch.planes, policy.flip(1), legal, torch.tensor([1.0, 1.0, 0.0, 1.0]),
                    policy_weight=batch.policy_weight)
    other.policy[0], other.policy[2] = policy[0], policy[2]  # only the cheap rows' targets differ
    changed = losses(net, other)
    assert torch.allclose(changed["policy"], terms["policy"])
    assert not torch.allclose(changed["value"], terms["value"])  # every row trains the value


def test_gumbel_self_play_gives_cheap_moves_a_smaller_gumbel_search():
    config = load_config(game="tictactoe", overrides=[
        "selfplay.games=32", "search.algorithm=gumbel", "search.simulations=16", "search.cheap_simulations=4",
        "search.considered_actions=4", "selfplay.full_search_fraction=0.25"])
    selfplay = SelfPlay(TTT, small_net(TTT), config.search, config.selfplay, seed=2)
    calls = []
    search = selfplay.searcher.gumbel_search

    def recorded(states, keys, simulations, **kwargs):
        calls.append((states.batch_size, simulations))
        return search(states, keys, simulations, **kwargs)

    selfplay.searcher.gumbel_search = recorded
    policy, action, full, _ = selfplay._search()
    assert calls == [(int(full.sum()), 16), (int((~full).sum()), 4)]
    assert torch.allclose(policy.sum(dim=1), torch.ones(32))
    selfplay.step()  # the same move again, now recorded with the roots' legal moves
    assert torch.equal(selfplay.policy_weight[:, 0], full.float())
    assert torch.equal(selfplay.legal[:, 0], TTT.legal_mask(TTT.initial_state(32)))


def test_forced_playouts_are_puct_only():
    with pytest.raises(ConfigError, match="search.forced_playouts is PUCT's"):
        load_config(game="tictactoe", overrides=["search.algorithm=gumbel", "search.forced_playouts=2"])


def test_cheap_simulations_must_be_fewer_than_full_ones():
    with pytest.raises(ConfigError, match="search.cheap_simulations=64 must be fewer than search.simulations=64"):
        load_config(game="gomoku", overrides=["selfplay.full_search_fraction=0.25", "search.cheap_simulations=64"])
    with pytest.raises(ConfigError, match="selfplay.full_search_fraction"):
        load_config(game="gomoku", overrides=["selfplay.full_search_fraction=0"])


# -- forced playouts and policy target pruning -----------------------------------------------------------


def test_forced_visits_are_sqrt_of_k_prior_and_total_visits():
    prior = torch.tensor([[0.5, 0.3, 0.2]])
    visits = torch.tensor([[50.0, 30.0, 20.0]])
    expected = torch.tensor([[math.sqrt(100.0), math.sqrt(60.0), math.sqrt(40.0)]])  # sqrt(2 * P * 100)
    assert torch.allclose(forced_visits(prior, visits, 2.0), expected)


def test_the_root_plays_a_move_short_of_its_forced_visits_first_and_only_at_the_root():
    # PUCT prefers move 0 (score 1.07 against 0.10 and 0.33); move 1 has 4 visits of its
    # sqrt(2 * 0.3 * 43) = 5.08 forced ones, move 2 has 9 of 4.15
    view = NodeView(visits=torch.tensor([44.0]), q=torch.tensor([0.0]),
                    child_visits=torch.tensor([[30.0, 4.0, 9.0]]), child_value_sum=torch.tensor([[24.0, -3.6, 0.0]]),
                    prior=torch.tensor([[0.5, 0.3, 0.2]]), legal=torch.ones(1, 3, dtype=torch.bool),
                    uniform=torch.zeros(1), root=True)
    rule = PUCT(forced_playouts=2.0)
    assert int(PUCT().select(view)) == 0
    assert int(rule.select(view)) == 1 and int(rule.scores(view).argmax()) == 1
    assert int(rule.select(view._replace(root=False))) == 0
    assert int(rule.select(view._replace(legal=torch.tensor([[True, False, True]])))) == 0  # never an illegal move


def test_a_move_never_visited_is_not_forced():
    # KataGo forces only children "that have received any playouts": move 2 (never visited,
    # 0 of its sqrt(2 * 0.1 * 35) = 2.65) is left to PUCT, which prefers move 0 (score 1.12
    # against 0.11 and 0.76); move 1 (5 of 4.58) is not short. Forcing unvisited moves would
    # give every legal move a visit of a small budget, one after another in action order.
    view = NodeView(visits=torch.tensor([44.0]), q=torch.tensor([-0.9]),
                    child_visits=torch.tensor([[30.0, 5.0, 0.0]]), child_value_sum=torch.tensor([[24.0, -3.6, 0.0]]),
                    prior=torch.tensor([[0.6, 0.3, 0.1]]), legal=torch.ones(1, 3, dtype=torch.bool),
                    uniform=torch.zeros(1), root=True)
    rule = PUCT(forced_playouts=2.0)
    assert int(PUCT().select(view)) == 0 and int(rule.select(view)) == 0
    assert math.isfinite(float(rule.scores(view)[0, 2]))
    # a walk in flight through move 2 counts as a visit: now it is short of its forced visits
    in_flight = view._replace(pending=torch.tensor([1.0]), child_pending=torch.tensor([[0.0, 0.0, 1.0]]))
    assert int(rule.select(in_flight)) == 2


def test_walks_in_flight_count_towards_the_forced_visits():
    # Leaf parallelism: two walks of this step are in flight through move 1, so it has 4 + 2 of
    # its sqrt(2 * 0.3 * 45) = 5.20 forced visits and the next walk goes where PUCT says (move 0)
    # instead of piling onto move 1 again; either way of counting the pending visits agrees.
    view = NodeView(visits=torch.tensor([44.0]), q=torch.tensor([0.0]),
                    child_visits=torch.tensor([[30.0, 4.0, 9.0]]), child_value_sum=torch.tensor([[24.0, -3.6, 0.0]]),
                    prior=torch.tensor([[0.5, 0.3, 0.2]]), legal=torch.ones(1, 3, dtype=torch.bool),
                    uniform=torch.zeros(1), root=True)
    in_flight = view._replace(pending=torch.tensor([2.0]), child_pending=torch.tensor([[0.0, 2.0, 0.0]]))
    for virtual_loss in (True, False):
        rule = PUCT(forced_playouts=2.0, virtual_loss=virtual_loss)
        assert int(rule.select(view)) == 1
        assert int(rule.select(in_flight)) == 0 and int(rule.scores(in_flight).argmax()) == 0
    # one walk in flight: 5 of 5.14, still short
    one = view._replace(pending=torch.tensor([1.0]), child_pending=torch.tensor([[0.0, 1.0, 0.0]]))
    assert int(PUCT(forced_playouts=2.0).select(one)) == 1


def test_pruning_a_hand_made_visit_vector():
    """N = 101 root visits, c(N) = 1.25 + ln((101 + 19653) / 19652) = 1.255177, so a move's score is
    q + w P / (1 + n) with w = 2 c(N) sqrt(101) = 25.2288; the best move scores S* = 0.2 + w 0.5 / 61 = 0.406794.
      move 1: n_eq = w 0.3 / (S* - 0.1) - 1 = 23.67, n - n_forced = 25 - sqrt(60) = 17.25 -> 24
      move 2: n_eq = w 0.1 / (S* + 0.5) - 1 = 1.78,  n - n_forced = 10 - sqrt(20) = 5.53  -> 6
      move 3: n_eq = w 0.05 / S* - 1 = 2.10,          n - n_forced = 3 - sqrt(10) < 0      -> 3 (kept: fewer
              visits would make it score above the best move)
      move 4: n_eq = w 0.05 / (S* + 0.9) - 1 < 0,     n - n_forced = 2 - sqrt(10) < 0      -> 0 (pruned)
    """
    visits = torch.tensor([[60.0, 25.0, 10.0, 3.0, 2.0]])
    q = torch.tensor([[0.2, 0.1, -0.5, 0.0, -0.9]])
    prior = torch.tensor([[0.5, 0.3, 0.1, 0.05, 0.05]])
    pruned = prune_forced_visits(visits, q * visits, prior, torch.tensor([101.0]), k=2.0)
    assert pruned.tolist() == [[60.0, 24.0, 6.0, 3.0, 0.0]]
    # with k = 0 nothing is forced and only moves left with a single visit go
    assert prune_forced_visits(visits, q * visits, prior, torch.tensor([101.0]), k=0.0).tolist() == \
        [[60.0, 25.0, 10.0, 3.0, 2.0]]


def test_self_play_targets_take_the_forced_visits_out():
    config = load_config(game="tictactoe", overrides=["selfplay.games=8", "search.simulations=64",
                                                      "search.forced_playouts=2", "search.reuse_tree=false",
                                                      "search.noise_fraction=0"])
    net = small_net(TTT)
    with torch.no_grad():  # a prior of about 0.71 on the centre, 0.036 on each other move
        net.policy_fc.weight.zero_()
        net.policy_fc.bias.copy_(torch.eye(9)[4] * 3.0)
    selfplay = SelfPlay(TTT, net, config.search, config.selfplay, seed=1)
    policy, action, _, _ = selfplay._search()
    tree = selfplay.tree
    raw = tree.root_visits()
    target = prune_forced_visits(raw, tree.child_value_sum[:, 0], tree.prior[:, 0], tree.visits[:, 0], k=2.0)
    assert torch.allclose(policy, target / target.sum(dim=1, keepdim=True))  # the policy target: the pruned visits
    forced = forced_visits(tree.prior[:, 0], raw, 2.0)
    visited = raw > 0
    assert bool((~visited | (raw >= forced.floor())).all())  # every visited move got its forced visits
    assert bool((target <= raw).all()) and bool((target.sum(dim=1) < raw.sum(dim=1)).all())
    assert torch.equal(target.argmax(dim=1), raw.argmax(dim=1))
    assert bool((target.gather(1, action.unsqueeze(1)) > 0).all())  # the move played is one the target keeps

    config.search = config.search.replace(forced_playouts=0.0)  # (the settings are frozen)
    plain = SelfPlay(TTT, net, config.search, config.selfplay, seed=1)
    plain._search()
    unforced = plain.tree.root_visits()

    def beside_the_best(visits):
        return float((visits.sum(dim=1) - visits.amax(dim=1)).sum())

    assert beside_the_best(raw) > beside_the_best(unforced)  # forcing moved visits to the other moves


# -- ownership and score ----------------------------------------------------------------------------------

GO_BOARD = """
. X O . .
X X O . .
. X O . .
X X O O O
. X O . .
"""


def board_of(text: str) -> torch.Tensor:
    rows = [line.split() for line in text.strip().splitlines()]
    return torch.tensor([[{"X": 1, "O": -1, ".": 0}[c] for c in row] for row in rows])


def finished_go():
    """The board above after two passes, komi 0.5: black's area 10 (7 stones, 3 points), white's 15."""
    game = games.make("go", size=5, komi=0.5)
    state = game.from_board(board_of(GO_BOARD), to_play=0)
    for _ in range(2):
        state = game.step(state, torch.tensor([game.pass_action]))
    assert bool(state.done[0])
    return game, state


def test_go_ownership_and_score_targets_of_a_finished_game():
    game, final = finished_go()
    owner = torch.tensor([[1, 1, -1, -1, -1]] * 5, dtype=torch.int8)
    assert torch.equal(game.ownership(final)[0], owner)
    assert game.score(final).tolist() == [10 - 15 - 0.5]
    n = 3
    samples = game_samples(game, final, torch.zeros(n, game.num_planes, 5, 5, dtype=torch.uint8),
                           torch.zeros(n, game.num_actions), torch.ones(n), torch.ones(n, game.num_actions, dtype=torch.bool),
                           torch.tensor([0, 1, 0]))
    assert samples.score.tolist() == [-5.5, 5.5, -5.5]  # each position's player to move's margin
    assert samples.value.tolist() == [-1.0, 1.0, -1.0]
    assert torch.equal(samples.ownership[0], owner) and torch.equal(samples.ownership[1], -owner)


def test_othello_ownership_and_score_targets_of_a_finished_game():
    game = games.make("othello", size=4)
    board = torch.tensor([[1, 1, 1, 1], [1, -1, -1, 1], [1, -1, 1, 1], [-1, -1, 1, 1]])  # full: 11 to 5
    final = game.from_board(board, to_play=0)
    assert bool(final.done[0])
    assert torch.equal(game.ownership(final)[0], board.to(torch.int8))
    samples = game_samples(game, final, torch.zeros(2, game.num_planes, 4, 4, dtype=torch.uint8),
                           torch.zeros(2, game.num_actions), torch.ones(2), torch.ones(2, game.num_actions, dtype=torch.bool),
                           torch.tensor([1, 0]))
    assert samples.score.tolist() == [-6.0, 6.0] and samples.value.tolist() == [-1.0, 1.0]
    assert torch.equal(samples.ownership[0], -board.to(torch.int8))


def test_replay_symmetries_move_ownership_like_boards_and_the_opponent_policy_like_policies():
    game, final = finished_go()
    position = game.from_board(board_of(GO_BOARD), to_play=0)
    planes = game.encode(position).to(torch.uint8)
    target = torch.zeros(1, game.num_actions)
    target[0, 3] = 1.0  # d5, an empty point of white's
    samples = game_samples(game, final, planes.repeat(2, 1, 1, 1), target.repeat(2, 1), torch.ones(2),
                           game.legal_mask(position).repeat(2, 1), torch.tensor([0, 0]))
    buffer = ReplayBuffer(game, capacity=4)
    buffer.add(samples)
    batch = buffer.sample(200, torch.Generator().manual_seed(0), augment=True)
    first = batch.opponent_weight > 0
    assert bool(first.any()) and bool((~first).any())
    own, theirs = batch.planes[:, 0] == 1, batch.planes[:, 1] == 1
    assert bool((batch.ownership[own] == 1).all()) and bool((batch.ownership[theirs] == -1).all())
    assert len({tuple(p.flatten().tolist()) for p in batch.planes[:, :2]}) == 8  # all eight symmetries seen
    assert len({tuple(o.flatten().tolist()) for o in batch.ownership}) == 4  # (its rows are alike: flips up-down keep it)
    cells = batch.policy.argmax(dim=1)
    assert torch.equal(batch.opponent_policy[first].argmax(dim=1), cells[first])
    assert bool((batch.ownership.flatten(1).gather(1, cells.unsqueeze(1)) == -1).all())  # still white's point


def test_a_run_stores_only_the_targets_of_the_heads_its_network_has(tmp_path):
    tiny = tiny_settings({"game.spec": "othello:size=6", "selfplay.games": 4, "selfplay.positions_per_iteration": 40,
                          "search.simulations": 4, "train.min_replay": 16, "train.batch_size": 8,
                          "replay.capacity": 100, "network.blocks": 1, "network.channels": 8,
                          "evaluation.ladder": "[2]", "evaluation.simulations": 2, "evaluation.previous_games": 0})
    plain = load_config(game="othello", overrides=tiny)
    assert stored_fields(plain.network) == ["planes", "policy", "legal", "value", "policy_weight"]
    config = load_config(game="othello", overrides=[*tiny, "network.ownership=true"])
    names = stored_fields(config.network)
    assert names == ["planes", "policy", "legal", "value", "policy_weight", "ownership"]
    said: list[str] = []
    run_dir = train(config, tmp_path / "run", iterations=1, progress=False, command=["test"], log=said.append)
    assert len(chunks(run_dir / "replay")) == 1, (said, sorted(p.name for p in run_dir.rglob("*")))
    ((_, count, path),) = chunks(run_dir / "replay")
    assert set(torch.load(path)) == {"iteration", *names}  # no score, no opponent policy on disk
    buffer = ReplayBuffer(games.make_from_spec("othello:size=6"), 100, names)
    restore(buffer, run_dir / "replay", up_to=1, positions=count)
    assert not hasattr(buffer, "opponent_policy") and bool((buffer.ownership[:count] != 0).any())
    batch = buffer.sample(8, torch.Generator().manual_seed(0))
    assert batch.score.shape == (8,) and not bool(batch.opponent_weight.any())  # defaults: no target


def test_the_score_target_splits_a_half_point_margin_between_its_neighbours():
    target = score_target(torch.tensor([0.5, -3.0, 99.0]), limit=4)
    margins = torch.arange(-4, 5).float()
    assert target[0].tolist() == [0, 0, 0, 0, 0.5, 0.5, 0, 0, 0]
    assert target[1, 1] == 1.0 and target[2, -1] == 1.0  # beyond the board: the last bin
    assert torch.allclose(target.sum(dim=1), torch.ones(3))
    assert torch.allclose((target * margins).sum(dim=1), torch.tensor([0.5, -3.0, 4.0]))


def test_auxiliary_losses_are_zero_only_when_the_heads_predict_their_targets():
    game, final = finished_go()
    net = small_net(game, ownership=True, score=True, opponent_policy=True).train()
    n = 2
    samples = game_samples(game, final, torch.zeros(n, game.num_planes, 5, 5, dtype=torch.uint8),
                           torch.full((n, game.num_actions), 1.0 / game.num_actions), torch.ones(n),
                           torch.ones(n, game.num_actions, dtype=torch.bool), torch.tensor([0, 1]))
    samples.planes = samples.planes.float()
    terms = losses(net, samples, load_config(game="go").train)
    assert {"ownership", "score", "opponent_policy"} <= set(terms)
    expected = terms["policy"] + terms["value"] + 1.5 * terms["ownership"] + 0.02 * terms["score"] \
        + 0.15 * terms["opponent_policy"]
    assert torch.allclose(terms["total"], expected)
    with torch.no_grad():  # an ownership head that says exactly the target: the loss of points owned for sure is ~0
        net.ownership_conv.weight.zero_()
        net.ownership_conv.bias.fill_(20.0)
    one_sided = Samples(samples.planes[:1], samples.policy[:1], samples.legal[:1], samples.value[:1],
                        ownership=torch.ones(1, 5, 5, dtype=torch.int8))
    assert float(losses(net, one_sided)["ownership"].detach()) < 1e-6
    one_sided.ownership = -one_sided.ownership
    assert float(losses(net, one_sided)["ownership"].detach()) > 30.0


# -- the win/draw/loss value ---------------------------------------------------------------------------------


def test_the_wdl_value_is_p_win_minus_p_loss():
    logits = torch.log(torch.tensor([[0.6, 0.1, 0.3], [0.2, 0.5, 0.3]]))
    assert torch.allclose(wdl_value(logits), torch.tensor([0.3, -0.1]))
    assert torch.equal(wdl_target(torch.tensor([1.0, 0.0, -1.0])), torch.eye(3))


def test_the_wdl_loss_of_a_draw_is_minus_log_p_draw():
    net = small_net(TTT, value_head="wdl")
    with torch.no_grad():  # the head says win 1/4, draw 1/2, loss 1/4 whatever the position
        net.value_fc[2].weight.zero_()
        net.value_fc[2].bias.copy_(torch.log(torch.tensor([0.25, 0.5, 0.25])))
    state = TTT.initial_state(2)
    _, value = net(TTT.encode(state), TTT.legal_mask(state))
    assert torch.allclose(value, torch.zeros(2), atol=1e-6)
    draws = Samples(TTT.encode(state), torch.full((2, 9), 1 / 9), TTT.legal_mask(state), torch.zeros(2))
    assert math.isclose(float(losses(net, draws)["value"].detach()), math.log(2), rel_tol=1e-5)
    wins = Samples(draws.planes, draws.policy, draws.legal, torch.ones(2))
    assert math.isclose(float(losses(net, wins)["value"].detach()), math.log(4), rel_tol=1e-5)


# -- the search's value in the value target ------------------------------------------------------------------


def test_the_value_target_mixes_the_outcome_and_the_searchs_value_where_it_was_recorded():
    state = TTT.initial_state(1)
    for action in (0, 3, 1, 4, 2):  # the first player wins on the top row
        state = TTT.step(state, torch.tensor([action]))
    n = 4
    planes = torch.zeros(n, TTT.num_planes, 3, 3, dtype=torch.uint8)
    policy, legal = torch.full((n, 9), 1 / 9), torch.ones(n, 9, dtype=torch.bool)
    to_play = torch.tensor([0, 1, 0, 1])
    searched = torch.tensor([0.2, -0.4, float("nan"), -0.9])  # the third not recorded (a resumed old run)
    outcome = game_samples(TTT, state, planes, policy, torch.ones(n), legal, to_play, search_value=searched)
    assert outcome.value.tolist() == [1.0, -1.0, 1.0, -1.0]  # weight 0: the outcome alone, as AlphaZero
    mixed = game_samples(TTT, state, planes, policy, torch.ones(n), legal, to_play, search_value=searched,
                         search_value_weight=0.25)
    assert torch.allclose(mixed.value, torch.tensor([0.8, -0.85, 1.0, -0.975]))


def test_self_play_trains_the_value_on_the_root_value_of_the_search_it_made():
    state = TTT.initial_state(1)
    for action in (0, 3, 1, 4):  # X to move: 2 wins at once (and O threatens 5)
        state = TTT.step(state, torch.tensor([action]))
    values = {}
    for weight, proofs in ((0.0, True), (1.0, True), (1.0, False)):
        config = load_config(game="tictactoe", overrides=[
            "selfplay.games=1", "search.simulations=200", "search.temperature_moves=0",
            f"selfplay.search_value_weight={weight}", f"search.solver={str(proofs).lower()}",
            f"search.threats={str(proofs).lower()}"])
        selfplay = SelfPlay(TTT, small_net(TTT), config.search, config.selfplay, seed=0)
        selfplay.states = state.clone()
        samples, outcomes = selfplay.step()
        assert outcomes == [(1, 1)]  # X played the win; the one position of this game is X's
        values[weight, proofs] = float(samples.value[0])
    assert values[0.0, True] == 1.0
    # the search's value of a won position: proven, exactly the win's +1 ...
    assert values[1.0, True] == 1.0
    # ... and without proofs, most visits go to the win (+1), a few elsewhere
    assert 0.5 < values[1.0, False] < 1.0


def test_the_recorded_search_values_survive_a_resume_and_older_saves_load_without_them():
    config = load_config(game="tictactoe", overrides=["selfplay.games=4", "search.simulations=8",
                                                      "selfplay.search_value_weight=0.5"])
    selfplay = SelfPlay(TTT, small_net(TTT), config.search, config.selfplay, seed=1)
    for _ in range(3):
        selfplay.step()
    saved = selfplay.state_dict()
    resumed = SelfPlay(TTT, small_net(TTT), config.search, config.selfplay, seed=1)
    resumed.load_state_dict(saved)
    assert torch.equal(resumed.search_value[:, :3], selfplay.search_value[:, :3])
    assert bool(torch.isfinite(resumed.search_value[:, :3]).all())
    del saved["search_value"]
    resumed.load_state_dict(saved)
    assert bool(torch.isnan(resumed.search_value).all())  # their games train on the outcome


def test_the_wdl_target_of_a_mixed_value_is_the_least_decided_distribution_with_that_mean():
    target = wdl_target(torch.tensor([0.5, -0.25, 0.0, 1.0]))
    assert torch.allclose(target, torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.75, 0.25], [0.0, 1.0, 0.0],
                                                [1.0, 0.0, 0.0]]))
    assert torch.allclose(target[:, 0] - target[:, 2], torch.tensor([0.5, -0.25, 0.0, 1.0]))
    net = small_net(TTT, value_head="wdl")
    with torch.no_grad():  # the head says win 1/4, draw 1/2, loss 1/4 whatever the position
        net.value_fc[2].weight.zero_()
        net.value_fc[2].bias.copy_(torch.log(torch.tensor([0.25, 0.5, 0.25])))
    state = TTT.initial_state(2)
    half_won = Samples(TTT.encode(state), torch.full((2, 9), 1 / 9), TTT.legal_mask(state), torch.full((2,), 0.5))
    expected = -(0.5 * math.log(0.25) + 0.5 * math.log(0.5))
    assert math.isclose(float(losses(net, half_won)["value"].detach()), expected, rel_tol=1e-5)


# -- random openings in self-play --------------------------------------------------------------------------


def opening_selfplay(name: str, plies: int, at_once: int, seed: int = 0):
    config = load_config(game=name, overrides=[
        f"selfplay.games={at_once}", "search.algorithm=puct", "search.simulations=4", "search.reuse_tree=false",
        f"selfplay.opening_plies={plies}"])
    game = games.make_from_spec(config.game.spec)
    return SelfPlay(game, small_net(game), config.search, config.selfplay, seed=seed), game


def test_each_self_play_game_opens_with_its_own_number_of_random_moves():
    selfplay, game = opening_selfplay("gomoku", 4, 64)
    plies = selfplay.states.move_number
    assert set(plies.tolist()) == {0, 1, 2, 3, 4}  # drawn uniformly from 0 to 4 for each of 64 games
    assert torch.equal(game.legal_mask(selfplay.states).sum(dim=1), 64 - plies)  # that many stones on 8 x 8
    assert not bool(selfplay.states.done.any())
    boards = game.encode(selfplay.states)
    assert len(torch.unique(boards[plies == 2], dim=0)) > 1  # the same count, different moves
    again, _ = opening_selfplay("gomoku", 4, 64)
    other, _ = opening_selfplay("gomoku", 4, 64, seed=1)
    assert torch.equal(game.encode(again.states), boards)  # each game's key decides its opening
    assert not torch.equal(game.encode(other.states), boards)
    plain, _ = opening_selfplay("gomoku", 0, 8)
    assert int(plain.states.move_number.max()) == 0


def test_opening_moves_are_not_samples_and_restarted_games_open_too():
    selfplay, game = opening_selfplay("tictactoe", 3, 32)
    start = selfplay.states.clone()
    selfplay.step()
    assert int(start.move_number.max()) > 0
    assert torch.equal(selfplay.planes[:, 0], game.encode(start).to(torch.uint8))  # the first sample: the opened board
    resumed, _ = opening_selfplay("tictactoe", 3, 32)
    resumed.load_state_dict(selfplay.state_dict())
    samples, stats = selfplay.run(300, progress=False)
    assert stats.games > 32 and len(samples) == stats.total_length
    opened = selfplay.states.move_number - selfplay.length  # each game in progress: its opening's plies
    restarted = selfplay.game_ids >= 32
    assert bool(((opened >= 0) & (opened <= 3)).all()) and int(opened[restarted].max()) > 0
    again, _ = resumed.run(300, progress=False)  # a resumed run opens its new games as the first did
    assert torch.equal(again.planes, samples.planes) and torch.equal(again.value, samples.value)


def test_an_opening_stops_where_every_legal_move_would_end_the_game():
    selfplay, game = opening_selfplay("tictactoe", 8, 256)
    states, plies = selfplay.states, selfplay.states.move_number
    drawn = (uniform(fold(selfplay._game_keys(selfplay.game_ids), 0x0FE4), (256, 1)).squeeze(1) * 9).long()
    assert not bool(states.done.any()) and bool((plies <= drawn).all())
    stopped = (plies < drawn).nonzero().squeeze(1)
    assert stopped.numel() > 0  # (about one opening of 8 plies in 8: both empty cells complete O's line)
    for row in stopped.tolist():  # every legal move there would end the game
        state = states.take(torch.tensor([row]))
        for move in game.legal_mask(state)[0].nonzero().squeeze(1).tolist():
            assert bool(game.step(state, torch.tensor([move])).done[0])


def test_go_openings_alternate_colours_and_count_their_moves():
    selfplay, game = opening_selfplay("go", 3, 32)
    states = selfplay.states
    assert set(states.move_number.tolist()) == {0, 1, 2, 3}
    assert torch.equal(states.to_play, states.move_number % 2)
    stones = (states.board != 0).flatten(1).sum(dim=1)
    assert bool((stones <= states.move_number).all())  # (a random pass places no stone)
    assert int((stones == states.move_number).sum()) > 16


def test_an_opening_longer_than_the_game_is_one_error_before_any_run_folder(tmp_path):
    config = load_config(game="tictactoe", overrides=["selfplay.opening_plies=9"])
    with pytest.raises(UserError, match="selfplay.opening_plies=9: 9 random opening moves cannot avoid finishing"):
        open_run(config, tmp_path / "run", ["train.py"])
    assert not (tmp_path / "run").exists()


# -- global pooling ------------------------------------------------------------------------------------------


def test_global_pooling_gives_each_channels_mean_then_its_maximum():
    x = torch.arange(8.0).view(1, 2, 2, 2)
    assert global_pool(x).tolist() == [[1.5, 5.5, 3.0, 7.0]]
    assert pooling_blocks(1) == [0] and pooling_blocks(3) == [1] and pooling_blocks(6) == [1, 3, 5]


def test_a_pooling_block_sees_the_whole_board_in_one_step():
    torch.manual_seed(0)
    x = torch.rand(1, 8, 9, 9)
    moved = x.clone()
    moved[0, :, 0, 0] += 1.0
    for block, reaches in ((GlobalPoolingBlock(8, 2).eval(), True), (ResidualBlock(8).eval(), False)):
        with torch.no_grad():
            out, out_moved = block(x), block(moved)
        assert out.shape == x.shape
        assert bool((out[0, :, 8, 8] != out_moved[0, :, 8, 8]).any()) == reaches  # the far corner
    net = PolicyValueNet(NetworkConfig(blocks=3, channels=16, global_pooling=True), TTT)
    assert [type(b) for b in net.trunk] == [ResidualBlock, GlobalPoolingBlock, ResidualBlock]


# -- checkpoints and inference modules -------------------------------------------------------------------------


def test_a_checkpoint_from_before_the_new_heads_loads_and_plays():
    """tests/data/checkpoint-v1-tictactoe.pt was written by azero before these heads (commit 0f1c742);
    its numbers below are what that azero computed for the position after e2... the centre move."""
    data = load_checkpoint(DATA / "checkpoint-v1-tictactoe.pt", game=TTT)
    assert set(data["network"]) == {"blocks", "channels", "value_hidden"}
    game, net = network_from_checkpoint(data)
    assert net.config.value_head == "scalar" and not net.config.global_pooling and not net.config.ownership
    state = game.step(game.initial_state(1), torch.tensor([4]))
    prior, value = NetworkEvaluator(net, game, precision="float32")(state)
    expected = [0.098216906, 0.121746406, 0.116573282, 0.094221309, 0.0, 0.145057648, 0.140672833, 0.144318685,
                0.139192998]
    assert torch.allclose(prior[0], torch.tensor(expected), atol=1e-5)
    assert math.isclose(float(value[0]), -0.06528924, abs_tol=1e-5)  # first player's view: the net says +0.065 for O


def test_checkpoints_record_the_heads_and_rebuild_them(tmp_path):
    game = games.make("go", size=5)
    heads = dict(value_head="wdl", global_pooling=True, ownership=True, score=True, opponent_policy=True)
    net = small_net(game, **heads)
    data = network_checkpoint(net, game, 3)
    assert {key: data["network"][key] for key in heads} == heads
    _, rebuilt = network_from_checkpoint(data)
    planes = calibration_positions(game, 8)
    with torch.no_grad():
        ours, theirs = net.outputs(planes), rebuilt.outputs(planes)
    assert set(ours) == {"policy", "value", "value_logits", "opponent_policy", "ownership_logits", "score_logits"}
    assert ours["score_logits"].shape == (8, 2 * (25 + 8) + 1)  # margins -33..33 at komi 7.5
    for key in ours:
        assert torch.equal(ours[key], theirs[key]), key


@pytest.mark.parametrize("spec", ["go:size=5", "othello:size=6"])
def test_frozen_and_int8_modules_run_networks_with_the_new_heads(spec):
    game = games.make_from_spec(spec)
    net = small_net(game, value_head="wdl", global_pooling=True, ownership=True, score=True, opponent_policy=True)
    state = game.initial_state(32)
    generator = torch.Generator().manual_seed(1)
    for _ in range(4):
        state = game.step(state, games.sample_uniform_legal(game.legal_mask(state), generator))
    planes, legal = game.encode(state), game.legal_mask(state)
    with torch.no_grad():
        logits, value = net(planes, legal)
        out = net.outputs(planes, legal)
    assert torch.equal(logits, out["policy"]) and torch.equal(value, out["value"])
    assert torch.allclose(value, wdl_value(out["value_logits"]))
    eager, eager_value = NetworkEvaluator(net, game, precision="float32")(state)  # a frozen TorchScript module
    first = torch.where(state.to_play == 0, value, -value)
    assert torch.allclose(eager_value, first, atol=1e-5)
    module = Int8Network(net, calibration_positions(game))
    logits8, value8 = module(planes, legal)
    assert (logits8 - logits)[legal].abs().max() < 0.1 * logits[legal].std()
    assert (value8 - value).abs().max() < 2e-2
    prior8, _ = NetworkEvaluator(net, game, precision="int8")(state)
    assert (prior8 - eager).abs().max() < 2e-2


def test_a_head_the_game_lacks_is_one_error_before_any_run_folder(tmp_path):
    with pytest.raises(ConfigError, match="network.ownership: gomoku:size=8,k=5,rule=freestyle has no ownership"):
        load_config(game="gomoku", overrides=["network.ownership=true"])  # scripts/ablate.py's plan fails here
    config = load_config(game="gomoku")
    config.network.ownership = True  # a config made in code: the run refuses it before writing anything
    with pytest.raises(UserError, match="network.ownership: gomoku:size=8,k=5,rule=freestyle has no ownership"):
        open_run(config, tmp_path / "run", ["train.py"])
    assert not (tmp_path / "run").exists()
    with pytest.raises(UserError, match="has no score"):
        PolicyValueNet(NetworkConfig(score=True), games.make("connect4"))
