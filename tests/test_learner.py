"""The learner's parts: the network fits solved tic-tac-toe; PUCT by hand; root noise; tree reuse;
replay symmetries; checkpoints; configs."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
import torch
from torch.nn import functional as F

import games
from azero.checkpoint import atomic_save, load_checkpoint, network_checkpoint, network_from_checkpoint
from azero.config import ConfigError, load_config
from azero.errors import UserError
from azero.network import NetworkConfig, NetworkEvaluator, PolicyValueNet, auto_precision, masked_softmax
from azero.network_search import NetworkSearch, add_dirichlet_noise
from azero.players import parse_spec
from azero.players.az import make_az_player
from azero.quantized import Int8Network, calibration_positions
from azero.replay import ReplayBuffer
from azero.search import PUCT, new_tree, simulate
from azero.search.tree import subtree
from azero.selfplay import Samples, SelfPlay
from azero.solver import Solver
from azero.trainer import Trainer, learning_rate_factor
from games import State
from games.keyed_random import make_keys
from networks import small_net

TTT = games.make("tictactoe")


# -- learnability --------------------------------------------------------------------------------


def test_network_fits_solved_tictactoe():
    """All 4,520 unfinished positions, targets from exhaustive search: >= 97% of the network's
    top moves are optimal and >= 97% of its values round to the exact value."""
    torch.manual_seed(0)
    solver = Solver(TTT)
    states = solver.positions()
    planes, legal = TTT.encode(states), TTT.legal_mask(states)
    best = solver.best_actions(states).float()
    target_policy = best / best.sum(dim=1, keepdim=True)
    target_value = solver.value(states)
    net = PolicyValueNet(NetworkConfig(blocks=2, channels=64, value_hidden=64), TTT)
    optimizer = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=1e-4)
    n = states.batch_size
    for _ in range(20):  # 99.9% of values and 100% of moves at 20 epochs; 97.5% of values at 15
        net.train()
        for batch in torch.randperm(n).split(128):
            logits, value = net(planes[batch], legal[batch])
            log_probs = F.log_softmax(logits, dim=1).masked_fill(~legal[batch], 0.0)
            loss = -(target_policy[batch] * log_probs).sum(dim=1).mean() + F.mse_loss(value, target_value[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    net.eval()
    with torch.no_grad():
        logits, value = net(planes, legal)
    policy_accuracy = best[torch.arange(n), logits.argmax(dim=1)].mean()
    value_accuracy = (value.round() == target_value).float().mean()
    assert policy_accuracy >= 0.97 and value_accuracy >= 0.97, (float(policy_accuracy), float(value_accuracy))


# -- PUCT by hand ----------------------------------------------------------------------------------


def fake_evaluation(board: tuple, to_play: int, num_actions: int, legal: list[bool]):
    """A deterministic fake network: prior and value (player to move's view) from the board."""
    seed = 17
    for v in board:
        seed = (seed * 31 + v + 2) % 1_000_003
    rng = np.random.default_rng(seed + 7 * to_play)
    logits = rng.normal(size=num_actions)
    prior = np.where(legal, np.exp(logits), 0.0)
    return prior / max(prior.sum(), 1e-30), float(np.tanh(rng.normal()))


class FakeEvaluator:
    """The fake network as a batched evaluator (first player's view, as the engine wants)."""

    def __init__(self, game):
        self.game = game

    def __call__(self, states, keys=None, legal=None):
        legal = self.game.legal_mask(states)
        priors, values = [], []
        for i in range(states.batch_size):
            prior, value = fake_evaluation(tuple(states.board[i].flatten().tolist()), int(states.to_play[i]),
                                           self.game.num_actions, legal[i].tolist())
            priors.append(prior)
            values.append(value * (1 - 2 * int(states.to_play[i])))
        return torch.tensor(np.array(priors), dtype=torch.float32), torch.tensor(values)


class Node:
    """A plain PUCT node: values from the view of the player who moved into it."""

    def __init__(self, state, prior):
        self.state, self.prior = state, prior
        self.children, self.visits, self.value_sum = {}, 0, 0.0


def scalar_puct(game, root_state, simulations, c_init=1.25, c_base=19652.0, fpu_reduction=0.0):
    """PUCT one simulation at a time with the fake network: the hand calculation."""
    evaluator = FakeEvaluator(game)

    def evaluate(state):
        prior, value = evaluator(state)
        return prior[0].double().numpy(), float(value[0])  # value: first player's view

    root = Node(root_state, evaluate(root_state)[0])
    root.mover = 1 - int(root_state.to_play[0])
    for _ in range(simulations):
        node, path = root, [root]
        while True:
            if bool(node.state.done[0]):
                value = float(game.result(node.state)[0])
                break
            chooser = int(node.state.to_play[0])
            sign = 1 - 2 * node.mover
            q_node = node.value_sum / node.visits * sign * (1 - 2 * chooser) if node.visits else 0.0
            fpu = min(max(0.5 * (q_node + 1) - fpu_reduction, 0.0), 1.0)
            n_parent = max(node.visits, 1)
            c = c_init + math.log((n_parent + c_base + 1) / c_base)
            legal = game.legal_mask(node.state)[0]
            best, best_score = None, -math.inf
            for a in range(game.num_actions):
                if not legal[a]:
                    continue
                child = node.children.get(a)
                n = child.visits if child else 0
                q = 0.5 * (child.value_sum / n + 1) if n else fpu
                score = q + c * node.prior[a] * math.sqrt(n_parent) / (1 + n)
                if score > best_score:
                    best, best_score = a, score
            if best in node.children:
                node = node.children[best]
                path.append(node)
                continue
            state = game.step(node.state, torch.tensor([best]))
            prior, value = evaluate(state)
            child = Node(state, prior)
            child.mover = chooser
            node.children[best] = child
            path.append(child)
            if bool(state.done[0]):
                value = float(game.result(state)[0])
            break
        for n in path:
            n.visits += 1
            n.value_sum += value * (1 - 2 * n.mover)
    return [root.children[a].visits if a in root.children else 0 for a in range(game.num_actions)]


@pytest.mark.parametrize("moves", [[], ["b2"], ["a1", "b2", "c3"]])
@pytest.mark.parametrize("fpu_reduction", [0.0, 0.25])
def test_puct_visits_match_the_hand_calculation(moves, fpu_reduction):
    state = TTT.initial_state(1)
    for m in moves:
        state = TTT.step(state, torch.tensor([TTT.parse_action(m)]))
    evaluator = FakeEvaluator(TTT)
    prior, _ = evaluator(state)
    tree = new_tree(TTT, state, 61, make_keys(0, 1), root_prior=prior)
    simulate(tree, TTT, evaluator, PUCT(fpu_reduction=fpu_reduction), 60)
    assert tree.root_visits()[0].long().tolist() == scalar_puct(TTT, state, 60, fpu_reduction=fpu_reduction)


def test_puct_batch_of_three_equals_each_alone():
    g = games.make("gomoku", size=5, k=4)
    a = g.initial_state(1)
    b = g.step(a, torch.tensor([12]))
    c = g.step(b, torch.tensor([0]))
    roots = State.cat([a, b, c])
    evaluator = FakeEvaluator(g)
    prior, _ = evaluator(roots)
    together = simulate(new_tree(g, roots, 41, make_keys(1, 3), root_prior=prior), g, evaluator, PUCT(), 40)
    for i in range(3):
        alone = simulate(new_tree(g, roots[i], 41, make_keys(1, 3)[i:i + 1], root_prior=prior[i:i + 1]),
                         g, evaluator, PUCT(), 40)
        assert torch.equal(alone.root_visits()[0], together.root_visits()[i])


def test_dirichlet_noise_goes_on_the_root_prior_only():
    net = PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), TTT).eval()
    searcher = NetworkSearch(TTT, net)
    roots = TTT.initial_state(4)
    tree = searcher.fresh_tree(roots, make_keys(0, 4), 41)
    clean_root = tree.prior[:, 0].clone()
    noisy = add_dirichlet_noise(clean_root, tree.legal[:, 0], 0.3, 0.25, np.random.default_rng(0))
    tree.prior[:, 0] = noisy
    searcher.search(tree, 40)
    assert not torch.allclose(noisy, clean_root)
    assert torch.allclose(noisy.sum(dim=1), torch.ones(4)) and torch.all(noisy[~tree.legal[:, 0]] == 0)
    # every other node's prior is exactly the network's
    with torch.no_grad():
        for b in range(4):
            for node in range(1, int(tree.next_node[b])):
                state = tree.states.take(torch.tensor([b * tree.capacity + node]))
                logits, _ = net(TTT.encode(state), TTT.legal_mask(state))
                assert torch.allclose(tree.prior[b, node], masked_softmax(logits)[0], atol=1e-6)


