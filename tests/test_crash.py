"""Crash consistency of a training run, measured: kill -9 at random moments and inside every write
(checkpoint, numbered checkpoint, replay chunk, metrics line, pruning), a full disk at the write
call, and the command typed again. After every kill the run folder is checked and resumed; at the
end the run must equal one that was never stopped: its weight average and trained weights, its
losses, its replay chunks and ring.

The campaign's length is CRASH_KILLS (default 8 in the default run; the slow test kills 120 times):
    CRASH_KILLS=120 pytest -m slow tests/test_crash.py -s
prints the kill points tried and the resumes that succeeded (docs/reliability.md).
"""

from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

import games
from azero.checkpoint import load_checkpoint, safe_load
from azero.errors import UserError
from azero.replay import ReplayBuffer, chunks, restore
from commands import run_here
from runs import tiny_args

REPO = Path(__file__).resolve().parent.parent
# A tiny run whose replay ring wraps (capacity 200, 60 new positions an iteration), so pruning happens.
TINY = tiny_args({
    "selfplay.games": 8, "selfplay.positions_per_iteration": 60, "search.simulations": 4,
    "train.min_replay": 32, "train.batch_size": 16, "replay.capacity": 200, "network.blocks": 1,
    "network.channels": 8, "evaluation.games": 2, "evaluation.ladder": "[4]", "evaluation.simulations": 2,
    "evaluation.previous_games": 0, "run.keep_every": 3,
})
# The campaign's run keeps a weight average, so a resume must bring back the most state: the
# average (the played weights), the trained weights and the optimizer.
CAMPAIGN = [*TINY, "--set", "train.ema_decay=0.9"]
POINTS = [f"{file}.{step}" for file in ("checkpoint", "snapshot", "replay") for step in
          ("write", "fsync", "rename", "renamed")] + ["metrics.write", "metrics.written", "replay.prune"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def command(*args: str) -> list[str]:
    return [sys.executable, str(REPO / "scripts" / "train.py"), *args]


def train(*args: str, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(command(*args), capture_output=True, text=True, timeout=timeout, env=env or ENV)


def saved_iteration(run_dir: Path) -> int:
    latest = run_dir / "latest.pt"
    return int(load_checkpoint(latest)["iteration"]) if latest.exists() else 0


def check_folder(run_dir: Path) -> int:
    """The run folder after a kill: latest.pt loads, metrics.jsonl holds iterations 1..n in order
    (n the saved iteration, or the next one, in progress, whose last line may be cut short),
    replay chunks up to n load with the sizes their names give. Returns the saved iteration."""
    saved = saved_iteration(run_dir)
    path = run_dir / "metrics.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    whole = []
    for number, line in enumerate(lines):
        try:
            whole.append(json.loads(line)["iteration"])
        except ValueError:
            assert number == len(lines) - 1, f"a damaged line inside metrics.jsonl: {line!r}"
    assert whole == list(range(1, len(whole) + 1)) and len(whole) in (saved, saved + 1), (whole, saved)
    kept = [(iteration, count, chunk) for iteration, count, chunk in chunks(run_dir / "replay") if iteration <= saved]
    for iteration, count, chunk in kept:
        data = safe_load(chunk, "replay file")
        assert data["iteration"] == iteration and len(data["value"]) == count
    assert [iteration for iteration, _, _ in kept] == list(range(saved - len(kept) + 1, saved + 1))  # the newest
    return saved


def replay_ring(run_dir: Path) -> ReplayBuffer:
    """The replay buffer a resume would rebuild from the folder."""
    data = load_checkpoint(run_dir / "latest.pt")
    buffer = ReplayBuffer(games.make_from_spec(data["game"]), 200)
    restore(buffer, run_dir / "replay", up_to=int(data["iteration"]), positions=int(data["positions"]))
    return buffer


class Campaign:
    """Kill one run again and again, each time at a random moment or inside a write; resume it."""

    def __init__(self, run_dir: Path, seed: int):
        self.run_dir, self.random = run_dir, random.Random(seed)
        self.tried: dict[str, int] = {}
        self.resumed = 0
        self.started = False

    def kill_once(self, index: int) -> None:
        before = saved_iteration(self.run_dir)
        env = dict(ENV)
        if index % 2 == 0:  # inside a write: the first or the second time the run gets there
            point = POINTS[(index // 2) % len(POINTS)]
            action = "pause" if index % 6 == 0 else "kill"  # pause: the harness kills it there
            env["AZERO_FAULT"] = f"{point}@{self.random.randint(1, 2)}:{action}"
            label, wait = point, 300.0
        else:
            label, wait = "random moment", self.random.uniform(1.0, 8.0)  # (start-up, torch's import, takes 3-4 s)
        args = [*CAMPAIGN] if not self.started else ["--no-progress"]
        process = subprocess.Popen(command(*args, "--iterations", "100000", "--run-dir", str(self.run_dir)),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.started = True
        errors: list[str] = []
        reader = threading.Thread(target=lambda: errors.extend(process.stderr), daemon=True)
        reader.start()
        deadline = time.monotonic() + wait
        while process.poll() is None and time.monotonic() < deadline and not any("paused at" in e for e in errors):
            time.sleep(0.02)
        if process.poll() is None:
            if label != "random moment" and not any("paused at" in e for e in errors):
                label += " (not reached in time: killed where it was)"
            process.kill()
        stdout = process.stdout.read()
        process.wait(timeout=60)
        reader.join(timeout=60)
        assert process.returncode == -signal.SIGKILL, (process.returncode, "".join(errors))
        assert "Traceback" not in "".join(errors), "".join(errors)
        self.tried[label] = self.tried.get(label, 0) + 1
        if f"at iteration {before}" in stdout:
            self.resumed += 1
        printed = [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("iteration ")]
        saved = check_folder(self.run_dir)
        assert saved >= before and saved >= max(printed, default=0), (before, saved, printed)


def run_campaign(tmp_path: Path, kills: int, seed: int) -> Campaign:
    campaign = Campaign(tmp_path / "killed", seed)
    for index in range(kills):
        campaign.kill_once(index)
    done = saved_iteration(campaign.run_dir)
    final = done + 2
    out = train("--iterations", str(final), "--run-dir", str(campaign.run_dir), "--no-progress")
    assert out.returncode == 0 and f"at iteration {done}" in out.stdout, out.stderr
    campaign.resumed += 1
    records = [json.loads(line)["iteration"] for line in (campaign.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert records == list(range(1, final + 1))
    assert not [p for folder in (campaign.run_dir, campaign.run_dir / "replay") for p in folder.glob(".*.tmp")]
    # the same run never stopped: the same network, the same losses, the same replay ring
    straight = tmp_path / "straight"
    out = train(*CAMPAIGN, "--iterations", str(final), "--run-dir", str(straight))
    assert out.returncode == 0, out.stderr
    a, b = load_checkpoint(straight / "latest.pt"), load_checkpoint(campaign.run_dir / "latest.pt")
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key
    # checkpoints play the average and keep the trained weights for the optimizer
    for key in a["trainer"]["model"]:
        assert torch.equal(a["trainer"]["model"][key], b["trainer"]["model"][key]), key
    assert not torch.equal(a["model"]["stem.0.weight"], a["trainer"]["model"]["stem.0.weight"])
    assert a["trainer"]["steps"] == b["trainer"]["steps"] and a["positions"] == b["positions"]
    names = [sorted(p.name for p in (folder / "replay").iterdir()) for folder in (straight, campaign.run_dir)]
    assert names[0] == names[1] and names[0], names  # the same chunks, none left over from a kill
    losses = [(r["iteration"], r.get("losses/total")) for r in map(json.loads, (straight / "metrics.jsonl").open())]
    assert losses == [(r["iteration"], r.get("losses/total")) for r in map(json.loads,
                                                                          (campaign.run_dir / "metrics.jsonl").open())]
    ring_a, ring_b = replay_ring(straight), replay_ring(campaign.run_dir)
    assert ring_a.cursor == ring_b.cursor and torch.equal(ring_a.planes, ring_b.planes)
    assert torch.equal(ring_a.policy, ring_b.policy) and torch.equal(ring_a.value, ring_b.value)
    print(f"\ncrash campaign: {kills} kills, {sum(campaign.tried.values())} tried, {campaign.resumed} resumes "
          f"succeeded, {final} iterations; kill points: {json.dumps(campaign.tried, sort_keys=True)}")
    return campaign


def test_kill_nine_campaign_short(tmp_path):
    run_campaign(tmp_path, int(os.environ.get("CRASH_KILLS", "8")), seed=1)


@pytest.mark.slow
def test_kill_nine_campaign_long(tmp_path):
    run_campaign(tmp_path, int(os.environ.get("CRASH_KILLS", "120")), seed=2)


@pytest.mark.parametrize("point", ["checkpoint.write", pytest.param("replay.write", marks=pytest.mark.slow),
                                   pytest.param("metrics.write", marks=pytest.mark.slow)])
def test_a_full_disk_is_one_clear_message_and_the_run_resumes_once_space_is_back(tmp_path, point):
    run_dir = tmp_path / "run"
    out = train(*TINY, "--iterations", "4", "--run-dir", str(run_dir), env={**ENV, "AZERO_FAULT": f"{point}@2:enospc"})
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith("error: cannot write the run's files: No space left on device")
    named = {"checkpoint.write": run_dir / "latest.pt", "metrics.write": run_dir / "metrics.jsonl"}
    assert f"({named.get(point, run_dir)}" in out.stderr, out.stderr  # the file: write() names none itself
    assert len(out.stderr.strip().splitlines()) == 1 and "holds iteration 1, intact" in out.stderr
    assert saved_iteration(run_dir) == 1 and check_folder(run_dir) == 1
    assert not list(run_dir.rglob(".*.tmp"))
    out = train("--iterations", "3", "--run-dir", str(run_dir), "--no-progress")
    assert out.returncode == 0 and "at iteration 1" in out.stdout, out.stderr
    records = [json.loads(line)["iteration"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert records == [1, 2, 3]


def test_a_latest_pt_not_the_runs_own_is_refused_before_it_loads_part_way(tmp_path):
    # (the refusals run here: they come before the run would change anything; the campaign above
    # resumes the run's own latest.pt many times)
    run_dir = tmp_path / "run"
    assert train(*TINY, "--set", "run.keep_every=1", "--iterations", "1", "--run-dir", str(run_dir)).returncode == 0
    own = (run_dir / "latest.pt").read_bytes()
    # a numbered snapshot copied over it: the network alone (this was a KeyError's traceback)
    (run_dir / "latest.pt").write_bytes((run_dir / "checkpoints" / "iter-000001.pt").read_bytes())
    out = run_here("train.py", "--iterations", "2", "--run-dir", str(run_dir), "--no-progress")
    assert out.returncode == 2 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "is not a training checkpoint (it has no 'config'" in out.stderr, out.stderr
    # another run's, of the same game with another network (this was a size mismatch's traceback)
    data = torch.load(io.BytesIO(own), weights_only=True)
    data["config"]["network"]["channels"] = 16
    torch.save(data, run_dir / "latest.pt")
    out = run_here("train.py", "--iterations", "2", "--run-dir", str(run_dir), "--no-progress")
    assert out.returncode == 2 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "was saved by a run with another config (network.channels: 16 there, 8 in" in out.stderr, out.stderr
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 1  # the run's metrics untouched


@pytest.mark.parametrize("fault_at", ["config.write", "config.write@2"])  # config.toml, provenance.json
def test_a_new_run_that_cannot_write_its_first_files_leaves_no_folder(tmp_path, monkeypatch, fault_at):
    from azero import faults

    monkeypatch.setattr(faults, "_reached", {})
    monkeypatch.setenv("AZERO_FAULT", f"{fault_at}:enospc")
    run_dir = tmp_path / "run"
    out = run_here("train.py", *TINY, "--iterations", "1", "--run-dir", str(run_dir))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith(f"error: cannot write the run's files in {run_dir}: No space left on device")
    assert not run_dir.exists()


def test_a_rebuilt_replay_ring_is_the_ring_the_run_left(tmp_path):
    from azero.replay import prune, save_chunk
    from azero.selfplay import Samples

    game = games.make("tictactoe")
    live, added = ReplayBuffer(game, 10), 0
    for iteration, count in enumerate((3, 4, 12, 5, 2, 7, 6), start=1):  # one chunk bigger than the ring
        values = torch.arange(added, added + count, dtype=torch.float32)
        planes = torch.zeros(count, game.num_planes, 3, 3, dtype=torch.uint8)
        planes[:, 0, 0, 0] = torch.arange(count, dtype=torch.uint8) + iteration
        samples = Samples(planes, torch.rand(count, 9), torch.ones(count, 9, dtype=torch.bool), values)
        live.add(samples)
        save_chunk(tmp_path, iteration, samples)
        prune(tmp_path, 10)
        added += count
        rebuilt = ReplayBuffer(game, 10)
        restore(rebuilt, tmp_path, up_to=iteration, positions=added)
        assert (rebuilt.cursor, rebuilt.size, rebuilt.total_added) == (live.cursor, live.size, live.total_added)
        assert torch.equal(rebuilt.value, live.value) and torch.equal(rebuilt.planes, live.planes)
        assert torch.equal(rebuilt.policy, live.policy)
    assert live.value.tolist() == [float(v) for v in (30, 31, 32, 33, 34, 35, 36, 37, 38, 29)]
    # a checkpoint that counts fewer samples than the folder holds up to its iteration: refused,
    # and the later chunks (which a fitting restore deletes) are still there
    names = sorted(path.name for path in tmp_path.iterdir())
    on_disk = sum(count for iteration, count, _ in chunks(tmp_path) if iteration <= 6)
    with pytest.raises(UserError, match="holds 3 more replay samples than the run's checkpoint counts"):
        restore(ReplayBuffer(game, 10), tmp_path, up_to=6, positions=on_disk - 3)
    assert sorted(path.name for path in tmp_path.iterdir()) == names
    restore(ReplayBuffer(game, 10), tmp_path, up_to=6, positions=added - 6)
    assert sorted(path.name for path in tmp_path.iterdir()) == [name for name in names if "iter-000007" not in name]
