"""One network for every board size: pooled heads (network.heads = "pooled") evaluate boards of
several sizes of one game, alone or padded into one batch, where each board's outputs do not
depend on the others; the int8 form and checkpoints follow; today's fully connected heads stay
the default."""

from __future__ import annotations

import pytest
import torch

import games
from azero.checkpoint import atomic_save, load_checkpoint, network_checkpoint, network_from_checkpoint
from azero.errors import UserError
from azero.network import NetworkConfig, NetworkEvaluator, PolicyValueNet, pad_boards
from azero.players import parse_spec
from azero.players.az import make_az_player
from azero.quantized import Int8Network, calibration_positions

GOMOKU = {9: games.make("gomoku", size=9, k=5), 15: games.make("gomoku", size=15, k=5)}


def pooled_net(game, **switches) -> PolicyValueNet:
    """A small pooled network in eval mode whose batch norms do something and whose logits spread
    (at initialisation a 1x1 convolution's logits barely differ)."""
    torch.manual_seed(0)
    config = NetworkConfig(blocks=3, channels=16, value_hidden=16, heads="pooled", **switches)
    net = PolicyValueNet(config, game).eval()
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
                module.bias.uniform_(-0.2, 0.2)
        net.heads.policy_points.weight.uniform_(-2.0, 2.0)
    return net


def positions(game, batch: int, seed: int, plies: int = 6):
    """(state, planes float [batch, C, H, W], legal bool [batch, A]) after `plies` random moves."""
    state = game.initial_state(batch)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(plies):
        state = game.step(state, games.sample_uniform_legal(game.legal_mask(state), generator))
    return state, game.encode(state), game.legal_mask(state)


def on_canvas(logits: torch.Tensor, height: int, width: int, canvas_width: int, has_pass: bool) -> torch.Tensor:
    """Logits numbered on a padded batch's tensor (row * canvas_width + col, the pass last) -> the board's own."""
    points = logits[:, : -1 if has_pass else None].unflatten(1, (-1, canvas_width))[:, :height, :width].flatten(1)
    return torch.cat([points, logits[:, -1:]], dim=1) if has_pass else points


def test_one_pooled_network_evaluates_gomoku_9_and_15_in_float32_and_int8():
    net = pooled_net(GOMOKU[9], global_pooling=True)
    for size, game in GOMOKU.items():
        state, planes, legal = positions(game, 32, seed=size)
        with torch.inference_mode():
            logits, value = net(planes, legal)
            logits8, value8 = Int8Network(net, calibration_positions(game))(planes, legal)
        assert logits.shape == (32, size * size) and torch.equal(torch.isinf(logits), ~legal)
        assert (logits8 - logits)[legal].abs().max() < 0.03 * logits[legal].abs().max()
        assert (value8 - value).abs().max() < 5e-3
        exact = torch.softmax(logits, dim=1)
        for precision in ("float32", "bfloat16", "int8"):
            prior, first_value = NetworkEvaluator(net, game, precision=precision)(state)
            assert prior.shape == (32, size * size) and torch.allclose(prior.sum(dim=1), torch.ones(32))
            assert (prior[~legal] == 0).all() and (prior - exact).abs().max() < 0.1 * exact.max(), precision
            sign = torch.where(state.to_play == 0, 1.0, -1.0)
            assert (first_value - sign * value).abs().max() < 2e-2, precision


@pytest.mark.parametrize("spec, sizes", [("gomoku:k=5,", (9, 15)), ("go:", (5, 7))])
def test_a_board_in_a_padded_batch_gets_what_it_gets_alone(spec, sizes):
    """Boards of two sizes padded into one batch: each board's logits (the pass too) and value are
    what it gets alone, and do not change with the other boards of the batch."""
    small_game, large_game = (games.make_from_spec(f"{spec}size={size}") for size in sizes)
    net = pooled_net(small_game, global_pooling=True, value_head="wdl")
    has_pass = small_game.pass_action is not None
    _, small, small_legal = positions(small_game, 3, seed=1, plies=4)
    with torch.no_grad():
        alone_small, alone_small_value = net(small, small_legal)
        for seed in (2, 3):  # two different companions in the batch
            _, large, large_legal = positions(large_game, 2, seed=seed, plies=4)
            alone_large, alone_large_value = net(large, large_legal)
            planes, on_board = pad_boards([small, large])
            logits, value = net(planes, None, on_board)
            width = sizes[1]
            assert torch.allclose(on_canvas(logits[:3], sizes[0], sizes[0], width, has_pass)[small_legal],
                                  alone_small[small_legal], atol=1e-5)
            assert torch.isinf(logits[:3, : width * width][~on_board[:3].flatten(1)]).all()  # off the board
            assert torch.allclose(value[:3], alone_small_value, atol=1e-5)
            assert torch.allclose(logits[3:][large_legal], alone_large[large_legal], atol=1e-5)
            assert torch.allclose(value[3:], alone_large_value, atol=1e-5)
            outputs = net.outputs(planes, None, on_board)
            assert torch.equal(outputs["policy"], logits) and torch.equal(outputs["value"], value)