def test_reused_subtree_keeps_the_statistics_of_the_move_played():
    g = games.make("gomoku", size=5, k=4)
    evaluator = FakeEvaluator(g)
    roots = g.initial_state(2)
    prior, _ = evaluator(roots)
    tree = simulate(new_tree(g, roots, 101, make_keys(2, 2), root_prior=prior), g, evaluator, PUCT(), 50)
    action = tree.root_visits().argmax(dim=1)
    child = tree.children[torch.arange(2), 0, action].long()
    kept, ok = subtree(tree, action)
    assert ok.all()
    for b in range(2):
        assert torch.equal(kept.child_visits[b, 0], tree.child_visits[b, int(child[b])])
        assert kept.visits[b, 0] == tree.visits[b, int(child[b])]
    assert kept.states.take(torch.arange(2) * kept.capacity).equal(g.step(roots, action))
    simulate(kept, g, evaluator, PUCT(), 50)  # the search continues on the kept tree
    assert torch.all(kept.visits[:, 0] == tree.child_visits[torch.arange(2), 0, action] + 50)


# -- self-play -------------------------------------------------------------------------------------


def test_the_self_play_rate_counts_the_moves_played_not_the_positions_of_games_that_happen_to_finish():
    """Games played in lockstep finish together: an iteration that ends in a burst of finished
    games harvests far more positions than it played, and the rate must not jump with them."""
    # (without the threat search, whose exact tic-tac-toe makes every game nine moves long)
    config = load_config(game="tictactoe", overrides=["selfplay.games=16", "search.simulations=4",
                                                      "search.threats=false"])
    selfplay = SelfPlay(TTT, small_net(TTT), config.search, config.selfplay, seed=0)
    steps = 0
    step = selfplay.step

    def counted_step():
        nonlocal steps
        steps += 1
        return step()

    selfplay.step = counted_step
    counts = []
    for _ in range(4):
        steps = 0
        samples, stats = selfplay.run(1, progress=False)
        assert stats.positions == len(samples) > 0
        assert stats.moves == 16 * steps  # every game's move, finished or not
        rate = stats.summary()["charts/selfplay_positions_per_s"]
        assert rate == pytest.approx(stats.moves / stats.seconds)
        counts.append((stats.positions, stats.moves))
    # games of 5-9 moves started together: the first iteration plays at least 5 moves in each
    # game before one ends; a later one can end in one move that finishes several games
    assert counts[0][0] < counts[0][1]
    assert any(positions > moves for positions, moves in counts[1:])


