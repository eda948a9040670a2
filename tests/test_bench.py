"""The bench's step profile (`python scripts/bench.py --only step`): its parts add up, and
the library is left as it was found."""

from __future__ import annotations

import games
from azero import network, throughput
from azero.network_search import NetworkSearch
from azero.search import kernels
from games.keyed_random import make_keys
from networks import small_net


def test_the_step_profile_splits_the_search_and_puts_every_timed_call_back():
    game = games.make("tictactoe")
    net = small_net(game)
    originals = (kernels.Walker.gather, kernels.Walker.finish, network.masked_softmax,
                 network.NetworkEvaluator.module)
    profile = throughput._step_profile(game, net, batch=8, sims=6, seconds=0.05, repeats=1)
    for _ in range(2):  # (a load spike during the eight bare passes timed can make them look slow)
        if 0 < profile["efficiency"] < 1:
            break
        profile = throughput._step_profile(game, net, batch=8, sims=6, seconds=0.05, repeats=1)

    parts = profile["parts_ms"]
    for part in ("walks", "network's pass", "bookkeeping and backup", "softmax", "tree refill and root pass"):
        assert parts[part] > 0, part
    # tic-tac-toe (gomoku's rules) expands its new nodes in one compiled pass: no separate parts
    assert parts["expansion in one pass"] > 0
    assert not {"game's step", "positions' copies", "legal moves and result", "encoding"} & set(parts)
    # the parts are inside the step, and the search's own Python between them is what is left
    assert sum(parts.values()) < profile["step_ms"]
    assert profile["other_ms"] > 0
    assert profile["besides_pass_ms"] == profile["step_ms"] - parts["network's pass"]
    assert 0 < profile["efficiency"] < 1

    # nothing timed stays wrapped: the classes, the module and the game have their own again
    assert (kernels.Walker.gather, kernels.Walker.finish, network.masked_softmax,
            network.NetworkEvaluator.module) == originals
    assert not {"step", "legal_mask", "result", "encode", "expand_rows"} & set(vars(game))
    searcher = NetworkSearch(game, net)
    tree = searcher.search(searcher.fresh_tree(game.initial_state(2), make_keys(0, 2), 5), 4)
    assert tree.visits[:, 0].tolist() == [4.0, 4.0]  # four simulations in each tree, searched as before


def test_the_cache_bench_times_both_sides_of_the_same_games():
    """`bench.py --only cache`: self-play with the evaluation cache against without, interleaved;
    on tic-tac-toe the batch's games share their positions, so the table hits."""
    from azero.throughput import bench_cache

    out = bench_cache(0.01, 1, games_at_once=8, entries=1 << 10, presets=("tictactoe",))
    figures = out["tictactoe"]
    assert figures["positions_per_s"] > 0 and figures["uncached_positions_per_s"] > 0
    assert figures["speedup"] == figures["positions_per_s"] / figures["uncached_positions_per_s"]
    assert 0.3 < figures["hit_rate"] <= 1.0  # 8 games from one empty board, 32 simulations a move
    assert figures["megabytes"] == (1 << 10) * (8 + 4 * 10) / 2**20
