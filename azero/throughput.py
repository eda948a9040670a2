"""Throughput figures, printed as one JSON object by `python scripts/bench.py`.

Every figure is a rate (things per second of wall time), the median of a few
timed repeats. Speed claims are ratios of two figures measured in the
same run (ours over a plain-Python baseline), because the machines are shared
and noisy; the ratios are in the output too, and the repeats of a ratio's two
sides are interleaved (A B A B A B) so that both see the same machine.

Groups (choose with --only):
  game_steps_per_s  random play with game.step at batch 1 and 1024, every game;
                    gomoku also with a plain-Python one-board reference
  uct               random-rollout UCT iterations per second, batched and the scalar
                    reference, on 8x8 five-in-a-row and on tic-tac-toe
  puct              PUCT simulations/s with the default gomoku network at the self-play batch,
                    the same network's bare forward passes/s, and their ratio (efficiency); the
                    same for a network 4x faster (`fast_network`: a quarter of the channels);
                    each search refills the last one's tree, as self-play keeps its trees
  step              where a step of that search goes (both networks): milliseconds a step in
                    each part (the walks, the positions' copies, the game's step, legal moves
                    and result, encoding, the network's pass, softmax, bookkeeping, backup,
                    the tree's refill with its root pass), beside a bare pass of the network
  uct_one_game      one game of 8x8 five in a row from the empty board, 5,000 rollout-UCT
                    iterations a move: leaf-parallel (the player's default) and sequential
                    iterations/s against the plain-Python reference's
  puct_one_game     one game with the default gomoku network, 800 simulations a move:
                    leaf-parallel (the player's default) and sequential simulations/s against
                    the network's own evaluations/s at the leaf batch
  overhead          PUCT with a trivial evaluator (uniform priors, zero values) at batch 256,
                    tic-tac-toe and Connect Four: our simulations/s and mctx's on JAX over pgx's
                    games, interleaved, each search on a fresh tree (ours refills the last
                    search's arrays, as our players do; mctx's side needs `pip install -e
                    '.[compare]'`)
  selfplay          self-play positions/s, batched and one game with one leaf per network call
  train             training samples/s
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import time
from pathlib import Path
from typing import Callable

import torch

import games
from games.keyed_random import fold, make_keys

from . import reference
from .players.uct import UCTPlayer


def _timed(work: Callable[[], float], seconds: float) -> float:
    """(units of work done) / (wall time) over one repeat at least `seconds` long."""
    done, start = 0.0, time.perf_counter()
    while True:
        done += work()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def rate(work: Callable[[], float], *, seconds: float, repeats: int) -> float:
    """Median over `repeats` of (units of work done) / (wall time), each repeat at least `seconds` long."""
    return rates(work, seconds=seconds, repeats=repeats)[0]


def rates(*works: Callable[[], float], seconds: float, repeats: int) -> list[float]:
    """The median rate of each work, their repeats interleaved (A B A B ...), so that the
    two sides of a ratio see the same machine: a shared machine's speed drifts by tens of
    percent over a minute."""
    for work in works:
        work()  # warm up
    runs: list[list[float]] = [[] for _ in works]
    for _ in range(repeats):
        for work, out in zip(works, runs):
            out.append(_timed(work, seconds))
    return [statistics.median(out) for out in runs]


def random_play_stepper(game, batch: int, seed: int = 0) -> Callable[[], float]:
    """A closure that plays one random ply in `batch` games and returns how many games moved.

    Finished games restart in place, in groups of at least 1/64 of the batch (a restart
    is a dozen whole-batch operations whatever its size); until then they sit the plies
    out (their action is "none") and do not count as steps.
    """
    state = game.initial_state(batch)
    keys = make_keys(seed, batch)
    fresh = game.initial_state(batch)
    restart_at = max(1, batch // 64)
    counter, waiting = 0, 0

    def work() -> float:
        nonlocal state, counter, waiting
        moved = batch - waiting
        action = games.sample_uniform_legal(game.legal_mask(state), fold(keys, counter))
        state = game.step(state, action)
        counter += 1
        finished = state.done.nonzero().squeeze(1)
        waiting = finished.numel()
        if waiting >= restart_at:
            state.put_(finished, fresh[:waiting])
            waiting = 0
        return float(moved)

    return work


def python_gomoku_stepper(height=15, width=15, k=5, seed=0) -> Callable[[], float]:
    """Random play with the plain-Python one-board rules, restarting finished games."""
    rng = random.Random(seed)
    board = [reference.PyGomoku(height, width, k)]

    def work() -> float:
        steps = 0
        for _ in range(100):
            s = board[0]
            if s.terminal():
                s = board[0] = reference.PyGomoku(height, width, k)
            s.do(rng.choice(s.moves()))
            steps += 1
        return float(steps)

    return work


BENCH_GAMES = ("gomoku", "tictactoe", "connect4", "othello", "nim", "go")


def bench_game_steps(seconds: float, repeats: int) -> dict:
    out: dict = {}
    for name in BENCH_GAMES:
        game = games.make(name)
        works = [random_play_stepper(game, 1), random_play_stepper(game, 1024)]
        if name == "gomoku":  # the plain-Python reference, interleaved with the batched side of its ratio
            works.append(python_gomoku_stepper())
        out[name] = dict(zip(("b1", "b1024", "python_reference"), rates(*works, seconds=seconds, repeats=repeats)))
    gomoku = out["gomoku"]
    gomoku["speedup"] = gomoku["b1024"] / gomoku["python_reference"]
    return out


def acting(player, roots, budget: int) -> Callable[[], float]:
    """A closure: `player` moves once in every game of `roots` (new random keys each call);
    returns the searches' budget, `budget` a game."""
    calls = [0]

    def work() -> float:
        player.act(roots, keys=fold(make_keys(0, roots.batch_size), calls[0]))
        calls[0] += 1
        return float(roots.batch_size * budget)

    return work