# -- replay ----------------------------------------------------------------------------------------


def test_replay_is_a_bounded_ring_and_symmetries_move_planes_and_policy_together():
    g = games.make("gomoku", size=5, k=4)
    buffer = ReplayBuffer(g, capacity=10)
    state = g.step(g.initial_state(1), torch.tensor([1]))  # a stone off the diagonals
    planes = g.encode(state).to(torch.uint8)
    policy = torch.zeros(1, 25)
    policy[0, 1] = 1.0  # the policy points at the stone
    for i in range(13):
        buffer.add(Samples(planes, policy, g.legal_mask(state), torch.tensor([float(i)])))
    assert len(buffer) == 10 and buffer.total_added == 13
    assert sorted(buffer.value.tolist()) == [float(i) for i in range(3, 13)]
    batch = buffer.sample(200, torch.Generator().manual_seed(0), augment=True)
    x, p, legal = batch.planes, batch.policy, batch.legal
    stone_cells = x[:, 1].flatten(1).argmax(dim=1)  # opponent plane: the stone
    assert torch.equal(p.argmax(dim=1), stone_cells)  # policy moved with the planes
    assert len(set(stone_cells.tolist())) > 2  # and symmetries were applied
    assert not legal[torch.arange(200), stone_cells].any()


# -- checkpoints and players ----------------------------------------------------------------------


def test_checkpoints_describe_themselves_and_bad_files_are_one_line_errors(tmp_path):
    net = PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), TTT).eval()
    path = tmp_path / "net.pt"
    atomic_save(network_checkpoint(net, TTT, 3), path)
    game, loaded = network_from_checkpoint(load_checkpoint(path))
    assert game == TTT and loaded.config.channels == 8
    x = TTT.encode(TTT.initial_state(2))
    assert torch.allclose(net(x)[0], loaded(x)[0])
    player = make_az_player(parse_spec(f"az:{path}:sims=8"), TTT)
    assert int(player.act(TTT.initial_state(1))) in range(9)

    with pytest.raises(UserError, match="not of gomoku"):
        load_checkpoint(path, game=games.make("gomoku", size=5, k=4))
    damaged = tmp_path / "damaged.pt"
    damaged.write_bytes(path.read_bytes()[:200])
    with pytest.raises(UserError, match="damaged or truncated"):
        load_checkpoint(damaged)
    with pytest.raises(UserError, match="not found"):
        load_checkpoint(tmp_path / "missing.pt")
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(3)}, other)
    with pytest.raises(UserError, match="not an azero checkpoint"):
        load_checkpoint(other)


