"""Training on Ray (scripts/train.py --ray) as a user runs it, on a local instance with 2 CPUs: the
run folder and metrics of a one-process run, an actor killed by its pid, the learner killed,
resume with and without Ray; the ledger that checks what actors send; the error without Ray."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import games
from azero.distributed.ledger import Chunk, Ledger, select_games
from azero.errors import UserError
from azero.selfplay import Samples
from commands import run_here
from runs import ctrl_c_default, tiny_args

REPO = Path(__file__).resolve().parent.parent
TINY = tiny_args({
    "evaluation.previous_games": 2,
    "run.threads": 1,  # on a loaded machine, torch's threads spin against each other (10x slower)
})
RAY = ["--ray", "--actors", "2"]


def ray_installed() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


needs_ray = pytest.mark.skipif(not ray_installed() and not os.environ.get("CI"),
                               reason="Ray is not installed (pip install -e '.[ray]'; CI installs it)")


def train(*args: str, timeout: int = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "train.py"), *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def start(log: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, str(REPO / "scripts" / "train.py"), *args], stdout=out,
                                stderr=subprocess.STDOUT, text=True, env=env, preexec_fn=ctrl_c_default)


def wait_for(predicate, timeout: float, what: str, process: subprocess.Popen | None = None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        if process is not None and process.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def latest(run_dir: Path) -> dict:
    return torch.load(run_dir / "latest.pt", weights_only=True)


def actor_pids(log: Path) -> dict[int, int]:
    """The self-play actors' first processes, as the learner logs them."""
    found = (re.match(r"self-play actor (\d+): pid (\d+)$", line) for line in log.read_text().splitlines())
    return {int(m.group(1)): int(m.group(2)) for m in found if m}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def files(run_dir: Path) -> set[str]:
    """The run folder's files, with the sample count dropped from replay names (it varies)."""
    out = set()
    for path in run_dir.rglob("*"):
        if path.is_file() and not path.name.startswith(".") and "tb" not in path.relative_to(run_dir).parts:
            name = str(path.relative_to(run_dir))
            out.add(name.rsplit("-", 1)[0] if name.startswith("replay/") else name)
    return out


def replayed(run_dir: Path) -> int:
    """Samples in the replay chunks of the iterations the checkpoint holds (a run stopped inside an
    iteration may leave that iteration's chunk, which a resumed run deletes)."""
    done = latest(run_dir)["iteration"]
    counts = [p.stem.split("-")[1:] for p in (run_dir / "replay").glob("iter-*.pt")]
    return sum(int(count) for iteration, count in counts if int(iteration) <= done)


# -- the ledger ------------------------------------------------------------------------------------


def chunk(incarnation="0.1.1", sequence=0, ids=(0, 1), lengths=(3, 2), watermark=2) -> Chunk:
    n = sum(lengths)
    game = games.make("tictactoe")
    samples = Samples(torch.zeros(n, game.num_planes, 3, 3, dtype=torch.uint8), torch.zeros(n, 9),
                      torch.ones(n, 9, dtype=torch.bool), torch.arange(n, dtype=torch.float))
    return Chunk(actor=0, incarnation=incarnation, sequence=sequence, pid=1, version=0, samples=samples,
                 game_ids=torch.tensor(ids), lengths=torch.tensor(lengths), results=torch.zeros(len(ids)),
                 watermark=watermark, seconds=1.0, network_calls=1, network_positions=1)


