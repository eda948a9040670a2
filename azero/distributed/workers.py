"""The actors' classes: plain Python, made Ray actors by source.py (`ray.remote(SelfPlayWorker)`).

A SelfPlayWorker is a batch of self-play games, as the run's SelfPlay in one process; each call of
`play` takes the newest weights (fetched from Ray's object store only when their version is
new), plays until enough positions of finished games are collected or a few seconds have
passed, and returns them as a Chunk
tagged with the ids the learner checks (ledger.py). Games in progress carry over between calls;
they are lost if the actor's process dies, its finished games never are (they left in a Chunk).

An EvaluatorWorker plays the evaluation ladder for a given network, with the ladder's state
handed in and back, so the learner keeps it in its checkpoint and a restarted evaluator loses
nothing but the evaluation it was playing.
"""

from __future__ import annotations

import os
import time
import warnings

import torch

import games

from ..config import config_from_dict
from ..faults import fault
from ..loop import ladder_evaluator
from ..network import PolicyValueNet
from ..selfplay import Samples, SelfPlay
from .ledger import Chunk


def _fetch(reference):
    """A value from Ray's object store (weights are sent by reference, inside a list, so Ray does
    not fetch them for calls that do not need them)."""
    import ray

    return ray.get(reference)


def _restarted() -> bool:
    """Whether this actor process replaces one that died."""
    import ray

    with warnings.catch_warnings():  # the property reads a deprecated one inside Ray
        warnings.simplefilter("ignore")
        return ray.get_runtime_context().was_current_actor_reconstructed


class SelfPlayWorker:
    def __init__(self, config: dict, index: int, seed: int, device: str = "cpu", threads: int = 1):
        fault("actor.start")
        torch.set_num_threads(threads)
        self.config = config_from_dict(config)
        self.index, self.device = index, device
        self.pid = os.getpid()
        self.incarnation = f"{index}.{self.pid}.{time.time_ns()}"
        if _restarted():  # a new process must not replay the games its predecessor started with
            seed = (seed * 1_000_003 + self.pid) % 2**31
            print(f"self-play actor {index}: new process {self.pid}", flush=True)  # Ray forwards it to the log
        self.game = games.make_from_spec(self.config.game.spec)
        self.net = PolicyValueNet(self.config.network, self.game).to(device).eval()
        self.selfplay = SelfPlay(self.game, self.net, self.config.search, self.config.selfplay, device=device,
                                 seed=seed)
        self.version = -1
        self.sequence = 0

    def identity(self) -> tuple[int, str]:
        """(process id, incarnation)."""
        return self.pid, self.incarnation

    def play(self, version: int, weights: list, positions: int, seconds: float = float("inf")) -> Chunk:
        """Finished games holding at least `positions` positions, or those finished after
        `seconds` of play (at least one game), played with weights `version` (`weights`: [a
        reference to the network's state_dict]). A short call sends finished games soon, so a
        dying process takes few with it, and takes new weights soon."""
        load_seconds = 0.0
        if version != self.version:
            started = time.perf_counter()
            self.net.load_state_dict(_fetch(weights[0]))
            self.version = version
            self.selfplay.reset_trees()  # kept subtrees hold the old network's values
            load_seconds = time.perf_counter() - started
        selfplay = self.selfplay
        evaluator = selfplay.searcher.evaluator
        calls, evaluated = evaluator.calls, evaluator.positions
        parts, ids, lengths, results = [], [], [], []
        collected = 0
        started = time.perf_counter()
        while collected < positions and not (parts and time.perf_counter() - started >= seconds):
            before = selfplay.game_ids.clone()
            samples, outcomes = selfplay.step()
            if samples is None:
                continue
            # a finished game restarts in its slot under a new id, in slot order as `outcomes`
            finished = (selfplay.game_ids != before).nonzero().squeeze(1)
            ids.append(before[finished])
            lengths.extend(length for _, length in outcomes)
            results.extend(result for result, _ in outcomes)
            parts.append(samples)
            collected += len(samples)
        chunk = Chunk(
            actor=self.index, incarnation=self.incarnation, sequence=self.sequence, pid=self.pid,
            version=self.version, samples=Samples.cat(parts), game_ids=torch.cat(ids),
            lengths=torch.tensor(lengths, dtype=torch.long), results=torch.tensor(results, dtype=torch.long),
            watermark=int(selfplay.game_ids.min()), seconds=time.perf_counter() - started,
            network_calls=evaluator.calls - calls, network_positions=evaluator.positions - evaluated,
            load_seconds=load_seconds,
        )
        self.sequence += 1
        return chunk


class EvaluatorWorker:
    def __init__(self, config: dict, device: str = "cpu", threads: int = 1):
        torch.set_num_threads(threads)
        self.config = config_from_dict(config)
        self.game = games.make_from_spec(self.config.game.spec)
        self.net = PolicyValueNet(self.config.network, self.game).to(device).eval()
        self.device = device

    def identity(self) -> tuple[int, str]:
        return os.getpid(), ""

    def evaluate(self, iteration: int, weights: list, state: dict) -> tuple[dict, dict, float]:
        """(metrics, the ladder's new state, seconds) of the network of `iteration` against the
        ladder whose state is `state` (LadderEvaluator.state_dict)."""
        started = time.perf_counter()
        self.net.load_state_dict(_fetch(weights[0]))
        evaluator = ladder_evaluator(self.game, self.config, self.device)
        evaluator.load_state_dict(state)
        metrics = evaluator.evaluate(self.net, iteration, progress=False)
        return metrics, evaluator.state_dict(), time.perf_counter() - started