# -- configs ---------------------------------------------------------------------------------------


def test_configs_layer_presets_and_overrides_and_name_bad_keys():
    config = load_config(game="tictactoe", overrides=["search.simulations=50", "evaluation.ladder=[10, 20]"])
    assert config.game.spec == "tictactoe" and config.search.simulations == 50
    assert config.evaluation.ladder == [10, 20] and config.network.blocks == 2
    with pytest.raises(ConfigError, match="unknown key search.sims; valid keys of \\[search\\]: algorithm, simulations"):
        load_config(game="tictactoe", overrides=["search.sims=3"])
    with pytest.raises(ConfigError, match="unknown section \\[serch\\]"):
        load_config(game="tictactoe", overrides=["serch.simulations=3"])
    with pytest.raises(ConfigError, match="choose one of: adamw, sgd"):
        load_config(game="tictactoe", overrides=["train.optimizer=adam"])
    with pytest.raises(ConfigError, match="not a valid int"):
        load_config(game="tictactoe", overrides=["selfplay.games=many"])
    with pytest.raises(ConfigError, match=r"search.simulations=0 is out of range; allowed: 1\.\.100000000"):
        load_config(game="tictactoe", overrides=["search.simulations=0"])
    with pytest.raises(ConfigError, match=r"evaluation.games=1000000000000 is out of range; allowed: 2..1000000"):
        load_config(game="tictactoe", overrides=["evaluation.games=1000000000000"])
    with pytest.raises(ConfigError, match=r"evaluation.max_share=1.5 is out of range; allowed: 0..1"):
        load_config(game="tictactoe", overrides=["evaluation.max_share=1.5"])
    with pytest.raises(ConfigError, match="no preset for game 'chess'"):
        load_config(game="chess")


def test_every_preset_loads_and_builds_its_game():
    from azero.config import CONFIG_DIR

    presets = sorted(CONFIG_DIR.glob("*.toml"))
    assert {p.stem for p in presets} >= {"gomoku", "gomoku15", "tictactoe", "connect4", "othello", "nim", "go"}
    for preset in presets:
        config = load_config(path=preset)
        game = games.make_from_spec(config.game.spec)
        PolicyValueNet(config.network, game)


def test_the_search_sees_the_network_as_it_is_after_every_training_step():
    """The evaluator's frozen inference module agrees with the network, and follows its weights."""
    game = games.make("gomoku", size=6, k=4)
    torch.manual_seed(0)
    net = PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), game).eval()
    evaluator = NetworkEvaluator(net, game)
    state = game.initial_state(5)
    state = game.step(state, torch.tensor([0, 7, 14, 21, 35]))

    def eager():
        with torch.inference_mode():
            logits, value = net(game.encode(state), game.legal_mask(state))
        return masked_softmax(logits), value * (1.0 - 2.0 * state.to_play.float())

    for _ in range(2):
        prior, value = evaluator(state)
        expected_prior, expected_value = eager()
        assert torch.allclose(prior, expected_prior, atol=1e-6)
        assert torch.allclose(value, expected_value, atol=1e-6)
        threads = torch.get_num_threads()
        one_prior, one_value = evaluator(state[2])  # one position: its own frozen module, on one thread
        assert torch.get_num_threads() == threads  # and the process's setting is back
        assert torch.allclose(one_prior, expected_prior[2:3], atol=1e-6)
        assert torch.allclose(one_value, expected_value[2:3], atol=1e-6)
        net.train()  # one optimizer step, as the trainer takes them
        optimizer = torch.optim.SGD(net.parameters(), lr=0.5)
        logits, value = net(game.encode(state).float(), game.legal_mask(state))
        (value.sum() - torch.log_softmax(logits.masked_fill(~game.legal_mask(state), -1e9), 1)[:, 20].sum()).backward()
        optimizer.step()
        net.eval()
        assert not torch.allclose(evaluator(state)[1], expected_value, atol=1e-4)  # not the old weights