def test_the_ledger_refuses_games_counted_twice_and_counts_chunks_lost():
    ledger = Ledger()
    first = chunk(ids=(0, 1), lengths=(3, 2), watermark=2)
    assert ledger.admit(first).tolist() == [True, True]
    assert ledger.admit(first).tolist() == [False, False] and ledger.duplicate_chunks == 1  # the same chunk again
    # chunk 1 never came; chunk 2 repeats game 1 (below the watermark) and game 5, and brings game 4
    third = chunk(sequence=2, ids=(1, 4, 5, 5), lengths=(2, 1, 2, 2), watermark=6)
    keep = ledger.admit(third)
    assert keep.tolist() == [False, True, True, False]
    assert ledger.missing_chunks == 1 and ledger.duplicate_games == 2
    assert select_games(third, keep).value.tolist() == [2.0, 3.0, 4.0]  # games 4 and 5, rows 2..4
    assert ledger.admit(chunk(incarnation="0.2.2", ids=(0,), lengths=(3,), watermark=1)).tolist() == [True]
    malformed = chunk(sequence=3, ids=(6,), lengths=(4,), watermark=3)
    malformed.lengths = torch.tensor([5])
    assert ledger.admit(malformed).tolist() == [False]
    assert len(select_games(malformed, torch.tensor([False]))) == 0
    assert ledger.malformed_chunks == 1  # the lengths do not add up to the samples


def test_the_ledger_keeps_only_the_ids_above_the_watermark():
    ledger = Ledger()
    for sequence in range(50):
        ids = (2 * sequence, 2 * sequence + 1)
        assert ledger.admit(chunk(sequence=sequence, ids=ids, watermark=2 * sequence + 2)).all()
    assert ledger.incarnations["0.1.1"]["seen"] == set()
    assert ledger.faults() == {"actors/missing_chunks": 0, "actors/duplicate_chunks": 0,
                               "actors/duplicate_games": 0, "actors/malformed_chunks": 0}


# -- the command -----------------------------------------------------------------------------------


