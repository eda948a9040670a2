"""Time controls: whole games under a clock as a manager or controller runs them, every move timed.

A Piskvork manager scores a move over `timeout_turn` as a loss, and a GTP controller a move
past the period; the first move included. The engines do their slow work (loading the
network, compiling the search, int8 calibration) at START and start-up, and search to a
deadline that leaves room for the reply on a loaded machine (azero/protocols/piskvork.py and
gtp.py: a share of the allowed time less a reserve). The limits asserted here are the
protocol's own; a machine so loaded that a process waits longer than that reserve for the
CPU would fail them, and then the figures in the message say by how much.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
import weakref
from pathlib import Path

import pytest
import torch

import games
from azero.checkpoint import atomic_save, network_checkpoint
from azero.config import load_config
from azero.network import PolicyValueNet
from azero.protocols.gtp import Clock, GTPEngine
from azero.session import Engine, settle_memory
from games.keyed_random import make_keys

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
ARTIFACTS = REPO / "test-artifacts"


def record(name: str, limit: float, times: dict[str, list[float]]) -> None:
    """Write every move's time (seconds) to test-artifacts/clock-NAME.json, the longest first."""
    ARTIFACTS.mkdir(exist_ok=True)
    figures = {who: {"longest": max(moves), "moves": moves} for who, moves in times.items()}
    (ARTIFACTS / f"clock-{name}.json").write_text(json.dumps({"limit": limit, **figures}, indent=1) + "\n")