def test_pooled_networks_rebuild_from_checkpoints_and_fully_connected_stays_the_default(tmp_path):
    net = pooled_net(GOMOKU[9], opponent_policy=True)
    assert net.describe()["network"]["heads"] == "pooled"
    atomic_save(network_checkpoint(net, GOMOKU[9], 3), tmp_path / "pooled.pt")
    _, rebuilt = network_from_checkpoint(load_checkpoint(tmp_path / "pooled.pt"))
    _, planes, legal = positions(GOMOKU[15], 4, seed=5)
    with torch.no_grad():
        ours, theirs = net.outputs(planes, legal), rebuilt.outputs(planes, legal)
    assert set(ours) == {"policy", "value", "opponent_policy"}
    for key in ours:
        assert torch.equal(ours[key], theirs[key]), key
    default = PolicyValueNet(NetworkConfig(), GOMOKU[9])
    assert NetworkConfig().heads == "fully_connected" and "policy_fc.weight" in default.state_dict()


def test_a_pooled_checkpoint_plays_its_game_on_another_board_and_nothing_else(tmp_path):
    """The az: player of a pooled gomoku 9x9 checkpoint plays 15x15 gomoku; not gomoku with k = 6;
    a fully connected checkpoint stays its own size."""
    path = tmp_path / "pooled.pt"
    atomic_save(network_checkpoint(pooled_net(GOMOKU[9]), GOMOKU[9], 1), path)
    player = make_az_player(parse_spec(f"az:{path}:sims=8"), GOMOKU[15])
    state, _, legal = positions(GOMOKU[15], 2, seed=4)
    actions = player.act(state)
    assert legal.gather(1, actions[:, None]).all() and actions.max() < 225
    with pytest.raises(UserError, match=r"is a checkpoint of gomoku:size=9,k=5.*, not of gomoku:size=9,k=6.* "
                                        r"\(its pooled heads play that game on other boards, not another game\)"):
        load_checkpoint(path, game=games.make("gomoku", size=9, k=6))
    fixed = tmp_path / "fixed.pt"
    atomic_save(network_checkpoint(PolicyValueNet(NetworkConfig(blocks=1, channels=8), GOMOKU[9]), GOMOKU[9], 1), fixed)
    with pytest.raises(UserError, match=r"is a checkpoint of gomoku:size=9,k=5,rule=freestyle, not of "
                                        r"gomoku:size=15,k=5,rule=freestyle$"):
        load_checkpoint(fixed, game=GOMOKU[15])


def test_pooled_heads_refuse_what_they_cannot_serve():
    with pytest.raises(UserError, match="network.heads: pooled heads give one output per point of the board "
                                        r"\(and the pass\); connect4:.* has 7 actions for its 6x7 points"):
        PolicyValueNet(NetworkConfig(heads="pooled"), games.make("connect4"))
    with pytest.raises(UserError, match="network.score: the score head's margins follow the board's size"):
        PolicyValueNet(NetworkConfig(heads="pooled", score=True), games.make("go", size=5))
    net = PolicyValueNet(NetworkConfig(blocks=1, channels=8), GOMOKU[9]).eval()
    planes, on_board = pad_boards([positions(GOMOKU[9], 1, seed=0)[1]])
    with pytest.raises(ValueError, match="fully connected heads read boards of one size"):
        net(planes, None, on_board)


def test_a_size_curriculum_hands_a_small_boards_network_to_a_larger_boards_run(tmp_path):
    """train.py --init-from (azero/warm_start.py): a pooled 7x7 gomoku network starts a 9x9 run;
    fully connected heads, bound to their board, are refused."""
    from azero.config import load_config
    from azero.warm_start import read_initial_network, start_network

    small = games.make("gomoku", size=7, k=5)
    config = load_config(game="gomoku", overrides=["game.spec=gomoku:size=9,k=5", "network.heads=pooled"])
    net = PolicyValueNet(config.network, small).eval()
    path = tmp_path / "small.pt"
    atomic_save(network_checkpoint(net, small, 3), path)
    weights = read_initial_network(config, str(path))
    assert weights.origin["game"] == small.spec and weights.origin["iteration"] == 3
    large = PolicyValueNet(config.network, games.make_from_spec(config.game.spec))
    start_network(large, large, weights)
    assert all(torch.equal(a, b) for a, b in zip(net.state_dict().values(), large.state_dict().values()))
    four = games.make("gomoku", size=7, k=4)  # another game of the same kind, not another board
    atomic_save(network_checkpoint(PolicyValueNet(config.network, four), four, 3), path)
    with pytest.raises(UserError, match="is not gomoku:size=9,k=5,rule=freestyle on a board of another size"):
        read_initial_network(config, str(path))
    fixed = load_config(game="gomoku", overrides=["game.spec=gomoku:size=9,k=5"])
    atomic_save(network_checkpoint(PolicyValueNet(fixed.network, small), small, 3), path)
    with pytest.raises(UserError, match="only with pooled heads"):
        read_initial_network(fixed, str(path))


def test_the_gomoku15_preset_starts_from_its_own_preset_on_9x9(tmp_path):
    """docs/training.md's curriculum: a 9x9 run of the gomoku15 preset (--set game.spec=...)
    hands its network to a 15x15 run of the preset (--init-from)."""
    from azero.config import load_config
    from azero.warm_start import read_initial_network, start_network

    nine = load_config(game="gomoku15", overrides=["game.spec=gomoku:size=9,k=5"])
    small = games.make_from_spec(nine.game.spec)
    net = PolicyValueNet(nine.network, small).eval()
    path = tmp_path / "nine.pt"
    atomic_save(network_checkpoint(net, small, 5), path)
    fifteen = load_config(game="gomoku15")
    large = PolicyValueNet(fifteen.network, games.make_from_spec(fifteen.game.spec))
    start_network(large, large, read_initial_network(fifteen, str(path)))
    assert all(torch.equal(a, b) for a, b in zip(net.state_dict().values(), large.state_dict().values()))
