"""The fault test of training on Ray: kill -9 one self-play actor's process every so often during a
tic-tac-toe run, then check that the run finished, every actor was restarted, the metrics have
no gap, the ledger found nothing lost or counted twice, and the final network still never loses
to perfect play.

    python scripts/ray_fault_test.py                      # 5 minutes, a kill every 30 s, 2 actors
    python scripts/ray_fault_test.py --minutes 2 --every 20 --run-dir runs/ray-faults

It prints one JSON object (the checks and the figures behind them) and exits 1 if a check failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..errors import UserError, cli_entry
from ..metrics import read_metrics

SCRIPTS = Path(__file__).resolve().parent.parent.parent / "scripts"
FIRST = re.compile(r"self-play actor (\d+): pid (\d+)")
REPLACED = re.compile(r"self-play actor (\d+) restarted: pid (\d+)")


def actor_processes(log: str) -> dict[int, int]:
    """Each actor's newest working process, from the learner's log: the first ones, and each
    replacement once the learner has received games from it (a replacement killed before it
    sent any would be a restart nobody sees)."""
    newest: dict[int, int] = {}
    for line in log.splitlines():
        match = FIRST.search(line) or REPLACED.search(line)
        if match:
            newest[int(match.group(1))] = int(match.group(2))
    return newest


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def kill_actors(log_path: Path, process: subprocess.Popen, every: float, actors: int) -> list[dict]:
    """Every `every` seconds, kill -9 the next actor (in turn) whose newest working process is
    alive; when none is yet (replacements still starting), the kill waits for one, and the next
    comes `every` seconds after it."""
    kills: list[dict] = []
    started = time.monotonic()
    turn = 0
    next_kill = every
    while process.poll() is None:
        time.sleep(0.5)
        now = time.monotonic() - started
        if now < next_kill:
            continue
        processes = actor_processes(log_path.read_text())
        for offset in range(actors):
            k = (turn + offset) % actors
            pid = processes.get(k)
            if pid and alive(pid) and all(kill["pid"] != pid for kill in kills):
                os.kill(pid, signal.SIGKILL)
                kills.append({"actor": k, "pid": pid, "second": round(now, 1)})
                turn = k + 1
                next_kill = now + every
                break
    return kills


@cli_entry
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ray_fault_test.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="training budget (default 5)")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between kills (default 30)")
    parser.add_argument("--actors", type=int, default=2, help="self-play actors (default 2)")
    parser.add_argument("--games", type=int, default=100, help="games against perfect play at the end (default 100)")
    parser.add_argument("--run-dir", type=Path, default=Path("runs") / time.strftime("ray-faults-%Y%m%d-%H%M%S"))
    args = parser.parse_args(argv)
    if args.run_dir.exists():
        parser.error(f"{args.run_dir} exists; choose a new --run-dir")
    args.run_dir.parent.mkdir(parents=True, exist_ok=True)
    log_path = args.run_dir.parent / f"{args.run_dir.name}.log"
    command = [sys.executable, str(SCRIPTS / "train.py"), "--game", "tictactoe", "--ray", "--actors",
               str(args.actors), "--minutes", str(args.minutes), "--run-dir", str(args.run_dir), "--no-progress"]
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        kills = kill_actors(log_path, process, args.every, args.actors)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        process.wait()
    records = read_metrics(args.run_dir)
    if not records:  # the run never trained: train.py said why in the log
        lines = log_path.read_text(errors="replace").strip().splitlines()
        raise UserError(f"the training run stopped before its first iteration (exit {process.returncode}): "
                        f"{lines[-1][:300] if lines else 'no output'}; its log: {log_path}")
    last = records[-1]
    match = subprocess.run([sys.executable, str(SCRIPTS / "evaluate.py"), "--game", "tictactoe", "--a",
                            f"az:{args.run_dir / 'latest.pt'}", "--b", "perfect", "--games", str(args.games),
                            "--json"], capture_output=True, text=True)
    result = json.loads(match.stdout) if match.returncode == 0 else {"error": match.stderr.strip()}
    hours = [r["charts/hours"] for r in records]
    checks = {
        "run_finished": process.returncode == 0 and "Traceback" not in log_path.read_text(),
        "every_actor_restarted": all(last.get(f"actors/{k}/restarts", 0) >= 1 for k in range(args.actors)),
        "every_kill_seen": last.get("actors/restarts", 0) >= len(kills) - args.actors,  # the last ones may come late
        "metrics_continuous": [r["iteration"] for r in records] == list(range(1, len(records) + 1))
        and hours == sorted(hours),
        "nothing_lost_or_counted_twice": all(last[key] == 0 for key in (
            "actors/missing_chunks", "actors/duplicate_chunks", "actors/duplicate_games", "actors/malformed_chunks")),
        "never_loses_to_perfect": result.get("b_wins") == 0,
    }
    print(json.dumps({
        "checks": checks, "kills": kills, "iterations": len(records), "positions": last["charts/positions"],
        "restarts": {k: last.get(f"actors/{k}/restarts") for k in range(args.actors)},
        "lost_calls": last.get("actors/lost_calls"), "against_perfect": result, "run_dir": str(args.run_dir),
        "log": str(log_path), "command": command,
    }, indent=2))
    return 0 if all(checks.values()) else 1