def test_a_search_looks_its_module_up_once_and_the_next_search_sees_new_weights():
    game = games.make("gomoku", size=6, k=4)
    torch.manual_seed(0)
    net = PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), game).eval()
    searcher = NetworkSearch(game, net)
    roots = game.step(game.initial_state(5), torch.tensor([0, 7, 14, 21, 35]))
    evaluator, checks = searcher.evaluator, []
    versions = evaluator._weights_version
    evaluator._weights_version = lambda: checks.append(1) or versions()

    def searched_prior():
        tree = searcher.fresh_tree(roots, make_keys(0, 5), 17)
        before = len(checks)
        searcher.search(tree, 16)
        assert len(checks) - before == 1  # 16 evaluations of the leaves, one look at the weights
        return tree.prior[:, 1], tree.states.take(torch.arange(5) * 17 + 1)

    prior, leaves = searched_prior()
    assert torch.allclose(prior, NetworkEvaluator(net, game)(leaves)[0], atol=1e-6)
    with torch.no_grad():  # new weights between two searches (a training step, a weight update)
        for weight in net.parameters():
            weight.mul_(1.5)
    new_prior, leaves = searched_prior()
    assert torch.allclose(new_prior, NetworkEvaluator(net, game)(leaves)[0], atol=1e-6)
    assert not torch.allclose(new_prior, prior, atol=1e-3)


def test_bfloat16_inference_stays_close_to_float32_and_auto_chooses_by_batch():
    """The search may run the network in bfloat16; its priors and values stay within 2e-2 of float32."""
    game = games.make("gomoku", size=8, k=5)
    torch.manual_seed(0)
    net = PolicyValueNet(NetworkConfig(blocks=2, channels=16, value_hidden=16), game).eval()
    state = game.initial_state(32)
    state = game.step(state, torch.arange(32))
    exact = NetworkEvaluator(net, game, precision="float32")
    approx = NetworkEvaluator(net, game, precision="bfloat16")
    prior, value = exact(state)
    prior16, value16 = approx(state)
    assert prior16.dtype == torch.float32 and value16.dtype == torch.float32
    assert torch.allclose(prior16.sum(dim=1), torch.ones(32))
    assert (prior16[game.legal_mask(state).logical_not()] == 0).all()
    assert (prior16 - prior).abs().max() < 2e-2
    assert (value16 - value).abs().max() < 2e-2
    assert approx.precision_for(1) == "bfloat16" and exact.precision_for(1024) == "float32"
    auto = NetworkEvaluator(net, game)
    assert auto.precision_for(1) == "float32"  # one position at a time: play and analysis keep float32
    assert auto.precision_for(128) == auto_precision("cpu")
    net.train()
    assert auto.precision_for(128) == "float32"  # the trainer's forward passes are float32
    net.eval()
    with pytest.raises(ValueError, match="precision must be one of auto, float32, bfloat16, int8"):
        NetworkEvaluator(net, game, precision="half")
    with pytest.raises(ValueError, match="int8 runs on the CPU only"):
        NetworkEvaluator(net, game, device="cuda", precision="int8")


@pytest.mark.parametrize("vnni, bf16, avx2, expected", [
    (True, True, True, "int8"),  # Zen 4, Sapphire Rapids
    (True, False, True, "int8"),  # Ice Lake, Zen 5 without BF16 exposed
    (False, True, True, "bfloat16"),
    (False, False, True, "int8"),  # Zen 3, Haswell..Skylake: int8 ran 2-3x float32 on a Zen 3
    (False, False, False, "float32"),  # no fast int8 kernels, no bfloat16
])
def test_auto_precision_takes_the_fastest_arithmetic_the_cpu_has(monkeypatch, vnni, bf16, avx2, expected):
    """auto's order: int8 with VNNI, then native bfloat16, then int8 on AVX2, then float32; GPUs float32."""
    import azero.network as network

    monkeypatch.setattr(network, "native_int8", lambda: vnni)
    monkeypatch.setattr(network, "native_bfloat16", lambda: bf16)
    monkeypatch.setattr(network, "fast_int8", lambda: vnni or avx2)
    assert auto_precision("cpu") == expected
    assert auto_precision("cuda") == "float32"
    game = games.make("tictactoe")
    evaluator = NetworkEvaluator(PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), game).eval(), game)
    assert evaluator.precision_for(64) == expected and evaluator.precision_for(1) == "float32"


