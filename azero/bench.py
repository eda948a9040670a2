"""Throughput figures, printed as one JSON object by `python scripts/bench.py`.

Every figure is a rate (things per second of wall time), the median of a few
timed repeats. Targets in the issues are ratios of two figures measured in the
same run (ours over a plain-Python baseline), because the machines are shared
and noisy; the ratios are in the output too.

Groups (choose with --only):
  game_steps_per_s  random play with game.step at batch 1 and 1024, every game;
                    gomoku also with a plain-Python one-board reference
  uct               random-rollout UCT iterations per second, batched and the scalar
                    reference, on 8x8 five-in-a-row and on tic-tac-toe
  puct, selfplay, train   the learner (see azero/learner_bench.py)
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import torch

import games
from games.random import fold, make_keys

from .players import UCTPlayer

REPO = Path(__file__).resolve().parent.parent


def _reference():
    """The plain-Python references live with the tests (tests/reference.py)."""
    tests = str(REPO / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    import reference

    return reference


def rate(work: Callable[[], float], *, seconds: float, repeats: int) -> float:
    """Median over `repeats` of (units of work done) / (wall time), each repeat at least `seconds` long."""
    work()  # warm up
    rates = []
    for _ in range(repeats):
        done, start = 0.0, time.perf_counter()
        while True:
            done += work()
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        rates.append(done / elapsed)
    return statistics.median(rates)


def random_play_stepper(game, batch: int, seed: int = 0) -> Callable[[], float]:
    """A closure that plays one random ply in `batch` games (finished games restart in place)."""
    state = game.initial_state(batch)
    keys = make_keys(seed, batch)
    fresh = game.initial_state(batch)
    counter = [0]

    def work() -> float:
        nonlocal state
        action = games.sample_uniform_legal(game.legal_mask(state), fold(keys, counter[0]))
        state = game.step(state, action)
        counter[0] += 1
        finished = state.done.nonzero().squeeze(1)
        if finished.numel():
            state.put_(finished, fresh.take(finished))
        return float(batch)

    return work


def python_gomoku_stepper(height=15, width=15, k=5, seed=0) -> Callable[[], float]:
    """Random play with the plain-Python one-board rules, restarting finished games."""
    reference = _reference()
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


BENCH_GAMES = ("gomoku", "tictactoe", "connect4", "othello", "nim")


def bench_game_steps(seconds: float, repeats: int) -> dict:
    out: dict = {}
    for name in BENCH_GAMES:
        game = games.make(name)
        out[name] = {
            "b1": rate(random_play_stepper(game, 1), seconds=seconds, repeats=repeats),
            "b1024": rate(random_play_stepper(game, 1024), seconds=seconds, repeats=repeats),
        }
    gomoku = out["gomoku"]
    gomoku["python_reference"] = rate(python_gomoku_stepper(), seconds=seconds, repeats=repeats)
    gomoku["speedup"] = gomoku["b1024"] / gomoku["python_reference"]
    return out


def bench_uct(seconds: float, repeats: int, *, batch: int = 1024, iterations: int = 200) -> dict:
    """Batched UCT (B roots searched together) against the scalar reference, same budget, empty board."""
    reference = _reference()
    out = {}
    for label, spec in (("gomoku8", "gomoku:size=8,k=5"), ("tictactoe", "tictactoe")):
        game = games.make_from_spec(spec)
        player = UCTPlayer(game, iterations)
        roots = game.initial_state(batch)
        calls = [0]

        def batched() -> float:
            player.act(roots, keys=fold(make_keys(0, batch), calls[0]))
            calls[0] += 1
            return float(batch * iterations)

        rng = random.Random(0)
        py_root = reference.py_state_from_tensor(game, game.initial_state(1), 0)

        def scalar() -> float:
            reference.uct(py_root, iterations, rng)
            return float(iterations)

        ours = rate(batched, seconds=seconds, repeats=repeats)
        theirs = rate(scalar, seconds=seconds, repeats=repeats)
        out[label] = {
            "iterations_per_s": ours,
            "reference_iterations_per_s": theirs,
            "speedup": ours / theirs,
            "batch": batch,
            "iterations": iterations,
        }
    # the headline figures of the issue: 8x8 five in a row
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


GROUPS: dict[str, Callable[..., dict]] = {
    "game_steps_per_s": bench_game_steps,
    "uct": bench_uct,
}


def run(only: list[str] | None, seconds: float, repeats: int) -> dict:
    unknown = sorted(set(only or []) - set(GROUPS))
    if unknown:
        from .errors import UserError

        raise UserError(f"unknown benchmark group {', '.join(unknown)}; choose from: {', '.join(GROUPS)}")
    out: dict = {"machine": machine()}
    for name, fn in GROUPS.items():
        if only and name not in only:
            continue
        out[name] = fn(seconds, repeats)
    return out