class Process:
    """A protocol engine as a subprocess, on one thread (two engines share a 2-core machine);
    `timed` times an answer (seconds from sending the command to reading the reply) and
    `longest` keeps the longest."""

    def __init__(self, script: str, *args: str):
        self.process = subprocess.Popen([sys.executable, str(SCRIPTS / script), *args], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                                        env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"})
        self.longest = 0.0
        self.times: list[float] = []

    def send(self, line: str) -> None:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def read(self) -> str:
        line = self.process.stdout.readline()
        assert line, f"the engine stopped: {self.process.stderr.read()}"
        return line.strip()

    def timed(self, line: str, reply) -> str:
        """Send `line`; `reply()` reads the answer; the time it took counts towards `longest`."""
        start = time.monotonic()
        self.send(line)
        answer = reply()
        self.times.append(round(time.monotonic() - start, 3))
        self.longest = max(self.longest, self.times[-1])
        return answer


def test_settled_memory_keeps_full_collections_off_the_engine_and_frees_what_it_let_go():
    # the protocol engines settle once their engine is made (azero/cli/pbrain.py, gtp.py), so that a
    # full collection inside a timed move walks only what was made since
    class Node:
        pass

    node = Node()
    node.itself = node  # a cycle: only a collection frees it once it is let go
    probe = weakref.ref(node)
    try:
        settle_memory()
        frozen, walked = gc.get_freeze_count(), len(gc.get_objects())
        assert frozen > 10_000 and walked < frozen / 10, (frozen, walked)
        del node  # the engine lets go of it (a new game's engine replaces the old one)
        gc.collect()
        assert probe() is not None  # frozen: left alone by every collection ...
        settle_memory()
        assert probe() is None  # ... until the next engine is settled
    finally:
        gc.unfreeze()


def test_the_piskvork_brain_and_the_gtp_engine_settle_each_engine_they_make(monkeypatch, capsys):
    import io

    import azero.session
    from azero.cli import gtp, pbrain

    settled = []
    monkeypatch.setattr(azero.session, "settle_memory", lambda: settled.append(1))
    monkeypatch.setattr(sys, "stdin", io.StringIO("START 15\nSTART 9\nEND\n"))
    # 15 x 15's engine made at start-up (a bad spec is an error before serving) and used by START 15; 9 x 9's
    assert pbrain.main(["--player", "random"]) == 0 and len(settled) == 2
    settled.clear()
    monkeypatch.setattr(sys, "stdin", io.StringIO("boardsize 7\nboardsize 5\nquit\n"))
    assert gtp.main(["--game", "go:size=7", "--player", "random"]) == 0
    assert len(settled) == 2  # the game's engine (made once, at start-up) and 5x5's
    assert "? " not in capsys.readouterr().out


# -- Piskvork ----------------------------------------------------------------------------------------


def brain_answer(brain: Process) -> str:
    while True:
        line = brain.read()
        if not line.startswith(("MESSAGE", "DEBUG")):
            return line


@pytest.fixture(scope="module")
def gomoku_checkpoint(tmp_path_factory) -> str:
    """An untrained checkpoint of the default 8x8 gomoku network (the preset's shape), which
    searches as the preset's would (Gumbel AlphaZero, a round of its schedule a network call)."""
    config = load_config(game="gomoku")
    assert config.search.algorithm == "gumbel"
    game = games.make_from_spec(config.game.spec)
    torch.manual_seed(0)
    net = PolicyValueNet(config.network, game).eval()
    path = tmp_path_factory.mktemp("clock") / "gomoku8.pt"
    atomic_save(network_checkpoint(net, game, 1, search={"algorithm": "gumbel"}), path)
    return str(path)


def test_a_piskvork_game_at_200_ms_a_turn_keeps_every_move_under_the_limit(gomoku_checkpoint):
    limit = 0.2
    game = games.make("gomoku", size=8, k=5)
    brains = [Process("pbrain.py", "--checkpoint", gomoku_checkpoint), Process("pbrain.py", "--player", "uct:100000")]
    for brain in brains:
        assert brain.timed("START 8", lambda b=brain: brain_answer(b)) == "OK"
        brain.longest, brain.times = 0.0, []  # START may take its time; the turns may not
        brain.send(f"INFO timeout_turn {int(limit * 1000)}")
        brain.send("INFO timeout_match 100000")
        brain.send("INFO rule 0")
    state, mover, plies = game.initial_state(1), 0, 0
    reply = brains[0].timed("BEGIN", lambda: brain_answer(brains[0]))
    while True:
        x, y = (int(v) for v in reply.split(","))
        state = game.step(state, torch.tensor([y * 8 + x]))
        plies += 1
        if bool(state.done[0]):
            break
        mover = 1 - mover
        reply = brains[mover].timed(f"TURN {x},{y}", lambda m=mover: brain_answer(brains[m]))
    for brain in brains:
        brain.send("END")
        assert brain.process.wait(timeout=60) == 0
    record("piskvork", limit, {"network": brains[0].times, "uct": brains[1].times})
    longest = [round(brain.longest, 3) for brain in brains]
    assert plies >= 9 and max(longest) < limit, (f"longest moves (network, uct): {longest} s over {plies} plies; "
                                                 f"every move: {[brain.times for brain in brains]}")


# -- GTP -----------------------------------------------------------------------------------------------


def test_a_gtp_game_at_one_second_a_move_keeps_every_move_under_the_period():
    limit = 1.0
    game = games.make("othello", size=6)
    engine = Process("gtp.py", "--game", "othello:size=6", "--player", "uct:1000000")

    def answer() -> str:
        lines = []
        while True:
            line = engine.read()
            if not line and lines:
                return lines[0]
            if line:
                lines.append(line)

    assert engine.timed("protocol_version", answer) == "= 2"
    engine.longest, engine.times = 0.0, []  # start-up may take its time; the moves may not
    assert engine.timed("time_settings 0 1 1", answer) == "="
    state, keys, moves = game.initial_state(1), make_keys(7, 1), 0
    while not bool(state.done[0]):
        if int(state.to_play[0]) == 0:  # ours: black
            reply = engine.timed("genmove b", answer)
            assert reply.startswith("= "), reply
            vertex = reply[2:].strip().lower()
            action = game.pass_action if vertex == "pass" else game.parse_action(vertex)
            moves += 1
        else:  # the controller's: random legal moves for white
            action = int(games.sample_uniform_legal(game.legal_mask(state), keys)[0])
            keys = keys + 1
            vertex = "pass" if action == game.pass_action else game.format_action(action)
            assert engine.timed(f"play w {vertex}", answer) == "="
        state = game.step(state, torch.tensor([action]))
    engine.send("quit")
    assert engine.process.wait(timeout=60) == 0
    record("gtp", limit, {"uct": engine.times})
    assert moves >= 6 and engine.longest < limit, (f"longest move {engine.longest:.3f} s over {moves} moves; "
                                                    f"every command: {engine.times}")


def test_japanese_byo_yomi_spends_one_period_a_move():
    clock = Clock(main_time=60, byo_yomi_time=10, periods=5)
    assert clock.seconds(0, 30) == pytest.approx((60 / 30 + 10) * 0.85 - 0.1)
    clock.left[0] = (8.0, 3)  # in byo-yomi: 8 s left of this period, 3 periods
    assert clock.seconds(0, 30) == pytest.approx(8 * 0.85 - 0.1)


def test_kgs_time_settings_set_the_clock_and_bad_ones_are_one_line_errors():
    replies = []
    gtp = GTPEngine(games.make("othello", size=6), lambda g: Engine(g, "random"), write=replies.append)
    for line, clock in [
        ("kgs-time_settings byoyomi 30 5 3", Clock(30.0, 5.0, 0, periods=3)),
        ("kgs-time_settings canadian 30 10 5", Clock(30.0, 10.0, 5)),
        ("kgs-time_settings absolute 90", Clock(90.0, 0.0, 0)),
        ("kgs-time_settings none", Clock()),
    ]:
        gtp.handle(line)
        assert replies[-1] == "=\n\n" and gtp.clock == clock, line
    for bad in ("kgs-time_settings", "kgs-time_settings byoyomi 30 5", "kgs-time_settings sudden 3",
                "kgs-time_settings canadian 30 x 5"):
        gtp.handle(bad)
        assert replies[-1].startswith("? syntax error") and replies[-1].count("\n") == 2, bad
    gtp.handle("list_commands")
    assert "kgs-time_settings" in replies[-1]


def test_a_clock_bounds_the_budget_a_spec_states_and_is_the_budget_of_one_that_states_none(tmp_path):
    game = games.make("gomoku", size=9, k=5)
    state = game.initial_state(1)
    stated = Engine(game, "uct:64")
    assert int(stated.think(state, clock=60.0).visits.sum()) == 64  # uct:64's budget holds under a long turn
    started = time.monotonic()
    stated_large = Engine(game, "uct:1000000")
    stated_large.think(state, clock=0.3)  # ... and the clock ends a larger one
    assert time.monotonic() - started < 5
    config = load_config(game="gomoku", overrides=["network.channels=8", "network.blocks=1"])
    net = PolicyValueNet(config.network, game).eval()
    path = tmp_path / "net.pt"
    atomic_save(network_checkpoint(net, game, 1, search={"algorithm": "puct"}), path)
    # an az: spec without sims= states no budget: the clock is its budget (more than its default 200)
    # (a long clock for the stated budget: on a loaded machine a one-second turn may end it first)
    for spec, clock, least, most in ((f"az:{path}:", 1.0, 400, None), (f"az:{path}:sims=40", 10.0, 40, 40)):
        visits = int(Engine(game, spec).think(state, clock=clock).visits.sum())
        assert visits >= least and (most is None or visits <= most), (spec, visits)