def test_fast_int8_reads_the_cpu_flags(monkeypatch):
    """AVX2 or a VNNI flag makes int8 fast, only VNNI makes it native (256 levels); none, neither."""
    import azero.quantized as quantized

    monkeypatch.setattr(quantized, "int8_runs", lambda: True)
    for flags, fast, native in [({"avx2", "fma"}, True, False), ({"avx2", "avx512_vnni"}, True, True),
                                ({"avx_vnni"}, True, True), ({"sse4_2"}, False, False), (set(), False, False)]:
        monkeypatch.setattr(quantized, "_cpu_flags", lambda flags=flags: flags)
        quantized.fast_int8.cache_clear(), quantized.native_int8.cache_clear()
        assert (quantized.fast_int8(), quantized.native_int8()) == (fast, native), flags
    monkeypatch.setattr(quantized, "int8_runs", lambda: False)  # no x86 engine (e.g. ARM's qnnpack)
    quantized.fast_int8.cache_clear(), quantized.native_int8.cache_clear()
    assert not quantized.fast_int8() and not quantized.native_int8()
    quantized.fast_int8.cache_clear(), quantized.native_int8.cache_clear()


@pytest.mark.parametrize("spec", ["gomoku:size=8,k=5", "connect4", "othello", "go:size=7"])
def test_int8_inference_follows_the_float32_network(spec):
    """Int8 logits stay within a tenth of their spread of float32's (a mis-wired head is off by
    more than their whole spread), values within 5e-3, priors sum to one over legal moves only."""
    game = games.make_from_spec(spec)
    net = small_net(game)
    state = game.initial_state(64)
    generator = torch.Generator().manual_seed(1)
    for _ in range(6):
        state = game.step(state, games.sample_uniform_legal(game.legal_mask(state), generator))
    planes, legal = game.encode(state), game.legal_mask(state)
    module = Int8Network(net, calibration_positions(game))
    with torch.inference_mode():
        logits, value = net(planes, legal)
        logits8, value8 = module(planes, legal)
    assert logits8.dtype == torch.float32 and value8.shape == value.shape
    assert torch.equal(torch.isinf(logits8), ~legal)
    assert (logits8 - logits)[legal].abs().max() < 0.1 * logits[legal].std()
    assert (value8 - value).abs().max() < 5e-3
    # through the evaluator (first player's view, probabilities)
    prior, first_value = NetworkEvaluator(net, game, precision="float32")(state)
    prior8, first_value8 = NetworkEvaluator(net, game, precision="int8")(state)
    assert torch.allclose(prior8.sum(dim=1), torch.ones(64))
    assert (prior8[~legal] == 0).all()
    assert (prior8 - prior).abs().max() < 2e-2 and (first_value8 - first_value).abs().max() < 5e-3


def test_int8_module_depends_on_the_weights_only_and_follows_them():
    """Whatever batch builds it, the int8 module gives the same outputs (a resumed run builds the
    same one); after a training step it is rebuilt; planes that are not whole numbers are scaled."""
    game = games.make("gomoku", size=8, k=5)
    net = small_net(game)
    opening = game.initial_state(32)
    later = game.step(opening, torch.arange(32))
    one, two = NetworkEvaluator(net, game, precision="int8"), NetworkEvaluator(net, game, precision="int8")
    one(opening)  # built on a batch of empty boards
    first = one(later)
    assert torch.equal(first[0], two(later)[0]) and torch.equal(first[1], two(later)[1])
    with torch.no_grad():
        net.value_fc[2].bias.add_(0.5)  # as an optimizer step writes the weights
    moved = one(later)[1]
    assert ((moved - first[1]).abs() > 1e-3).all(), "the module was not rebuilt for the new weights"
    module = Int8Network(net, calibration_positions(game) * 0.5)
    assert not module.whole_planes
    with torch.inference_mode():
        _, value = net(game.encode(later) * 0.5)
        _, value8 = module(game.encode(later) * 0.5)
    assert (value8 - value).abs().max() < 5e-3
    # CPUs without VNNI get 128 activation levels (16-bit pair sums must not overflow)
    coarse = Int8Network(net, calibration_positions(game), levels=127)
    with torch.inference_mode():
        _, value = net(game.encode(later))
        _, value7 = coarse(game.encode(later))
    assert (value7 - value).abs().max() < 1e-2


