"""One writer at a time in a run folder: a second command on a folder in use is refused in one line and
changes nothing, the first run ends as if it had been alone, a lock left by a killed run is taken
over; and a stopped run exits 130 (Ctrl-C) or 143 (SIGTERM), not 0."""

from __future__ import annotations

import errno
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from azero import folder_lock
from azero.checkpoint import load_checkpoint
from azero.errors import UserError
from azero.replay import chunks
from commands import run_here
from runs import ctrl_c_default
from test_crash import ENV, TINY, command, saved_iteration


class Training:
    """scripts/train.py in its own process, its output lines collected as they come."""

    def __init__(self, *args: str):
        self.process = subprocess.Popen(command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env=ENV, preexec_fn=ctrl_c_default)
        self.lines: list[str] = []
        self.errors: list[str] = []
        self.readers = [threading.Thread(target=self.lines.extend, args=(self.process.stdout,), daemon=True),
                        threading.Thread(target=self.errors.extend, args=(self.process.stderr,), daemon=True)]
        for reader in self.readers:
            reader.start()

    def wait_for(self, start: str, seconds: float = 300) -> None:
        deadline = time.monotonic() + seconds
        while not any(line.startswith(start) for line in self.lines):
            assert self.process.poll() is None, "".join(self.errors)
            assert time.monotonic() < deadline, f"no line {start!r} after {seconds} s"
            time.sleep(0.02)

    def finish(self, timeout: float = 300) -> int:
        status = self.process.wait(timeout=timeout)
        for reader in self.readers:
            reader.join(timeout=60)
        return status

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under `folder`: (size, modification time in ns)."""
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
            for path in sorted(folder.rglob("*")) if path.is_file()}


def summary(run_dir: Path) -> dict:
    """What a run folder says it did: positions, replay chunks, metrics lines, the network."""
    data = load_checkpoint(run_dir / "latest.pt")
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {"positions": data["positions"], "chunks": [(i, n) for i, n, _ in chunks(run_dir / "replay")],
            "metrics": [(r["iteration"], r.get("losses/total"), r["charts/positions"]) for r in records],
            "model": data["model"]}


def test_a_second_writer_is_refused_unchanged_and_the_first_run_equals_an_undisturbed_one(tmp_path):
    shared, alone = tmp_path / "shared", tmp_path / "alone"
    first = Training(*TINY, "--iterations", "3", "--run-dir", str(shared))
    try:
        first.wait_for("iteration 1 ")
        os.kill(first.process.pid, signal.SIGSTOP)  # held wherever it is, mid-write perhaps, the lock with it
        before = listing(shared)
        # the same command typed again in another terminal (here in this process: another open of the lock)
        second = run_here("train.py", *TINY, "--iterations", "1", "--run-dir", str(shared))
        assert second.returncode == 2 and "Traceback" not in second.stderr, second.stderr
        assert len(second.stderr.strip().splitlines()) == 1, second.stderr
        assert f"{shared} is in use by process {first.process.pid}, since " in second.stderr
        assert "nothing was changed" in second.stderr and f"ps -o pid,lstart,args -p {first.process.pid}" in \
            second.stderr
        assert listing(shared) == before  # not a temporary file deleted, not a metrics line written
        # the resume of a run in use, and a new run of another config there: refused alike
        assert run_here("train.py", "--run-dir", str(shared), "--iterations", "5").returncode == 2
        assert listing(shared) == before
        os.kill(first.process.pid, signal.SIGCONT)
        assert first.finish() == 0, "".join(first.errors)
    finally:
        first.kill()
    assert not (shared / folder_lock.LOCK).exists()
    undisturbed_run = Training(*TINY, "--iterations", "3", "--run-dir", str(alone))  # (the same threads)
    assert undisturbed_run.finish() == 0, "".join(undisturbed_run.errors)
    ran, undisturbed = summary(shared), summary(alone)
    assert ran["positions"] == undisturbed["positions"] >= 180
    assert ran["chunks"] == undisturbed["chunks"] and len(ran["chunks"]) == 3
    assert ran["metrics"] == undisturbed["metrics"] and [m[0] for m in ran["metrics"]] == [1, 2, 3]
    for key, weights in undisturbed["model"].items():
        assert torch.equal(ran["model"][key], weights), key


def test_the_lock_of_a_killed_run_is_taken_over(tmp_path):
    run_dir = tmp_path / "run"
    killed = Training(*TINY, "--iterations", "100000", "--run-dir", str(run_dir))
    try:
        killed.wait_for("iteration 1 ")
        record = json.loads((run_dir / folder_lock.LOCK).read_text())
        assert record["pid"] == killed.process.pid and record["host"] == platform.node()
    finally:
        killed.process.kill()
        killed.finish()
    assert (run_dir / folder_lock.LOCK).exists()  # left behind, and stale: the system dropped the lock
    done = saved_iteration(run_dir)
    out = run_here("train.py", "--iterations", str(done + 1), "--run-dir", str(run_dir), "--no-progress")
    assert out.returncode == 0 and f"resuming {run_dir} at iteration {done}" in out.stdout, out.stderr
    assert not (run_dir / folder_lock.LOCK).exists() and saved_iteration(run_dir) == done + 1


@pytest.fixture
def no_flock(monkeypatch):
    """A filesystem that cannot lock files (some network mounts): flock fails with ENOLCK."""
    def refuse(descriptor, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(folder_lock.fcntl, "flock", refuse)


def test_where_files_cannot_be_locked_the_record_decides_and_a_reused_pid_is_stale(tmp_path, no_flock):
    record = {"host": platform.node(), "pid": os.getpid(), "process_start": folder_lock.process_start(os.getpid()),
              "since": "then", "command": "train.py"}
    lock_file = tmp_path / folder_lock.LOCK
    lock_file.write_text(json.dumps(record))
    with pytest.raises(folder_lock.FolderInUse, match=f"in use by process {os.getpid()}, since then"):
        folder_lock.hold(tmp_path)  # a live process (this one)
    assert json.loads(lock_file.read_text()) == record  # refused: not written
    for stale in ({**record, "process_start": -1},  # the pid is another process's now
                  {**record, "pid": 2**22 + 12345},  # beyond pid_max: gone
                  {"garbage": True}):
        lock_file.write_text(json.dumps(stale))
        with folder_lock.hold(tmp_path, ["train.py"]):
            assert json.loads(lock_file.read_text())["pid"] == os.getpid()
        assert not lock_file.exists()
    lock_file.write_text(json.dumps({**record, "host": "elsewhere"}))  # another machine's: cannot be told, refused
    with pytest.raises(folder_lock.FolderInUse, match="on elsewhere"):
        folder_lock.hold(tmp_path)


def test_the_lock_file_cannot_be_made_in_a_read_only_folder_is_one_error(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as a user who may write anywhere")
        with pytest.raises(UserError, match="cannot make the lock file"):
            folder_lock.hold(folder)
    finally:
        folder.chmod(0o700)


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_run_exits_128_plus_the_signal_and_keeps_its_last_iteration(tmp_path, signal_number):
    run_dir = tmp_path / "run"
    training = Training(*TINY, "--iterations", "100000", "--run-dir", str(run_dir))
    try:
        training.wait_for("iteration 1 ")
        training.process.send_signal(signal_number)
        status = training.finish()
    finally:
        training.kill()
    assert status == 128 + signal_number, (status, "".join(training.errors))
    assert "Traceback" not in "".join(training.errors)
    stopped = [line for line in training.lines if line.startswith("stopped; ")]
    assert len(stopped) == 1, training.lines[-3:]
    held = int(stopped[0].split("holds iteration ")[1].split(".")[0])
    assert held >= 1 and saved_iteration(run_dir) == held
    assert not (run_dir / folder_lock.LOCK).exists()


def test_train_help_names_the_exit_statuses():
    out = run_here("train.py", "--help")
    text = " ".join(out.stdout.split())
    assert "130 stopped by Ctrl-C, 143 by SIGTERM" in text and "a second is refused" in text
    assert "130 stopped by Ctrl-C, 143 by SIGTERM" in " ".join(run_here("ablate.py", "--help").stdout.split())


def test_an_ablation_folder_in_use_is_refused(tmp_path):
    out = tmp_path / "ablation"
    out.mkdir()
    with folder_lock.hold(out, [sys.executable, "ablate.py"]):
        refused = run_here("ablate.py", "--game", "tictactoe", "--iterations", "1", "--arm", "a:", "--out", str(out))
    assert refused.returncode == 2 and f"{out} is in use by process {os.getpid()}" in refused.stderr, refused.stderr
    assert [p.name for p in out.iterdir()] == []
