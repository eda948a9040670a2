"""Self-play on Ray actors measured against one process, and the learner's costs per actor.

    python scripts/bench.py --only ray            # 2 actors x 1 thread against 1 process x 2 threads
    python scripts/bench.py --only ray_scaling    # tiny networks, 1..16 actors: the learner's costs

`ray`: the run's self-play (the gomoku preset by default) as positions of finished games per
second of wall time, in one process with N torch threads and on N actors with one thread each,
their repeats interleaved (A B A B) as azero/throughput.py does. Each actor repeat is one round: every
actor plays positions/N, the learner takes every chunk through the ledger (a round waits for
its slowest actor, so the figure is, if anything, low).

`ray_scaling`: tic-tac-toe with a tiny network, so actors are cheap and the learner's costs show.
For each actor count: positions/s, the learner's intake cost per sample (receiving a chunk,
the ledger, the replay buffer), the cost of publishing weights (the learner's ray.put, once per
version) and each actor's cost of taking them (fetch and load, once per version).
"""

from __future__ import annotations

import math
import time

import torch

import games

from ..config import load_config
from ..network import PolicyValueNet
from ..plot import xy_svg
from ..replay import ReplayBuffer
from ..selfplay import Samples, SelfPlay
from ..throughput import machine, rates
from .cluster import cluster_cpus, connect
from .ledger import Ledger, select_games
from .workers import SelfPlayWorker


class ActorPool:
    """`count` self-play actors of `config` and the learner's side of a round of calls."""

    def __init__(self, ray, config, net: PolicyValueNet, count: int):
        self.ray, self.config, self.net = ray, config, net
        share = min(1.0, cluster_cpus(ray) / count)
        worker = ray.remote(SelfPlayWorker).options(num_cpus=share, max_restarts=0)
        settings = config.to_dict()
        self.actors = [worker.remote(settings, k, k + 1, "cpu", 1) for k in range(count)]
        ray.get([actor.identity.remote() for actor in self.actors])
        game = games.make_from_spec(config.game.spec)
        self.buffer = ReplayBuffer(game, 100_000)
        self.ledger = Ledger()
        self.version = 0
        self.weights = None
        self.intake_seconds = self.samples = 0.0
        self.publish_seconds: list[float] = []
        self.load_seconds: list[float] = []
        self.publish()

    def publish(self) -> None:
        started = time.perf_counter()
        self.weights = self.ray.put({k: v.detach().cpu() for k, v in self.net.state_dict().items()})
        self.publish_seconds.append(time.perf_counter() - started)
        self.version += 1

    def round(self, positions: int) -> float:
        """Every actor plays positions / count; returns the positions taken in."""
        each = math.ceil(positions / len(self.actors))
        pending = [actor.play.remote(self.version, [self.weights], each) for actor in self.actors]
        parts = []
        while pending:
            ready, pending = self.ray.wait(pending, num_returns=1)
            started = time.perf_counter()
            chunk = self.ray.get(ready[0])
            parts.append(select_games(chunk, self.ledger.admit(chunk)))
            if chunk.load_seconds:
                self.load_seconds.append(chunk.load_seconds)
            self.intake_seconds += time.perf_counter() - started
        started = time.perf_counter()
        samples = Samples.cat(parts)
        self.buffer.add(samples)
        self.intake_seconds += time.perf_counter() - started
        self.samples += len(samples)
        return float(len(samples))

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor, no_restart=True)


def bench_ray(seconds: float, repeats: int, *, actors: int = 2, game: str = "gomoku", positions: int = 512) -> dict:
    """Self-play positions/s on `actors` actors x 1 thread against one process x `actors` threads."""
    ray = connect(None)
    config = load_config(game=game)
    game_object = games.make_from_spec(config.game.spec)
    torch.manual_seed(0)
    net = PolicyValueNet(config.network, game_object).eval()
    threads = torch.get_num_threads()
    selfplay = SelfPlay(game_object, net, config.search, config.selfplay, seed=0)
    pool = ActorPool(ray, config, net, actors)

    def one_process() -> float:
        torch.set_num_threads(actors)
        try:
            samples, _ = selfplay.run(positions, progress=False)
        finally:
            torch.set_num_threads(threads)
        return float(len(samples))

    try:
        alone, spread = rates(one_process, lambda: pool.round(positions), seconds=seconds, repeats=repeats)
    finally:
        pool.close()
    return {"one_process_positions_per_s": alone, "actors_positions_per_s": spread, "ratio": spread / alone,
            "actors": actors, "threads_of_one_process": actors, "game": config.game.spec,
            "games_per_actor": config.selfplay.games, "simulations": config.search.simulations,
            "positions_per_round": positions, "machine": machine()}


def tiny_config():
    return load_config(game="tictactoe", overrides=[
        "network.blocks=1", "network.channels=8", "network.value_hidden=8", "search.simulations=8",
        "selfplay.games=32", "search.precision=float32"])


def bench_ray_scaling(seconds: float, repeats: int, *, counts: tuple[int, ...] = (1, 2, 4, 8, 16),
                      positions: int = 1024) -> dict:
    """Positions/s and the learner's costs against the number of actors (tiny networks)."""
    ray = connect(None)
    config = tiny_config()
    game = games.make_from_spec(config.game.spec)
    torch.manual_seed(0)
    net = PolicyValueNet(config.network, game).eval()
    rows = []
    for count in counts:
        pool = ActorPool(ray, config, net, count)
        try:
            def work() -> float:
                pool.publish()  # a new version each round: every actor takes it
                return pool.round(positions)

            (rate,) = rates(work, seconds=seconds, repeats=repeats)
            rows.append({
                "actors": count,
                "positions_per_s": rate,
                "intake_us_per_sample": 1e6 * pool.intake_seconds / max(pool.samples, 1),
                "publish_ms": 1e3 * sum(pool.publish_seconds) / len(pool.publish_seconds),
                "load_ms_per_actor": 1e3 * sum(pool.load_seconds) / max(len(pool.load_seconds), 1),
                "weights_bytes": sum(v.numel() * v.element_size() for v in net.state_dict().values()),
            })
        finally:
            pool.close()
    return {"rows": rows, "game": config.game.spec, "network": dict(vars(config.network)),
            "simulations": config.search.simulations, "games_per_actor": config.selfplay.games,
            "positions_per_round": positions, "machine": machine()}


GROUPS = {"ray": bench_ray, "ray_scaling": bench_ray_scaling}


def scaling_svg(result: dict, width: int = 640, height: int = 360) -> str:
    """Positions/s against actors (log2 axis), from bench_ray_scaling's result, as an SVG picture."""
    rows = result["rows"]
    points = [(math.log2(row["actors"]), row["positions_per_s"]) for row in rows]
    labels = [str(row["actors"]) for row in rows]
    return xy_svg(points, labels, f"self-play on Ray actors: {result['game']}, tiny network, "
                  f"{result['machine'].get('cores', '?')} cores", "actors", "positions of finished games / s",
                  width=width, height=height)