def bench_uct(seconds: float, repeats: int, *, batch: int = 1024, iterations: int = 200) -> dict:
    """Batched UCT (B roots searched together) against the scalar reference, same budget, empty board."""
    out = {}
    for label, spec in (("gomoku8", "gomoku:size=8,k=5"), ("tictactoe", "tictactoe")):
        game = games.make_from_spec(spec)
        player = UCTPlayer(game, iterations)
        roots = game.initial_state(batch)
        rng = random.Random(0)
        py_root = reference.py_state_from_tensor(game, game.initial_state(1), 0)

        def scalar() -> float:
            reference.uct(py_root, iterations, rng)
            return float(iterations)

        ours, theirs = rates(acting(player, roots, iterations), scalar, seconds=seconds, repeats=repeats)
        out[label] = {
            "iterations_per_s": ours,
            "reference_iterations_per_s": theirs,
            "speedup": ours / theirs,
            "batch": batch,
            "iterations": iterations,
            "parallel": player.leaves_per_step(iterations),
        }
    # the headline figures: 8x8 five in a row
    out.update({k: v for k, v in out["gomoku8"].items() if k in ("iterations_per_s", "reference_iterations_per_s", "speedup")})
    return out


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
    }


def _learner_parts():
    from .config import load_config
    from .network import PolicyValueNet

    config = load_config(game="gomoku")
    game = games.make_from_spec(config.game.spec)
    torch.manual_seed(0)
    net = PolicyValueNet(config.network, game).eval()
    return config, game, net


def _bare_pass(searcher, roots):
    """(module, planes, legal, precision): the network module the search calls for a batch of
    `roots` (frozen on the CPU, maybe int8) and its inputs, for timing bare passes."""
    from .network import as_network_input

    planes, legal = searcher.game.encode(roots), searcher.game.legal_mask(roots)
    precision = searcher.evaluator.precision_for(roots.batch_size)
    module = searcher.evaluator.module(planes, legal, precision)
    return module, as_network_input(planes, precision), legal, precision