def test_calibration_positions_cover_every_depth_and_never_a_finished_game():
    game = games.make("tictactoe")
    planes = calibration_positions(game, count=40)
    stones = planes[:, :2].sum(dim=(1, 2, 3))  # both players' stones
    assert stones.min() == 0 and stones.max() == game.num_actions // 2
    assert torch.equal(planes, calibration_positions(game, count=40)), "a fixed seed: the same positions"


def _random_buffer(n: int = 512) -> ReplayBuffer:
    """n tic-tac-toe samples of random planes, policies and values."""
    generator = torch.Generator().manual_seed(0)
    buffer = ReplayBuffer(TTT, 1024)
    planes = (torch.rand(n, TTT.num_planes, 3, 3, generator=generator) < 0.3).to(torch.uint8)
    policy = torch.softmax(torch.randn(n, 9, generator=generator), dim=1)
    buffer.add(Samples(planes, policy, torch.ones(n, 9, dtype=torch.bool), torch.rand(n, generator=generator) * 2 - 1))
    return buffer


def test_bfloat16_autocast_training_follows_float32_and_float16_needs_a_gpu():
    """train.mixed_precision: the same steps under bfloat16 autocast stay close to float32's losses
    and keep float32 weights; auto is float32 on a CPU; float16 on a CPU is refused."""
    from azero.trainer import autocast_dtype

    config = load_config(game="tictactoe", overrides=["train.batch_size=64"])
    buffer = _random_buffer()
    results = {}
    for mode in ("off", "bfloat16"):
        torch.manual_seed(0)
        net = PolicyValueNet(config.network, TTT).eval()
        config.train.mixed_precision = mode
        trainer = Trainer(net, config.train)
        results[mode] = [trainer.train(buffer, 10, torch.Generator().manual_seed(1), progress=False)["losses/total"]
                         for _ in range(3)]
        assert all(p.dtype == torch.float32 for p in net.parameters())
    assert results["bfloat16"][-1] < results["bfloat16"][0]
    assert all(abs(a - b) < 0.05 * a for a, b in zip(results["off"], results["bfloat16"]))
    assert autocast_dtype("auto", "cpu") is None and autocast_dtype("bfloat16", "cpu") == torch.bfloat16
    with pytest.raises(UserError, match="float16 runs on a GPU only"):
        autocast_dtype("float16", "cpu")


def test_the_weight_average_is_the_exponential_moving_average_of_the_trained_weights():
    """train.ema_decay d: after every gradient step the network that plays holds
    d * its old weights + (1 - d) * the trained weights (batch-norm statistics too); the
    optimizer never touches it. Its trainer state round-trips: a trainer restored from it
    continues exactly as the original does."""
    config = load_config(game="tictactoe", overrides=["train.batch_size=32", "train.ema_decay=0.75"])
    buffer = _random_buffer()
    torch.manual_seed(0)
    net = PolicyValueNet(config.network, TTT).eval()
    trainer = Trainer(net, config.train)
    assert trainer.model is not net
    expected = {k: v.clone() for k, v in net.state_dict().items()}
    evaluator = NetworkEvaluator(net, TTT)  # as self-play's search holds the network
    position = TTT.initial_state(4)
    before = evaluator(position)[0].clone()
    generator = torch.Generator().manual_seed(1)
    for _ in range(3):  # one step at a time, to follow the average by hand
        trainer.train(buffer, 1, generator, progress=False)
        for key, trained in trainer.model.state_dict().items():
            expected[key] = 0.75 * expected[key] + 0.25 * trained if trained.is_floating_point() else trained.clone()
    averaged = net.state_dict()
    for key in expected:
        torch.testing.assert_close(averaged[key], expected[key], rtol=1e-5, atol=1e-6)
    moved = [key for key in expected if expected[key].is_floating_point()
             and not torch.equal(averaged[key], trainer.model.state_dict()[key])]
    assert len(moved) > len(expected) // 2, "the average differs from the trained weights"
    assert not torch.allclose(evaluator(position)[0], before, atol=1e-5), "the search sees the average move"

    saved = io.BytesIO()
    torch.save(trainer.state_dict(), saved)  # as a checkpoint does: nothing shared with the live trainer
    state = torch.load(io.BytesIO(saved.getvalue()), weights_only=True)
    assert set(state["model"]) == set(net.state_dict())
    torch.manual_seed(1)
    copy = PolicyValueNet(config.network, TTT).eval()
    copy.load_state_dict(net.state_dict())  # as a run restores: the checkpoint's network first
    restored = Trainer(copy, config.train)
    restored.load_state_dict(state)
    trainer.train(buffer, 2, torch.Generator().manual_seed(2), progress=False)
    restored.train(buffer, 2, torch.Generator().manual_seed(2), progress=False)
    for key, value in net.state_dict().items():
        assert torch.equal(value, copy.state_dict()[key]), key