def test_ray_without_ray_installed_is_one_clear_error(tmp_path, monkeypatch):
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "ray.py").write_text("raise ImportError('No module named ray')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), *filter(None, [os.environ.get("PYTHONPATH")])])}
    run_dir = tmp_path / "run"
    out = train(*TINY, *RAY, "--iterations", "1", "--run-dir", str(run_dir), env=env)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "--ray needs Ray" in out.stderr and "pip install -e '.[ray]'" in out.stderr
    assert not run_dir.exists()
    out = run_here("train.py", *TINY, "--actors", "2", "--iterations", "1", "--run-dir", str(run_dir))
    assert out.returncode == 2 and "add --ray" in out.stderr and not run_dir.exists()
    # the bench says so before the other groups' minutes, not after them
    import azero.throughput

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray: ImportError
    monkeypatch.setattr(azero.throughput, "run", lambda *args, **kwargs: pytest.fail("a group ran before the Ray check"))
    out = run_here("bench.py", "--only", "puct", "--only", "ray")
    assert out.returncode == 2 and out.stderr.startswith("error: --only ray needs Ray, which is not installed"), out


@needs_ray
def test_failed_actor_calls_are_retried_and_a_user_error_inside_one_is_said_as_itself(monkeypatch):
    """Ray's failures other than a dead actor's (killed for memory, its node gone) were tracebacks;
    a UserError inside an actor's method (a ladder rung the node cannot make) printed the remote
    traceback under "error:"."""
    import ray

    from azero.distributed import source

    def raising(error):
        def get(reference, **kwargs):
            raise error
        return get

    pool = object.__new__(source.RaySelfPlay)  # its bookkeeping of failed calls alone
    pool.ray, pool.lost_calls, pool.failures, pool.failing_since, pool.retry_at = ray, [0], [0], [0.0], [0.0]
    memory = ray.exceptions.OutOfMemoryError("Task was killed due to the node running low on memory.\nMore...")
    monkeypatch.setattr(ray, "get", raising(memory))
    assert pool._receive(object(), 0) is None and pool.lost_calls == [1]  # a failed call: asked again later
    monkeypatch.setattr(source, "PATIENCE", -1.0)
    with pytest.raises(source.ActorsFailing, match="the last error: Task was killed due to the node running low on "
                                                  "memory.$"):
        pool._receive(object(), 0)
    user = UserError("evaluation.ladder rung 'gtp:gnugo --mode gtp': cannot start gnugo")
    inside = ray.exceptions.RayTaskError("EvaluatorWorker.evaluate", "Traceback (most recent call last):\n  File "
                                         "\"x\", line 1\nazero.errors.UserError: ...", user).as_instanceof_cause()
    monkeypatch.setattr(ray, "get", raising(inside))
    with pytest.raises(UserError) as raised:
        pool._receive(object(), 0)
    assert raised.value is user
    bug = ray.exceptions.RayTaskError("SelfPlayWorker.play", "Traceback (most recent call last):\n  File \"x\", "
                                      "line 1\nZeroDivisionError: division by zero", ZeroDivisionError("division by zero"))
    assert source.user_error_inside(ray, bug) is None
    assert source.failure_line(bug) == "ZeroDivisionError: division by zero"


def test_a_ray_address_whose_port_no_socket_has_is_refused_before_any_connection():
    from azero.distributed.cluster import check_reachable

    for port in ("0", "70000", "9223372036854775808"):  # (the last: an OverflowError traceback, before)
        with pytest.raises(UserError, match="write auto or HOST:PORT \\(a port from 1 to 65535\\)"):
            check_reachable(f"127.0.0.1:{port}")


@needs_ray
def test_a_ray_address_nobody_listens_on_is_one_clear_error(tmp_path):
    run_dir = tmp_path / "run"
    out = train(*TINY, "--ray-address", "127.0.0.1:1", "--iterations", "1", "--run-dir", str(run_dir), timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "could not join the Ray cluster at 127.0.0.1:1" in out.stderr and "ray start --head" in out.stderr
    assert not run_dir.exists()
    out = train(*TINY, "--ray-address", "nowhere", "--iterations", "1", "--run-dir", str(run_dir), timeout=120)
    assert out.returncode == 2 and "write auto or HOST:PORT" in out.stderr and not run_dir.exists()


@needs_ray
def test_actors_that_cannot_start_are_one_clear_error_and_leave_no_folder(tmp_path):
    # (as on a cluster node without azero): the constructor raises in every actor's process
    run_dir = tmp_path / "run"
    out = train(*TINY, *RAY, "--iterations", "1", "--run-dir", str(run_dir),
                env={**os.environ, "AZERO_FAULT": "actor.start:enospc"}, timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "the actors could not start: OSError: [Errno 28] No space left on device" in out.stderr, out.stderr
    assert not run_dir.exists()


@needs_ray
def test_a_killed_actor_is_replaced_and_no_finished_game_is_lost_or_counted_twice(tmp_path):
    run_dir, log = tmp_path / "run", tmp_path / "log"
    process = start(log, *TINY, *RAY, "--iterations", "200", "--run-dir", str(run_dir))
    try:
        wait_for(lambda: "iteration 1 " in log.read_text(), 300, "the first iteration", process)
        victim = actor_pids(log)[1]
        os.kill(victim, signal.SIGKILL)  # in the middle of a call: actors play while the learner trains
        wait_for(lambda: "self-play actor 1 restarted" in log.read_text(), 400, "the actor's restart", process)
        wait_for(lambda: metrics(run_dir)[-1]["actors/1/restarts"] == 1, 120, "a record after the restart", process)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=120)
    finally:
        process.kill()
    text = log.read_text()
    assert process.returncode == 130, text[-2000:]  # a stopped run is not a finished one
    assert "Continue with" in text and "Traceback" not in text
    assert actor_pids(log)[1] == victim and not alive(victim)
    records = metrics(run_dir)
    assert [r["iteration"] for r in records] == list(range(1, len(records) + 1))
    last = records[-1]
    assert last["actors/restarts"] == 1 and last["actors/0/restarts"] == 0 and last["actors/lost_calls"] >= 1
    assert last["actors/missing_chunks"] == last["actors/duplicate_chunks"] == 0
    assert last["actors/duplicate_games"] == last["actors/malformed_chunks"] == 0
    # Ctrl-C may land in the last iteration's checkpoint, after its metrics line (a resume drops that line)
    done = latest(run_dir)["iteration"]
    assert done in (len(records), len(records) - 1)
    assert latest(run_dir)["positions"] == replayed(run_dir) == records[done - 1]["charts/positions"]
    assert sum(r["selfplay/games"] * r["selfplay/game_length"] for r in records[:done]) == pytest.approx(replayed(run_dir))


@needs_ray
def test_a_ray_run_resumes_without_ray_and_with_it_after_its_learner_is_killed_and_leaves_a_one_process_runs_files(
        tmp_path):
    run_dir, log = tmp_path / "run", tmp_path / "log"
    # the learner dies (kill -9) in the middle of writing iteration 2's checkpoint
    process = start(log, *TINY, *RAY, "--iterations", "200", "--run-dir", str(run_dir),
                    env={**os.environ, "AZERO_FAULT": "checkpoint.rename@2:kill"})
    try:
        assert process.wait(timeout=600) == -signal.SIGKILL, log.read_text()[-2000:]
    finally:
        process.kill()
    pids = actor_pids(log)
    assert len(pids) == 2
    assert list(run_dir.glob(".latest.pt.*.tmp")) and list((run_dir / "replay").glob("iter-000002-*.pt"))
    wait_for(lambda: not any(alive(pid) for pid in pids.values()), 60, "the actors to die with their learner")
    done = latest(run_dir)["iteration"]
    assert done == 1  # iteration 2 was not saved: a resume drops its replay chunk, metrics line and temporary file
    out = train("--iterations", str(done + 1), "--run-dir", str(run_dir), "--no-progress")
    assert out.returncode == 0, out.stderr
    assert f"resuming {run_dir} at iteration {done}" in out.stdout
    out = train(*TINY, *RAY, "--iterations", str(done + 2), "--run-dir", str(run_dir))  # the first command again
    assert out.returncode == 0, out.stderr
    assert f"resuming {run_dir} at iteration {done + 1}" in out.stdout and "self-play actor 1: pid" in out.stdout
    records = metrics(run_dir)
    assert [r["iteration"] for r in records] == list(range(1, done + 3))
    assert "actors/count" in records[-1] and "actors/count" not in records[-2]
    assert latest(run_dir)["iteration"] == done + 2
    assert latest(run_dir)["positions"] == replayed(run_dir) == records[-1]["charts/positions"]
    assert len(list((run_dir / "replay").glob("iter-*.pt"))) == done + 2
    assert all(not p.name.startswith(".") for p in run_dir.iterdir())
    # what the run left is what a run of the same length on one process leaves, plus the actors' metrics
    alone = tmp_path / "alone"  # in two commands too, so that both evaluate at their ends
    for budget in (done + 1, done + 2):
        out = train(*TINY, "--iterations", str(budget), "--run-dir", str(alone))
        assert out.returncode == 0, out.stderr
    assert files(run_dir) == files(alone)
    assert list((run_dir / "tb").glob("events.out.tfevents.*"))
    keys_alone = set().union(*metrics(alone))
    keys_spread = set().union(*metrics(run_dir))
    assert keys_alone <= keys_spread
    assert {k.split("/")[0] for k in keys_spread - keys_alone} == {"actors"}
    assert "eval/elo" in records[-1] and records[-1]["eval/network_iteration"] == done + 2
    last = records[-1]
    assert {"actors/0/restarts", "actors/1/restarts", "actors/0/lost_calls", "actors/1/lost_calls"} <= set(last)
    # an actor whose call was still running when the others had filled the iteration sent nothing (its rate is absent)
    sent = [last[f"actors/{k}/positions"] for k in range(2)]
    assert sum(sent) >= last["charts/positions"] - records[-2]["charts/positions"] > 0
    assert [f"actors/{k}/positions_per_s" in last for k in range(2)] == [n > 0 for n in sent]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    board = EventAccumulator(str(run_dir / "tb"))
    board.Reload()
    assert {"actors/0/positions", "actors/1/restarts", "charts/weights_staleness"} <= set(board.Tags()["scalars"])
    assert all(r["charts/weights_staleness"] >= 0 for r in records)
    assert latest(run_dir).keys() == latest(alone).keys()