def _fast_network(config, game):
    """The default network with a quarter of its channels (bench_puct's and bench_step's `fast_network`)."""
    from dataclasses import replace

    from .network import PolicyValueNet

    torch.manual_seed(0)
    return PolicyValueNet(replace(config.network, channels=max(1, config.network.channels // 4)), game).eval()


def _puct_efficiency(game, net, batch: int, sims: int, seconds: float, repeats: int) -> dict:
    """Batched PUCT simulations/s against the network's bare forward passes/s, same batch."""
    from .network_search import NetworkSearch

    searcher = NetworkSearch(game, net)
    roots = game.initial_state(batch)
    keys = make_keys(0, batch)
    spare = [None]

    def search() -> float:
        # the last search's tree refilled: self-play keeps its trees from move to move
        spare[0] = searcher.search(searcher.fresh_tree(roots, keys, sims + 1, reuse=spare[0]), sims)
        return float(batch * sims)

    module, planes, legal, precision = _bare_pass(searcher, roots)

    def forward() -> float:
        with torch.inference_mode():
            module(planes, legal)
        return float(batch)

    sims_per_s, evals_per_s = rates(search, forward, seconds=seconds, repeats=repeats)
    return {"sims_per_s": sims_per_s, "net_evals_per_s": evals_per_s, "efficiency": sims_per_s / evals_per_s,
            "batch": batch, "simulations": sims, "network": dict(vars(net.config)), "precision": precision}


def bench_puct(seconds: float, repeats: int) -> dict:
    """PUCT simulations per second against the same network's bare forward passes, same batch:
    the default gomoku network, and one with a quarter of its channels (`fast_network`; its
    speed over the default's is in `speed_over_default`)."""
    config, game, net = _learner_parts()
    batch, sims = config.selfplay.games, config.search.simulations
    out = _puct_efficiency(game, net, batch, sims, seconds, repeats)
    out["fast_network"] = _puct_efficiency(game, _fast_network(config, game), batch, sims, seconds, repeats)
    out["fast_network"]["speed_over_default"] = out["fast_network"]["net_evals_per_s"] / out["net_evals_per_s"]
    return out


class _PartTimer:
    """Wall time spent in named calls while a `with` block runs (bench_step): it wraps methods
    of classes, objects and modules, and puts the originals back on leaving."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner, name: str, part: str) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.add(part, time.perf_counter() - start)

        self.replace(owner, name, timed)

    def replace(self, owner, name: str, value) -> None:
        """owner.name = value until the block ends."""
        own = vars(owner).get(name, _PartTimer)  # _PartTimer: nothing of its own (an object's method)
        setattr(owner, name, value)
        self._undo.append(lambda: delattr(owner, name) if own is _PartTimer else setattr(owner, name, own))

    def add(self, part: str, seconds: float) -> None:
        self.seconds[part] = self.seconds.get(part, 0.0) + seconds

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        while self._undo:
            self._undo.pop()()


def _step_profile(game, net, batch: int, sims: int, seconds: float, repeats: int) -> dict:
    """Milliseconds a step of `_puct_efficiency`'s search spends in each part, and a bare pass."""
    from . import network
    from .network_search import NetworkSearch
    from .search import kernels

    searcher = NetworkSearch(game, net)
    roots, keys = game.initial_state(batch), make_keys(0, batch)
    bare_module, bare_planes, legal, precision = _bare_pass(searcher, roots)
    spare = searcher.search(searcher.fresh_tree(roots, keys, sims + 1), sims)  # warm up
    with _PartTimer() as timer:
        for owner, name, part in (
            (kernels.Walker, "gather", "walks"), (kernels.Walker, "take_states", "positions' copies"),
            (kernels.Walker, "put_states", "positions' copies"), (game, "step", "game's step"),
            (game, "legal_mask", "legal moves and result"), (game, "result", "legal moves and result"),
            (game, "encode", "encoding"), (game, "expand_rows", "expansion in one pass"),
            (network, "masked_softmax", "softmax"),
            (kernels.Walker, "finish", "bookkeeping and backup"),
            (kernels.Walker, "finish_without_leaves", "bookkeeping and backup"),
        ):
            timer.wrap(owner, name, part)
        lookup = network.NetworkEvaluator.module

        def timed_module(evaluator, *args, **kwargs):  # the module, its calls timed as the pass
            start = time.perf_counter()
            found = lookup(evaluator, *args, **kwargs)
            timer.add("module lookup", time.perf_counter() - start)

            def call(*inputs):
                start = time.perf_counter()
                try:
                    return found(*inputs)
                finally:
                    timer.add("network's pass", time.perf_counter() - start)

            return call

        timer.replace(network.NetworkEvaluator, "module", timed_module)
        steps, total, bare = 0, 0.0, []
        deadline = time.perf_counter() + seconds * repeats
        while steps == 0 or time.perf_counter() < deadline:
            with torch.inference_mode():
                for _ in range(8):
                    start = time.perf_counter()
                    bare_module(bare_planes, legal)
                    bare.append(time.perf_counter() - start)
            before, start = dict(timer.seconds), time.perf_counter()
            spare = searcher.fresh_tree(roots, keys, sims + 1, reuse=spare)
            refill = time.perf_counter()
            timer.seconds = before  # the root's pass and encoding count as the refill's
            timer.add("tree refill and root pass", refill - start)
            searcher.search(spare, sims)
            total += time.perf_counter() - start
            steps += sims
    per_step = {part: 1e3 * value / steps for part, value in sorted(timer.seconds.items(), key=lambda x: -x[1])}
    step_ms = 1e3 * total / steps
    bare_ms = 1e3 * statistics.median(bare)
    return {"step_ms": step_ms, "bare_pass_ms": bare_ms, "parts_ms": per_step,
            "other_ms": step_ms - sum(per_step.values()), "besides_pass_ms": step_ms - per_step["network's pass"],
            "efficiency": bare_ms / step_ms, "batch": batch, "simulations": sims, "precision": precision}


def bench_step(seconds: float, repeats: int) -> dict:
    """Where a step of `bench_puct`'s search goes, for its two networks (milliseconds a step,
    timers around each part's calls; `other_ms` is the Python between them)."""
    config, game, net = _learner_parts()
    batch, sims = config.selfplay.games, config.search.simulations
    out = {"default": _step_profile(game, net, batch, sims, seconds, repeats)}
    out["fast_network"] = _step_profile(game, _fast_network(config, game), batch, sims, seconds, repeats)
    return out


def bench_uct_one_game(seconds: float, repeats: int, *, iterations: int = 5000) -> dict:
    """One game of 8x8 five in a row from the empty board: rollout UCT with its default leaf
    parallelism and sequentially (one leaf per step), and the plain-Python reference, same budget."""
    game = games.make_from_spec("gomoku:size=8,k=5")
    root = game.initial_state(1)
    parallel = UCTPlayer(game, iterations)
    sequential = UCTPlayer(game, iterations, parallel=1)
    rng = random.Random(0)
    py_root = reference.py_state_from_tensor(game, root, 0)

    def scalar() -> float:
        reference.uct(py_root, iterations, rng)
        return float(iterations)

    ours, ours_sequential, theirs = rates(acting(parallel, root, iterations), acting(sequential, root, iterations),
                                          scalar, seconds=seconds, repeats=repeats)
    return {"iterations_per_s": ours, "sequential_iterations_per_s": ours_sequential,
            "reference_iterations_per_s": theirs, "speedup": ours / theirs,
            "parallel": parallel.leaves_per_step(iterations), "iterations": iterations}


def bench_puct_one_game(seconds: float, repeats: int, *, simulations: int = 800) -> dict:
    """One game with the default gomoku network from the empty board: PUCT with the az
    player's default leaf parallelism and sequentially, against the network's own forward
    passes at the leaf batch (the module and precision the search uses there)."""
    from .network import as_network_input
    from .players.az import AZPlayer

    _, game, net = _learner_parts()
    root = game.initial_state(1)
    parallel = AZPlayer(game, net, simulations)
    sequential = AZPlayer(game, net, simulations, parallel=1)
    leaves = parallel.leaves_per_step(simulations)

    evaluator = parallel.searcher.evaluator
    positions = game.initial_state(leaves)
    planes, legal = game.encode(positions), game.legal_mask(positions)
    precision = evaluator.precision_for(leaves)
    module = evaluator.module(planes, legal, precision)
    planes = as_network_input(planes, precision)

    def forward() -> float:
        with torch.inference_mode():
            module(planes, legal)
        return float(leaves)

    ours, ours_sequential, evals = rates(acting(parallel, root, simulations), acting(sequential, root, simulations),
                                         forward, seconds=seconds, repeats=repeats)
    return {"sims_per_s": ours, "sequential_sims_per_s": ours_sequential, "speedup": ours / ours_sequential,
            "net_evals_per_s": evals, "efficiency": ours / evals, "parallel": leaves, "precision": precision,
            "simulations": simulations}


class TrivialEvaluator:
    """Uniform priors over the legal moves (the search's default without a prior) and value 0."""

    uses_keys = False
    reads_planes = False  # the search's compiled expansion need not encode the leaves for it

    def __call__(self, states, keys=None, legal=None):
        return None, torch.zeros(states.batch_size)

    def evaluate_encoded(self, planes, legal, to_play):
        return None, torch.zeros(to_play.shape[0])


def bench_overhead(seconds: float, repeats: int, *, batch: int = 256, simulations: int = 64) -> dict:
    """The search's own cost: PUCT with a trivial evaluator, ours against mctx's (JAX, pgx's
    games), the same batch of initial positions and simulations, interleaved."""
    from . import throughput_mctx
    from .search import PUCT, new_tree, simulate

    missing = throughput_mctx.available()
    out: dict = {"batch": batch, "simulations": simulations}
    for name in ("tictactoe", "connect4"):
        game = games.make(name)
        roots = game.initial_state(batch)
        evaluator, rule = TrivialEvaluator(), PUCT()
        calls, spare = [0], [None]

        def ours() -> float:
            # the last search's tree refilled, as the players and search.search(reuse=) do
            tree = new_tree(game, roots, simulations + 1, fold(make_keys(0, batch), calls[0]), reuse=spare[0])
            simulate(tree, game, evaluator, rule, simulations)
            spare[0] = tree
            calls[0] += 1
            return float(batch * simulations)

        if missing:
            out[name] = {"sims_per_s": rate(ours, seconds=seconds, repeats=repeats), "mctx": missing}
            continue
        mine, theirs = rates(ours, throughput_mctx.mctx_search(name, batch, simulations), seconds=seconds, repeats=repeats)
        out[name] = {"sims_per_s": mine, "mctx_sims_per_s": theirs, "ratio": mine / theirs}
    return out


def bench_gumbel(seconds: float, repeats: int) -> dict:
    """Gumbel AlphaZero's simulations per second against PUCT's, same network, positions and
    batch, fresh trees (the cost of Gumbel's root schedule and selection; the network calls
    are the same), and Gumbel with sigma's Q min-max normalised (`rescale_q`, the gomoku
    preset's) against plain sigma at the same c_scale. The network is untrained: with a
    trained one rescale_q's values steer the walks more and cost more (docs/benchmarks.md)."""
    from .network_search import NetworkSearch

    config, game, net = _learner_parts()
    batch, sims = config.selfplay.games, 32
    puct, gumbel = NetworkSearch(game, net), NetworkSearch(game, net, algorithm="gumbel")
    c_scale = config.search.c_scale
    plain = NetworkSearch(game, net, algorithm="gumbel", c_scale=c_scale)
    rescaled = NetworkSearch(game, net, algorithm="gumbel", c_scale=c_scale, rescale_q=True)
    roots = game.initial_state(batch)
    for ply in range(4):  # different positions, different legal moves
        roots = game.step(roots, games.sample_uniform_legal(game.legal_mask(roots), make_keys(ply, batch)))
    keys = make_keys(0, batch)

    def puct_search() -> float:
        puct.search(puct.fresh_tree(roots, keys, sims + 1), sims)
        return float(batch * sims)

    def searching(searcher) -> Callable[[], float]:
        def work() -> float:
            searcher.gumbel_search(roots, keys, sims, noise=True)
            return float(batch * sims)
        return work

    puct_rate, gumbel_rate, plain_rate, rescaled_rate = rates(
        puct_search, searching(gumbel), searching(plain), searching(rescaled), seconds=seconds, repeats=repeats)
    return {"puct_sims_per_s": puct_rate, "gumbel_sims_per_s": gumbel_rate, "gumbel_vs_puct": gumbel_rate / puct_rate,
            "batch": batch, "simulations": sims, "considered_actions": gumbel.considered_actions,
            "c_scale": c_scale, "plain_sigma_sims_per_s": plain_rate, "rescale_q_sims_per_s": rescaled_rate,
            "rescale_q_vs_plain": rescaled_rate / plain_rate}


def bench_selfplay(seconds: float, repeats: int) -> dict:
    """Self-play positions per second: all games batched, and one game with one leaf per network call."""
    from .selfplay import SelfPlay

    config, game, net = _learner_parts()

    def selfplay_work(games_at_once: int) -> Callable[[], float]:
        selfplay_config = type(config.selfplay)(games=games_at_once, positions_per_iteration=1)
        player = SelfPlay(game, net, config.search, selfplay_config, seed=0)
        def work() -> float:
            player.step()
            return float(games_at_once)  # one position per game and move

        return work

    batched, single = rates(selfplay_work(config.selfplay.games), selfplay_work(1), seconds=seconds, repeats=repeats)
    return {"positions_per_s": batched, "unbatched_positions_per_s": single, "speedup": batched / single,
            "games": config.selfplay.games, "simulations": config.search.simulations}


CACHE_PRESETS = ("gomoku15", "go9")  # the boards where positions recur by transposition


def bench_cache(seconds: float, repeats: int, *, games_at_once: int = 32, entries: int = 1 << 16,
                presets: tuple[str, ...] = CACHE_PRESETS) -> dict:
    """Self-play positions per second with the evaluation cache (search/cache.py, `entries`
    positions) against without, on the real-board presets (their own [search] and network,
    untrained, `games_at_once` games from the start), repeats interleaved: the same games on
    both sides (a hit returns what the network returned). The cache's hit rate and size, over
    the cached side's moves. Only when named: the 15x15 network makes it a few minutes."""
    import dataclasses

    from .config import load_config
    from .network import PolicyValueNet
    from .selfplay import SelfPlay

    out: dict = {"games": games_at_once, "entries": entries}
    for preset in presets:
        config = load_config(game=preset)
        game = games.make_from_spec(config.game.spec)
        torch.manual_seed(0)
        net = PolicyValueNet(config.network, game).eval()
        selfplay_config = dataclasses.replace(config.selfplay, games=games_at_once, positions_per_iteration=1)
        players = [SelfPlay(game, net, config.search.replace(cache_entries=n), selfplay_config, seed=0)
                   for n in (entries, 0)]

        def stepper(player) -> Callable[[], float]:
            def work() -> float:
                player.step()
                return float(games_at_once)  # one position per game and move
            return work

        cached, plain = rates(*(stepper(p) for p in players), seconds=seconds, repeats=repeats)
        evaluator = players[0].searcher.evaluator
        out[preset] = {"positions_per_s": cached, "uncached_positions_per_s": plain, "speedup": cached / plain,
                       "hit_rate": evaluator.hits / max(evaluator.lookups, 1), "megabytes": evaluator.bytes / 2**20,
                       "simulations": config.search.simulations, "algorithm": config.search.algorithm}
    return out


def bench_train(seconds: float, repeats: int) -> dict:
    """Training samples per second (gradient steps on replay batches, symmetries included)."""
    from .replay import ReplayBuffer
    from .selfplay import Samples
    from .trainer import Trainer

    config, game, net = _learner_parts()
    buffer = ReplayBuffer(game, 8192)
    n = 8192
    h, w = game.board_shape
    planes = (torch.rand(n, game.num_planes, h, w) < 0.2).to(torch.uint8)
    policy = torch.softmax(torch.randn(n, game.num_actions), dim=1)
    buffer.add(Samples(planes, policy, torch.ones(n, game.num_actions, dtype=torch.bool), torch.rand(n) * 2 - 1))
    trainer = Trainer(net, config.train)
    generator = torch.Generator().manual_seed(0)

    def work() -> float:
        trainer.train(buffer, 1, generator, augment=True, progress=False)
        return float(config.train.batch_size)

    return {"samples_per_s": rate(work, seconds=seconds, repeats=repeats), "batch_size": config.train.batch_size}


GROUPS: dict[str, Callable[..., dict]] = {
    "game_steps_per_s": bench_game_steps,
    "uct": bench_uct,
    "puct": bench_puct,
    "step": bench_step,
    "uct_one_game": bench_uct_one_game,
    "puct_one_game": bench_puct_one_game,
    "overhead": bench_overhead,
    "gumbel": bench_gumbel,
    "selfplay": bench_selfplay,
    "train": bench_train,
    "cache": bench_cache,
}
NAMED_ONLY = ("cache",)  # groups a run without --only leaves out (minutes each)


def run(only: list[str] | None, seconds: float, repeats: int) -> dict:
    unknown = sorted(set(only or []) - set(GROUPS))
    if unknown:
        from .errors import UserError

        raise UserError(f"unknown benchmark group {', '.join(unknown)}; choose from: {', '.join(GROUPS)}")
    out: dict = {"machine": machine()}
    for name, fn in GROUPS.items():
        if (only and name not in only) or (not only and name in NAMED_ONLY):
            continue
        out[name] = fn(seconds, repeats)
    return out