def test_without_the_weight_average_the_trainer_fits_the_network_itself():
    config = load_config(game="tictactoe", overrides=["train.batch_size=32"])
    net = PolicyValueNet(config.network, TTT).eval()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    trainer = Trainer(net, config.train)
    assert trainer.model is net and "model" not in trainer.state_dict()
    trainer.train(_random_buffer(), 2, torch.Generator().manual_seed(1), progress=False)
    assert not all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    with pytest.raises(ConfigError, match="train.ema_decay=1.0 must be below 1"):
        load_config(game="tictactoe", overrides=["train.ema_decay=1"])


def test_learning_rate_schedules_by_hand():
    """train.schedule: step multiplies by decay_factor every decay_every iterations; cosine
    falls from 1 to min/peak along half a cosine over schedule_iterations, or over
    schedule_minutes of the run's clock when that is set, and stays at its floor after."""
    step = load_config(game="tictactoe", overrides=["train.schedule=step", "train.decay_every=50",
                                                    "train.decay_factor=0.3"]).train
    assert [learning_rate_factor(step, i) for i in (0, 49, 50, 120)] == pytest.approx([1, 1, 0.3, 0.09])
    by_iterations = load_config(game="tictactoe", overrides=[
        "train.schedule=cosine", "train.learning_rate=0.002", "train.min_learning_rate=0.0002",
        "train.schedule_iterations=100"]).train
    assert [learning_rate_factor(by_iterations, i, seconds=1e9) for i in (0, 25, 50, 100, 300)] == pytest.approx(
        [1.0, 0.1 + 0.9 * (1 + math.cos(math.pi / 4)) / 2, 0.55, 0.1, 0.1])
    by_minutes = load_config(game="tictactoe", overrides=[
        "train.schedule=cosine", "train.learning_rate=0.002", "train.min_learning_rate=0.0002",
        "train.schedule_minutes=60"]).train
    assert [learning_rate_factor(by_minutes, 1000, seconds=60 * m) for m in (0, 15, 30, 60, 90)] == pytest.approx(
        [1.0, 0.1 + 0.9 * (1 + math.cos(math.pi / 4)) / 2, 0.55, 0.1, 0.1])

    net = PolicyValueNet(load_config(game="tictactoe").network, TTT)
    trainer = Trainer(net, by_minutes)
    assert trainer.learning_rate == pytest.approx(0.002)
    trainer.end_iteration(seconds=30 * 60)
    assert trainer.learning_rate == pytest.approx(0.0011)
    restored = Trainer(net, by_minutes)  # a resumed run: the rate it had, from the saved clock
    restored.load_state_dict(trainer.state_dict())
    assert restored.learning_rate == pytest.approx(0.0011) and restored.seconds == 30 * 60
    older = {key: value for key, value in trainer.state_dict().items() if key != "seconds"}
    restored.load_state_dict(older)  # a checkpoint from before the clock was saved: the clock's start
    assert restored.learning_rate == pytest.approx(0.002)
    with pytest.raises(ConfigError, match="train.schedule_minutes is the cosine schedule's length; "
                                          "train.schedule is 'constant'"):
        load_config(game="tictactoe", overrides=["train.schedule_minutes=60"])


def test_a_run_decays_its_learning_rate_by_its_own_clock(tmp_path):
    """A run's iterations hand the trainer the run's clock: with a cosine schedule of a
    moment's length the second iteration trains at the floor; the clock is saved with the
    trainer and never runs ahead of the run's."""
    from azero.loop import train
    from runs import tiny_settings

    config = load_config(game="tictactoe", overrides=tiny_settings({
        "train.schedule": "cosine", "train.schedule_minutes": 1e-6, "train.learning_rate": 0.002,
        "train.min_learning_rate": 0.0001}))
    run_dir = train(config, tmp_path / "run", iterations=2, progress=False, command=["test"], log=lambda _: None)
    rates = [json.loads(line)["charts/learning_rate"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert rates == pytest.approx([0.002, 0.0001])
    data = torch.load(run_dir / "latest.pt", weights_only=True)
    assert 0 < data["trainer"]["seconds"] <= data["elapsed"]
