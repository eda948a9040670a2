"""Run an ablation: each arm's training runs one after another, then each final network against the yardsticks.

    ablation = Ablation(Path("runs/ablate-c4"), plan)   # or Ablation.open(folder) to continue one
    ablation.run()                                       # resumable: finished steps are skipped

Everything runs as the project's own commands in subprocesses (scripts/train.py,
scripts/judge.py, scripts/evaluate.py), one at a time, so an arm never shares the
two cores with another; each command is printed before it runs and logged with its
exit status in the folder's ablation.json:

    OUT/ablation.json    the plan, every run's state and results (and head-to-head matches), the log of commands
    OUT/ARM-seedS/       each run's folder (a training run folder, azero/loop.py)
    OUT/ablation.md      the table of results (azero/ablation/report.py)
    OUT/elo.svg          Elo against training minutes, the arms side by side
    OUT/lock             while an ablate.py runs it (azero/folder_lock.py; each run folder has its own)

Stopping it at any moment (Ctrl-C, SIGTERM) stops the command in progress; running
it again continues: finished trainings and measurements are kept, an interrupted
training continues from its last iteration for the minutes it has not yet trained.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..checkpoint import atomic_write_text
from ..errors import Stopped, UserError, exists, is_int
from ..folder_lock import LOCK, hold
from ..metrics import read_metrics
from .plan import Arm, Plan, judge_options
from .report import write_report

REPO = Path(__file__).resolve().parent.parent.parent
SCRIPTS = REPO / "scripts"
STATE = "ablation.json"
STOP_WAIT_SECONDS = 10  # for a command that got the same Ctrl-C to stop by itself
STOP_GRACE_SECONDS = 120  # then for a command sent SIGTERM to stop (a training ends as with Ctrl-C)
FINISHED_SHARE = 0.99  # a run that trained this share of its minutes needs no more


def display(argv: list[str]) -> str:
    """A command as a shell line: 'python scripts/train.py ...' (the script relative to the current folder)."""
    words = ["python" if argv[0] == sys.executable else argv[0]]
    for word in argv[1:]:
        path = Path(word)
        if path.is_absolute() and path.is_relative_to(Path.cwd()) and path.suffix == ".py":
            word = str(path.relative_to(Path.cwd()))
        words.append(word)
    return shlex.join(words)


class Ablation:
    """One ablation's folder: its plan, its runs' progress and results."""

    def __init__(self, folder: Path, plan: Plan, *, log=print):
        if any(mark in str(folder) for mark in ":,="):
            raise UserError(f"{folder}: an ablation's folder may not contain ':', ',' or '=' "
                            "(its path goes into player specs)")
        self.folder, self.plan, self.log = Path(folder), plan, log
        self.terminated = False  # a SIGTERM came (sent to this process alone: the command in progress is told)
        self.state: dict = {"plan": plan.to_dict(), "runs": {}, "commands": []}
        existing = next(path for path in (self.folder, *self.folder.absolute().parents) if exists(path))
        if not existing.is_dir():
            raise UserError(f"--out {self.folder}: {existing} is a file, not a folder")
        path = self.folder / STATE
        if exists(path):
            saved, saved_plan = read_state(path)
            difference = plan.extends(saved_plan)
            if difference:
                raise UserError(f"{self.folder} holds another ablation ({difference}); choose a new --out, or "
                                f"give only --out {self.folder} to continue it")
            self.state["runs"], self.state["commands"] = saved["runs"], saved["commands"]
        elif exists(self.folder) and any(entry.name != LOCK for entry in self.folder.iterdir()):
            raise UserError(f"{self.folder} exists and holds no {STATE}; choose a new --out")
        if not (SCRIPTS / "train.py").exists():
            raise UserError(f"ablations run the scripts of a source checkout ({SCRIPTS / 'train.py'} is missing)")

    @staticmethod
    def open(folder: Path, *, log=print) -> "Ablation":
        """The ablation saved in `folder`, to continue it."""
        path = Path(folder) / STATE
        if not exists(path):
            raise UserError(f"{path} not found: give the plan (--game, --arm, a budget) to start an ablation there")
        return Ablation(folder, read_state(path)[1], log=log)

    def add_head_to_head(self, games: int) -> None:
        """Have this ablation (opened to continue it) play head-to-head matches of `games` games:
        allowed where its plan had none or the same number."""
        changed = Plan.from_dict({**self.plan.to_dict(), "head_to_head": games})
        changed.check()
        difference = changed.extends(self.plan)
        if difference:
            raise UserError(f"{self.folder} holds another ablation ({difference})")
        self.plan = changed
        self.state["plan"] = changed.to_dict()

    # -- state ----------------------------------------------------------------------------------
    def save(self) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.folder / STATE, json.dumps(self.state, indent=1) + "\n")
        except OSError as error:  # a full disk: the state saved before stands (its write is atomic)
            raise UserError(self.unwritten(self.folder / STATE, error)) from None

    def unwritten(self, path: Path, error: OSError) -> str:
        """What to say when one of the ablation's own files cannot be written."""
        return (f"cannot write {path}: {error.strerror or error}; {self.folder} keeps what was saved before (a "
                f"result printed above is not in it). Once that is mended, continue with: python scripts/ablate.py "
                f"--out {self.folder}")

    def run_dir(self, arm: Arm, seed: int) -> Path:
        return self.folder / f"{arm.name}-seed{seed}"

    def record(self, arm: Arm, seed: int) -> dict:
        key = f"{arm.name}-seed{seed}"
        return self.state["runs"].setdefault(key, {"arm": arm.name, "seed": seed, "trained": False, "results": {}})

    # -- commands -------------------------------------------------------------------------------
    def train_command(self, arm: Arm, seed: int) -> list[str]:
        """A new run's training command, or the one that continues a run folder stopped part way."""
        run_dir = self.run_dir(arm, seed)
        command = [sys.executable, str(SCRIPTS / "train.py")]
        if not (run_dir / "config.toml").exists():
            command += ["--game", self.plan.preset, "--seed", str(seed)]
            for override in (*self.plan.overrides, *arm.overrides):
                command += ["--set", override]
        command += ["--run-dir", str(run_dir)]
        if self.plan.iterations is not None:
            command += ["--iterations", str(self.plan.iterations)]
        else:
            remaining = self.plan.minutes - trained_minutes(run_dir)
            command += ["--minutes", f"{max(remaining, 0.01):.4g}"]
        return [*command, "--no-progress"]

    def network(self, arm: Arm, seed: int) -> str:
        """The player spec of a run's final network, searching the plan's simulations."""
        return f"az:{self.run_dir(arm, seed) / 'latest.pt'}:sims={self.plan.simulations}"

    def match_command(self, arm: Arm, seed: int, opponent: str, games: int, opening_plies: int) -> list[str]:
        """A match of a run's final network (--a) against `opponent` (--b), alternating colours, seed 0."""
        return [sys.executable, str(SCRIPTS / "evaluate.py"), "--game", game_spec(self.run_dir(arm, seed)),
                "--a", self.network(arm, seed), "--b", opponent, "--games", str(games), "--opening-plies",
                str(opening_plies), "--seed", "0", "--json"]

    def yardstick_command(self, arm: Arm, seed: int, yardstick: str) -> list[str]:
        options = judge_options(yardstick)
        if options is None:
            plies = self.plan.yardstick_opening_plies(yardstick)
            return self.match_command(arm, seed, yardstick, self.plan.games, plies)
        return [sys.executable, str(SCRIPTS / "judge.py"), "--game", game_spec(self.run_dir(arm, seed)),
                "--player", self.network(arm, seed), "--positions", str(options["positions"]), "--min-plies",
                str(options["min_plies"]), "--max-plies", str(options["max_plies"]), "--seed", "0", "--json"]

    def head_to_head_command(self, arm: Arm, seed: int) -> list[str]:
        """The match of this arm's final network (--a) against the first arm's of the same seed (--b)."""
        return self.match_command(arm, seed, self.network(self.plan.arms[0], seed), self.plan.head_to_head,
                                  self.plan.head_to_head_opening_plies())

    def execute(self, command: list[str], *, capture: bool) -> tuple[int, list[str]]:
        """Run one command (printed first, logged after); (exit status, its output lines when captured).

        An interrupt (Ctrl-C, SIGTERM) stops the command too and is raised again.
        """
        line = display(command)
        self.log(f"$ {line}")
        entry = {"command": line, "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
        began = time.monotonic()
        # unbuffered: a training's log lines come through the pipe as they are written
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, bufsize=1,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
        lines = []
        try:
            for output in process.stdout:
                lines.append(output.rstrip("\n"))
                if not capture:
                    self.log(output.rstrip("\n"))
            status = process.wait()
        except KeyboardInterrupt:
            _stop(process, forward=self.terminated)
            entry.update(seconds=round(time.monotonic() - began, 1), exit="interrupted")
            self.state["commands"].append(entry)
            self.save()
            raise
        entry.update(seconds=round(time.monotonic() - began, 1), exit=status)
        self.state["commands"].append(entry)
        self.save()
        return status, lines

    def _terminate(self, signum, frame):
        self.terminated = True
        raise KeyboardInterrupt

    # -- the steps ------------------------------------------------------------------------------
    def trained_enough(self, arm: Arm, seed: int) -> bool:
        """Whether the run folder already holds the whole budget (the ablation stopped before noting it)."""
        run_dir = self.run_dir(arm, seed)
        if not (run_dir / "latest.pt").exists():
            return False
        if self.plan.iterations is not None:
            return trained_iterations(run_dir) >= self.plan.iterations
        return trained_minutes(run_dir) >= FINISHED_SHARE * self.plan.minutes

    def train(self, arm: Arm, seed: int) -> None:
        record = self.record(arm, seed)
        if self.trained_enough(arm, seed):
            record["trained"] = True
            self.save()
            return
        status, lines = self.execute(self.train_command(arm, seed), capture=False)
        stopped = any(line.startswith("stopped;") for line in lines[-3:])
        if status != 0 or stopped:
            raise UserError(f"training {arm.name} seed {seed} did not finish (exit {status}); "
                            f"run the ablation again to continue it")
        if self.plan.iterations is not None and trained_iterations(self.run_dir(arm, seed)) < self.plan.iterations:
            raise UserError(f"training {arm.name} seed {seed} stopped before iteration {self.plan.iterations}")
        record["trained"] = True
        self.save()

    def result(self, command: list[str], what: str) -> dict:
        """Run a judge or match command and return the JSON line it printed last; UserError naming
        `what` if it failed."""
        status, lines = self.execute(command, capture=True)
        results = [json.loads(line) for line in lines if line.startswith("{")]
        if status != 0 or not results:
            raise UserError(f"{what} failed (exit {status})")
        self.log(json.dumps(results[-1]))  # on the terminal too: kept there if the state cannot be saved
        return results[-1]

    def measure(self, arm: Arm, seed: int, yardstick: str) -> None:
        record = self.record(arm, seed)
        record["results"][yardstick] = self.result(self.yardstick_command(arm, seed, yardstick),
                                                   f"measuring {arm.name} seed {seed} against {yardstick}")
        self.save()

    def wants_head_to_head(self, arm: Arm, record: dict) -> bool:
        return bool(self.plan.head_to_head) and arm != self.plan.arms[0] and "head_to_head" not in record

    def play_head_to_head(self, arm: Arm, seed: int) -> None:
        record = self.record(arm, seed)
        record["head_to_head"] = self.result(self.head_to_head_command(arm, seed), f"the match of {arm.name} seed "
                                             f"{seed} against {self.plan.arms[0].name}")
        self.save()

    def pending(self) -> list[str]:
        """What is left to do, in order, as one line each."""
        todo = []
        for arm, seed in self.plan.runs():
            record = self.state["runs"].get(f"{arm.name}-seed{seed}", {"trained": False, "results": {}})
            if not record["trained"]:
                todo.append(f"train {arm.name} seed {seed}")
            todo += [f"measure {arm.name} seed {seed} against {y}" for y in self.plan.yardsticks
                     if y not in record["results"]]
            if self.wants_head_to_head(arm, record):
                todo.append(f"play {arm.name} seed {seed} against {self.plan.arms[0].name} seed {seed} "
                            f"({self.plan.head_to_head} games)")
        return todo

    def run(self) -> None:
        """Every step not done yet, in order; writes the table and the plot after each run. The
        ablation's folder is locked meanwhile (each training locks its own run folder too); a stop
        (Ctrl-C, SIGTERM) raises errors.Stopped once the command in progress has stopped."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(f"cannot make {self.folder}: {error.strerror or error}") from None
        with hold(self.folder, sys.argv):
            if exists(self.folder / STATE):  # as the last command left it (it may have ended since it was read)
                saved, _ = read_state(self.folder / STATE)
                self.state["runs"], self.state["commands"] = saved["runs"], saved["commands"]
            self._run_locked()

    def _run_locked(self) -> None:
        self.save()
        previous = signal.signal(signal.SIGTERM, self._terminate)
        try:
            for arm, seed in self.plan.runs():
                record = self.record(arm, seed)
                if not record["trained"]:
                    self.train(arm, seed)
                for yardstick in self.plan.yardsticks:
                    if yardstick not in record["results"]:
                        self.measure(arm, seed, yardstick)
                if self.wants_head_to_head(arm, record):  # the first arm of this seed ran before this one
                    self.play_head_to_head(arm, seed)
                try:
                    write_report(self)
                except OSError as error:
                    raise UserError(self.unwritten(Path(error.filename or self.folder), error)) from None
        except KeyboardInterrupt:
            self.log(f"stopped; {self.folder} keeps what finished. Continue with: "
                     f"python scripts/ablate.py --out {self.folder}")
            raise Stopped(signal.SIGTERM if self.terminated else signal.SIGINT) from None
        finally:
            signal.signal(signal.SIGTERM, previous)


def _stop(process: subprocess.Popen, *, forward: bool) -> None:
    """Stop a command as Ctrl-C would (a training writes nothing half-way), and kill it only if it hangs.

    forward: send it SIGTERM at once (else first give it time to stop by itself: a Ctrl-C in the
    terminal reaches the whole process group).
    """
    if not forward:
        try:
            process.wait(STOP_WAIT_SECONDS)
            return
        except subprocess.TimeoutExpired:
            pass
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def read_state(path: Path) -> tuple[dict, Plan]:
    """An ablation's saved state and its plan; UserError if the file is not one save() wrote."""
    try:
        saved = json.loads(path.read_text())
        plan = saved.get("plan") if isinstance(saved, dict) else None
        if not isinstance(plan, dict) or not isinstance(saved.get("runs"), dict) \
                or not isinstance(saved.get("commands"), list):
            raise ValueError("not an ablation's state")
        fields = {f.name for f in dataclasses.fields(Plan)}
        if set(plan) - fields or {"preset", "arms", "seeds"} - set(plan) or not isinstance(plan["arms"], list) \
                or not all(isinstance(arm, str) for arm in plan["arms"]):
            raise ValueError("its plan is not one this version wrote")
        problem = _state_problem(plan, saved["runs"], saved["commands"])
        if problem:
            raise ValueError(problem)
        return saved, Plan.from_dict(plan)
    except (OSError, ValueError) as error:  # (a bad arm is a UserError, a ValueError)
        reason = error.strerror if isinstance(error, OSError) else str(error)
        raise UserError(f"{path} is damaged ({reason}); restore it from a copy, or choose a new --out") from None


# the types of a saved plan's values (JSON's: a whole number is an int, a list a list)
_NUMBER, _WHOLE = (int, float), (int,)
_PLAN_TYPES = {"preset": (str,), "minutes": (*_NUMBER, type(None)), "iterations": (*_WHOLE, type(None)),
               "games": _WHOLE, "simulations": _WHOLE, "opening_plies": _WHOLE, "head_to_head": _WHOLE}
_PLAN_LISTS = {"seeds": _WHOLE, "overrides": (str,), "yardsticks": (str,)}


# the counts the report adds up from a saved result: the judge's, a match's
_JUDGE_COUNTS, _MATCH_COUNTS = ("kept", "positions", "kept_decisive", "decisive"), ("a_wins", "draws", "b_wins")


def _result_problem(result, judged: bool) -> bool:
    """Whether a saved result lacks a count the report reads (whole numbers, not negative, some
    positions or games, the kept ones among them)."""
    keys = _JUDGE_COUNTS if judged else _MATCH_COUNTS
    counts = [result.get(key) for key in keys] if isinstance(result, dict) else [None]
    if not all(is_int(n) and n >= 0 for n in counts):
        return True
    if judged:
        kept, positions, kept_decisive, decisive = counts
        return not (0 < positions and kept <= positions and kept_decisive <= decisive <= positions)
    return sum(counts) == 0


def _state_problem(plan: dict, runs: dict, commands: list) -> str | None:
    """What in a saved state (valid JSON of the right outline) is not of the type save() writes,
    or None: the plan's values, each run's record with the counts of its results that the
    report reads, and each command's."""
    for key, kinds in _PLAN_TYPES.items():
        if key in plan and (isinstance(plan[key], bool) or not isinstance(plan[key], kinds)):
            return f"its plan's {key} is {plan[key]!r}"
    for key, kinds in _PLAN_LISTS.items():
        values = plan.get(key, [])
        if not isinstance(values, list) or any(isinstance(v, bool) or not isinstance(v, kinds) for v in values):
            return f"its plan's {key} is {values!r}"
    for name, record in runs.items():
        if not isinstance(record, dict) or not isinstance(record.get("trained"), bool) \
                or not isinstance(record.get("results"), dict) \
                or not all(isinstance(result, dict) for result in record["results"].values()) \
                or not isinstance(record.get("head_to_head", {}), dict):
            return f"its record of the run {name} is not one this version wrote"
        for yardstick, result in record["results"].items():
            if _result_problem(result, judge_options(yardstick) is not None):
                return f"its result of the run {name} against {yardstick} is not one this version wrote"
        if "head_to_head" in record and _result_problem(record["head_to_head"], False):
            return f"its head-to-head result of the run {name} is not one this version wrote"
    if not all(isinstance(entry, dict) and isinstance(entry.get("command"), str) for entry in commands):
        return "its list of the commands run is not one this version wrote"
    return None


def trained_minutes(run_dir: Path) -> float:
    """Minutes of training the run folder holds (0 for a new one)."""
    records = read_metrics(run_dir)
    return records[-1]["charts/hours"] * 60 if records else 0.0


def trained_iterations(run_dir: Path) -> int:
    records = read_metrics(run_dir)
    return int(records[-1]["iteration"]) if records else 0


def game_spec(run_dir: Path) -> str:
    """The game a run trained on, from its config.toml."""
    import tomllib

    with open(run_dir / "config.toml", "rb") as handle:
        return tomllib.load(handle)["game"]["spec"]

