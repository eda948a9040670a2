"""The training run: self-play -> train -> (sometimes) evaluate -> checkpoint, resumable.

A run lives in one folder:

    config.toml        the resolved config it runs with
    provenance.json    azero version, git commit (and provenance.diff if the tree was dirty), command
    latest.pt          network + optimizer + counters + random states + games in progress
    checkpoints/       iter-000010.pt ... network-only checkpoints every run.keep_every iterations
    replay/            iter-000007-4123.pt ... each iteration's new samples
    metrics.jsonl      one JSON record per iteration (the same scalars as TensorBoard)
    tb/                TensorBoard events
    lock               while a command writes the folder: its lock (azero/folder_lock.py), naming it

Everything is written at the end of an iteration, atomically, so stopping at
any moment (Ctrl-C, kill, power cut) loses at most the iteration in progress;
starting again with the same folder continues exactly where it stopped. One
command at a time writes a folder: a second is refused before it reads or
writes anything there, and readers (plots, evaluate.py of latest.pt) need no
lock, since every file is replaced whole or, for metrics.jsonl, appended to.

The run is the learner; its samples come from a source: self-play in this process
(LocalSelfPlay, below) or on Ray actors (azero/distributed/source.py's RaySelfPlay, with
`train(..., source=...)`). The folder is the same either way, and either resumes the other.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch

import games

from . import __version__
from .arena import MAX_GAMES_AT_ONCE, check_opening
from .checkpoint import (
    TEMPORARY_SUFFIX,
    atomic_save,
    atomic_write_text,
    load_checkpoint,
    network_checkpoint,
    remove_temporary_files,
    training_stages,
)
from .config import Config, config_from_dict, differences, read_toml, toml_text
from .errors import Stopped, UserError, naming_file
from .faults import fault
from .folder_lock import LOCK, FolderLock, hold
from .ladder import LadderEvaluator
from .metrics import METRICS, read_metrics
from .network import PolicyValueNet, device_problem, precision_problem
from .players.base import MAX_SIMULATIONS
from .replay import ReplayBuffer, chunks, prune, restore, save_chunk
from .search import memory
from .search.tree import node_bytes
from .selfplay import Samples, SelfPlay, stored_fields, tree_nodes
from .trainer import Trainer, TrainingDiverged, autocast_dtype
from .warm_start import read_initial_network, start_network

REPO = Path(__file__).resolve().parent.parent  # the source checkout, when azero runs from one


def new_run_dir(game_name: str, root: str | Path = "runs") -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = Path(root) / f"{game_name}-{stamp}"
    suffix = 1
    while path.exists():
        suffix += 1
        path = Path(root) / f"{game_name}-{stamp}-{suffix}"
    return path


def _git(*args: str) -> str | None:
    """git's output in the checkout azero runs from; None for an installed copy (whose folder
    may sit inside some other repository, e.g. a virtual environment in a project)."""
    if not (REPO / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def write_provenance(run_dir: Path, command: list[str]) -> None:
    commit = (_git("rev-parse", "HEAD") or "").strip() or "unknown"
    diff = _git("diff", "HEAD") or ""
    record = {
        "azero_version": __version__,
        "git_commit": commit,
        "git_dirty": bool(diff.strip()),
        "command": command,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "host": platform.node(),
    }
    atomic_write_text(run_dir / "provenance.json", json.dumps(record, indent=2) + "\n")
    if diff.strip():
        atomic_write_text(run_dir / "provenance.diff", diff)


def open_run(config: Config | None, run_dir: Path | None,
             command: list[str]) -> tuple[Config, Path, bool, set[str] | None, FolderLock]:
    """(config, folder, resuming, before, lock). A folder holding config.toml is resumed with its own
    config; a config given for it too (the command that started the run, typed again) must agree
    with it. `before`: for a new run in a folder that existed, the names it held then (only files
    a crashed atomic write left); None for a resumed run or a folder made here. `lock`: the
    folder's lock (azero/folder_lock.py), taken before anything in it is read or written and held
    until the caller releases it; a folder another live command holds is refused unchanged."""
    if run_dir is not None and run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"--run-dir {run_dir} is a file, not a folder")
    if run_dir is None or not run_dir.exists():  # a new run: checked before its folder is made
        if config is None:
            raise UserError("no config to start a new run with")
        game = check_new_run(config)
        run_dir = run_dir or new_run_dir(game.name)
    elif not (run_dir / "config.toml").exists():
        _check_not_foreign(run_dir)  # (before the lock file goes into someone else's folder)
    made = _make_folder(run_dir)
    lock = hold(run_dir, command)
    try:
        config, resuming, before = _open_locked(config, run_dir, command, made)
    except BaseException:
        if made:
            shutil.rmtree(run_dir, ignore_errors=True)
        lock.release()
        raise
    return config, run_dir, resuming, before, lock


def _check_not_foreign(run_dir: Path) -> None:
    if any(not _temporary(p) and p.name != LOCK for p in run_dir.iterdir()):
        raise UserError(f"{run_dir} exists and is not a run folder (no config.toml); choose a new --run-dir")


def _make_folder(run_dir: Path) -> bool:
    """Make the run folder (and its parents) if missing; whether this call made it."""
    try:
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        run_dir.mkdir()
    except FileExistsError:
        if not run_dir.is_dir():
            raise UserError(f"--run-dir {run_dir} is a file, not a folder") from None
        return False
    except OSError as error:  # a file in the way, no permission
        raise UserError(f"cannot make the run folder {run_dir}: {error.strerror or error}") from None
    return True


def _open_locked(config: Config | None, run_dir: Path, command: list[str],
                 made: bool) -> tuple[Config, bool, set[str] | None]:
    """open_run's work once the folder's lock is held: (config, resuming, before)."""
    if (run_dir / "config.toml").exists():
        data = read_toml(run_dir / "config.toml")
        if "game" not in data:  # train.py writes every section: an empty or cut file is damage
            raise UserError(f"{run_dir / 'config.toml'} is damaged (it has no [game]); the run cannot be resumed "
                            "from it; restore it, or start a new --run-dir")
        saved = config_from_dict(data)
        if config is not None and differences(saved, config):
            lines = [f"  {key}: the run has {toml_text(old)}, the command gives {toml_text(new)}"
                     for key, old, new in differences(saved, config)]
            raise UserError(f"{run_dir} is a run with another config; the command differs in:\n" + "\n".join(lines)
                            + f"\nto continue the run as it is, run: python scripts/train.py --run-dir {run_dir} "
                            "(without --game, --config, --set, --device, --seed); to train with these settings, "
                            "give a new --run-dir")
        try:  # the run may have started on another machine (more memory, a GPU, an engine installed)
            check_new_run(saved)
        except UserError as error:
            raise UserError(f"{run_dir} cannot be resumed on this machine: {error}") from None
        return saved, True, None
    _check_not_foreign(run_dir)
    if config is None:
        raise UserError("no config to start a new run with")
    if not made:  # (a folder made here was checked before it was made)
        check_new_run(config)
    before = None if made else {p.name for p in run_dir.iterdir() if p.name != LOCK}
    try:
        atomic_write_text(run_dir / "config.toml", config.to_toml())
        write_provenance(run_dir, command)
    except OSError as error:  # a full disk, no permission: nothing half-written stays
        _discard(run_dir, before)
        raise UserError(f"cannot write the run's files in {run_dir}: {error.strerror or error}") from None
    return config, False, before


def check_new_run(config: Config) -> games.Game:
    """The game of a new run of `config`; UserError for anything that run could not do on this
    machine (the game's options, the network's heads, the device, the ladder's players, the
    memory its trees, replay ring and training take), checked before its folder is made (and
    by ablations before any of their runs, and before a run is resumed: it may have started
    on another machine)."""
    game = games.make_from_spec(config.game.spec)
    config.network.validate(game)
    check_device(config)
    if not config.run.device.startswith("cuda"):
        autocast_dtype(config.train.mixed_precision, config.run.device)
    evaluation = config.evaluation
    if evaluation.simulations > MAX_SIMULATIONS:
        raise UserError(f"evaluation.simulations={evaluation.simulations:,}: a move may search at most "
                        f"{MAX_SIMULATIONS:,}")
    node = node_bytes(game.initial_state(1), game.num_actions, with_prior=True)
    trees = [  # (trees at once, nodes each, the settings behind them)
        # self-play's: every game's search at once (in this process; Ray actors each hold their own)
        (config.selfplay.games, tree_nodes(config.search),
         f"selfplay.games={config.selfplay.games} with search.simulations={config.search.simulations}"),
        # the evaluation matches': all games of a match at once (else the first evaluation, and every
        # resume after it, would fail)
        (min(evaluation.games, MAX_GAMES_AT_ONCE), evaluation.simulations + 1,
         f"evaluation.games={evaluation.games} with evaluation.simulations={evaluation.simulations}"),
    ]
    for batch, nodes, settings in trees:
        try:
            memory.check_tree_size(batch, nodes, node)
        except memory.TreeTooLarge as error:
            raise UserError(f"{settings}: {error}") from None
    sample = ReplayBuffer(game, 1, stored_fields(config.network)).sample_bytes()
    half = (memory.physical_memory() or 1 << 62) // 2
    if sample * config.replay.capacity > half:  # the ring is allocated whole when the run starts
        raise UserError(f"replay.capacity={config.replay.capacity:,} needs "
                        f"{memory.size_text(sample * config.replay.capacity)} for the replay buffer, over half this "
                        f"machine's memory ({memory.size_text(half)}); at most {half // sample:,} samples fit")
    positions = config.selfplay.positions_per_iteration
    if sample * positions > half:  # an iteration's samples are held until it has them all
        raise UserError(f"selfplay.positions_per_iteration={positions:,} needs {memory.size_text(sample * positions)} "
                        f"for one iteration's samples, over half this machine's memory ({memory.size_text(half)}); "
                        f"at most {half // sample:,} fit")
    needed, limit, where = training_bytes(config, game), half, "this machine's memory"
    if config.run.device.startswith("cuda"):  # (check_device found it) the training's memory is the GPU's
        limit = torch.cuda.get_device_properties(torch.device(config.run.device)).total_memory // 2
        where = f"{config.run.device}'s memory"
    if needed > limit:
        network, train = config.network, config.train
        raise UserError(f"network.blocks={network.blocks}, network.channels={network.channels:,} with "
                        f"train.batch_size={train.batch_size:,}: training needs about {memory.size_text(needed)} (the "
                        f"network, its gradients and optimizer state, one batch's activations), over half "
                        f"{where} ({memory.size_text(limit)})")
    check_opening(game, config.evaluation.opening_plies)
    try:
        check_opening(game, config.selfplay.opening_plies)
    except UserError as error:
        raise UserError(f"selfplay.opening_plies={config.selfplay.opening_plies}: {error}") from None
    ladder_evaluator(game, config, config.run.device).check()
    return game


def training_bytes(config: Config, game: games.Game) -> int:
    """About the memory training takes beside the replay ring: the float32 weights four times over
    (weights, gradients, AdamW's two moments) and twice more (the average of train.ema_decay, the
    search's frozen copy), and a batch's activations kept for the backward pass (each
    convolution's output and its normalised and rectified forms); counted without allocating
    (the network built on torch's meta device)."""
    with torch.device("meta"):
        parameters = sum(p.numel() for p in PolicyValueNet(config.network, game).parameters())
    height, width = game.board_shape
    layers = 2 * config.network.blocks + 3  # the stem, two per block, the heads' convolutions
    activations = config.train.batch_size * config.network.channels * height * width * layers * 3
    return 4 * (6 * parameters + activations)


def check_device(config: Config) -> None:
    """UserError unless this machine has the run's device and its search can run there in its precision."""
    problem = device_problem(config.run.device)
    if problem:
        raise UserError(f"run.device={problem}")
    problem = precision_problem(config.search.precision, config.run.device)
    if problem:
        raise UserError(f"search.precision {problem}")


def ladder_evaluator(game, config: Config, device: str) -> LadderEvaluator:
    """The run's evaluation ladder, searching as its self-play does (Run's, and the Ray evaluator actor's)."""
    return LadderEvaluator(game, config.evaluation, seed=config.run.seed, device=device, settings=config.search)


SNAPSHOT = re.compile(r"^iter-(\d{6,})\.pt$")  # checkpoints/iter-000010.pt: the network of iteration 10


def snapshot_path(run_dir: Path, iteration: int) -> Path:
    """Where a run keeps the network of `iteration` (every run.keep_every iterations)."""
    return run_dir / "checkpoints" / f"iter-{iteration:06d}.pt"


def snapshot_iterations(run_dir: Path) -> list[int]:
    """The iterations whose networks the run's checkpoints/ holds, in order."""
    names = (path.name for path in (run_dir / "checkpoints").glob("iter-*.pt"))
    return sorted(int(match.group(1)) for name in names if (match := SNAPSHOT.match(name)))


def _temporary(path: Path) -> bool:
    """A file an atomic write left behind when the process died mid-write (checkpoint.TEMPORARY)."""
    return path.is_file() and path.name.startswith(".") and path.name.endswith(TEMPORARY_SUFFIX)


class Run:
    """All the parts of one training run, built from its config and folder."""

    def __init__(self, config: Config, run_dir: Path, *, progress: bool = True, log=print):
        self.config, self.dir, self.progress, self.log = config, run_dir, progress, log
        if config.run.threads:
            torch.set_num_threads(config.run.threads)
        check_device(config)
        device = self.device = config.run.device
        torch.manual_seed(config.run.seed)
        self.game = games.make_from_spec(config.game.spec)
        self.net = PolicyValueNet(config.network, self.game).to(device).eval()
        self.trainer = Trainer(self.net, config.train, device)
        self.buffer = ReplayBuffer(self.game, config.replay.capacity, stored_fields(config.network))
        self.selfplay = SelfPlay(self.game, self.net, config.search, config.selfplay, device=device,
                                 seed=config.run.seed)
        self.evaluator = ladder_evaluator(self.game, config, device)
        self.sample_generator = torch.Generator().manual_seed(config.run.seed)
        self.iteration = 0
        self.saved_iteration = 0  # the iteration latest.pt holds
        self.positions = 0
        self.elapsed = 0.0  # seconds of training over all sessions
        self.sitting = 0  # the number of this session (sitting) of the run: 1 for the command that began it
        self.budget_hours: float | None = None  # the run's total training time, as its last --hours gave it
        self.earlier_stages: list[dict] = []  # the boards its network learnt on before this run (--init-from)
        self.evaluation_pause = 0.0  # seconds the last iteration waited for its evaluation
        self.evaluation_seconds = 0.0  # of `elapsed`, the seconds spent waiting for evaluations
        self.source = LocalSelfPlay(self)  # where samples come from; use_source() puts another
        (run_dir / "replay").mkdir(exist_ok=True)
        (run_dir / "checkpoints").mkdir(exist_ok=True)
        self._restore()
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(run_dir / "tb"), purge_step=self.iteration + 1)
        if self.iteration == 0:
            self.writer.add_text("config", "```\n" + config.to_toml() + "\n```", 0)

    def use_source(self, source) -> None:
        """Take samples (and evaluations) from `source` instead of this process's self-play."""
        self.source.close()
        self.source = source

    # -- persistence ----------------------------------------------------------------------------
    def _restore(self) -> None:
        for folder in (self.dir, self.dir / "replay", self.dir / "checkpoints"):
            remove_temporary_files(folder)  # writes a kill cut short
        latest = self.dir / "latest.pt"
        if not latest.exists():
            # a stop inside the first iteration leaves its files without a latest.pt; a later
            # iteration's files mean latest.pt was there and has gone: starting again would
            # delete them and write new snapshots over the old ones
            reached = max([iteration for iteration, _, _ in chunks(self.dir / "replay")]
                          + [int(record.get("iteration", 0)) for record in read_metrics(self.dir)]
                          + snapshot_iterations(self.dir), default=0)
            if reached > 1:
                raise UserError(f"{latest} is missing, but {self.dir} holds the run's later files (up to iteration "
                                f"{reached}); put its latest.pt back, or give a new --run-dir (nothing was changed)")
            restore(self.buffer, self.dir / "replay", up_to=0, positions=0)
            self._truncate_metrics()
            return
        data = load_checkpoint(latest, game=self.game)
        self._check_own(latest, data)
        self.net.load_state_dict(data["model"])
        self.trainer.load_state_dict(data["trainer"])
        self.selfplay.load_state_dict(data["selfplay"])
        self.evaluator.load_state_dict(data["evaluation"])
        self.sample_generator.set_state(data["sample_generator"])
        torch.set_rng_state(data["torch_rng"])
        self.iteration = int(data["iteration"])
        self.positions = int(data["positions"])
        self.elapsed = float(data["elapsed"])
        self.budget_hours = data.get("budget_hours")
        self.earlier_stages = training_stages(data)[:-1] if "trained_on" in data else []
        restore(self.buffer, self.dir / "replay", up_to=self.iteration, positions=self.positions)
        records = self._truncate_metrics()
        # (a run saved before sittings were counted: its metrics' last)
        self.sitting = int(data["sittings"]) if "sittings" in data else max(
            (int(record.get("charts/sitting", 1)) for record in records), default=1)
        if "evaluation_seconds" in data:
            self.evaluation_seconds = float(data["evaluation_seconds"])
        else:  # a run saved before it was kept: its in-process evaluations' times, from the metrics (a
            # Ray run's are its evaluator actor's, which ran beside the learner: not counted)
            in_process = not any(key.startswith("actors/") for record in records for key in record)
            self.evaluation_seconds = sum(record.get("charts/evaluation_seconds", 0.0)
                                          for record in records) if in_process else 0.0
        self.saved_iteration = self.iteration

    def _check_own(self, latest: Path, data: dict) -> None:
        """UserError unless `data` (latest.pt) is a training checkpoint saved by a run of this config:
        a numbered snapshot or another run's latest.pt copied over it would fail to load part way
        (a network of another shape, self-play of another batch) or train on from the wrong state."""
        missing = [key for key in ("config", "trainer", "selfplay", "evaluation", "sample_generator", "torch_rng",
                                   "positions", "elapsed") if key not in data]
        if missing:
            raise UserError(f"{latest} is not a training checkpoint (it has no {missing[0]!r}; a numbered snapshot "
                            "from checkpoints/ holds the network alone); put back the run's own latest.pt, or "
                            "start a new --run-dir from the network with a new run")
        try:
            saved = config_from_dict(data["config"])
        except (UserError, TypeError, ValueError) as error:
            raise UserError(f"{latest} holds a config this azero cannot read ({error})") from None
        changed = differences(saved, self.config)
        if changed:
            key, old, new = changed[0]
            raise UserError(f"{latest} was saved by a run with another config ({key}: {toml_text(old)} there, "
                            f"{toml_text(new)} in {self.dir / 'config.toml'}; {len(changed)} keys differ); put back "
                            "the run's own latest.pt, or give a new --run-dir")

    def _truncate_metrics(self) -> list[dict]:
        """Keep the records of the iterations latest.pt holds (a later one was cut short by a stop,
        perhaps in the middle of its line); returns them."""
        path = self.dir / METRICS
        if not path.exists():
            return []
        records = [record for record in read_metrics(self.dir) if record.get("iteration", 0) <= self.iteration]
        kept = "".join(json.dumps(record) + "\n" for record in records)
        if kept != path.read_text(errors="replace"):
            atomic_write_text(path, kept, point="truncate")
        return records

    def save(self) -> None:
        data = network_checkpoint(
            self.net, self.game, self.iteration,
            config=self.config.to_dict(),
            trainer=self.trainer.state_dict(),
            selfplay=self.selfplay.state_dict(),
            evaluation=self.evaluator.state_dict(),
            sample_generator=self.sample_generator.get_state(),
            torch_rng=torch.get_rng_state(),
            positions=self.positions,
            elapsed=self.elapsed,
            evaluation_seconds=self.evaluation_seconds,
            sittings=self.sitting,
            budget_hours=self.budget_hours,
            trained_on=self.trained_on(),
        )
        if self.iteration % self.config.run.keep_every == 0:
            atomic_save(network_checkpoint(self.net, self.game, self.iteration, search=self.config.to_dict()["search"],
                                           trained_on=self.trained_on()),
                        snapshot_path(self.dir, self.iteration), point="snapshot")
        atomic_save(data, self.dir / "latest.pt", point="checkpoint")
        self.saved_iteration = self.iteration

    def trained_on(self) -> list[dict]:
        """The boards the network has learnt on, earliest first (checkpoint.training_stages): the
        runs it began from, then this one."""
        return [*self.earlier_stages,
                {"game": self.game.spec, "iterations": self.iteration, "hours": round(self.elapsed / 3600, 4)}]

    def _log_metrics(self, record: dict) -> None:
        line = json.dumps(record) + "\n"
        with naming_file(self.dir / METRICS), open(self.dir / METRICS, "a") as out:
            out.write(line[: len(line) // 2])
            out.flush()
            fault("metrics.write")
            out.write(line[len(line) // 2:])
            out.flush()
            fault("metrics.written")
            os.fsync(out.fileno())
        for key, value in record.items():
            if "/" in key and isinstance(value, (int, float)) and math.isfinite(value):
                self.writer.add_scalar(key, value, record["iteration"])
        self.writer.flush()

    # -- one iteration ----------------------------------------------------------------------------
    def evaluation_due(self, iteration: int, started: float) -> bool:
        """Every `evaluation.every` iterations, unless evaluations have already taken more than
        `evaluation.max_share` of the run's time (counting this iteration's so far): then the
        next multiple is asked again. A ladder of slow rollouts (Go's) took 30% of an hour's run."""
        every, share = self.config.evaluation.every, self.config.evaluation.max_share
        if not every or iteration % every or not share:
            return False
        elapsed = self.elapsed + time.perf_counter() - started
        return self.evaluation_seconds <= share * elapsed

    def iteration_step(self, *, last: bool) -> dict:
        """Collect an iteration's samples from the run's source, train on them, publish the new
        weights, evaluate when due, log and save."""
        config = self.config
        started, cpu_started = time.perf_counter(), time.process_time()
        iteration = self.iteration + 1
        samples, record = self.source.collect(config.selfplay.positions_per_iteration)
        self.buffer.add(samples)
        save_chunk(self.dir / "replay", iteration, samples, self.buffer.names)
        record = {"iteration": iteration, **record}
        if len(self.buffer) >= config.train.min_replay:
            steps = self.trainer.steps_for(len(samples))
            try:
                record.update(self.trainer.train(self.buffer, steps, self.sample_generator,
                                                 augment=config.replay.augment, progress=self.progress))
            except TrainingDiverged as error:  # nothing of this iteration is saved: latest.pt stays good
                kept = (f"{self.dir} keeps iteration {self.saved_iteration}, the last good one" if self.saved_iteration
                        else "no iteration had finished, so nothing is kept")
                raise TrainingDiverged(f"training diverged in iteration {iteration}: {error}; {kept}; train with a "
                                       "lower train.learning_rate (in a new --run-dir)") from None
        record["charts/learning_rate"] = self.trainer.learning_rate
        self.trainer.end_iteration(seconds=self.elapsed + time.perf_counter() - started)
        self.source.publish(iteration)
        evaluation_started = time.perf_counter()
        record.update(self.source.evaluate(iteration, due=self.evaluation_due(iteration, started) or last, last=last))
        self.evaluation_pause = time.perf_counter() - evaluation_started
        self.evaluation_seconds += self.evaluation_pause
        self.positions += len(samples)
        self.elapsed += time.perf_counter() - started
        record["charts/evaluation_share"] = self.evaluation_seconds / max(self.elapsed, 1e-9)
        record.update({
            "charts/buffer_size": len(self.buffer),
            "charts/positions": self.positions,
            "charts/gradient_steps": self.trainer.steps,
            "charts/hours": self.elapsed / 3600,
            "charts/sitting": self.sitting,
            "seconds": time.perf_counter() - started,
        })
        record.update(system_load(record["seconds"], time.process_time() - cpu_started))
        self.iteration = iteration
        self._log_metrics(record)
        self.save()
        fault("replay.prune")
        prune(self.dir / "replay", self.config.replay.capacity)
        return record


def system_load(seconds: float, cpu_seconds: float) -> dict:
    """What else the machine did during an iteration: its one-minute load average at the end
    (where the OS has one) and the cores this process kept busy (CPU seconds of all its
    threads per wall second). A load well above the cores used means other work ran beside."""
    record = {"system/process_cores": cpu_seconds / max(seconds, 1e-9)}
    if hasattr(os, "getloadavg"):
        record["system/load_average"] = os.getloadavg()[0]
    return record


class LocalSelfPlay:
    """The run's samples from self-play in this process (the run's SelfPlay, between training
    steps) and its evaluation in line; azero/distributed/ holds the other source, actors on Ray.

    A source has collect(positions) -> (Samples, record of self-play metrics), publish(iteration)
    (the network has new weights), evaluate(iteration, due, last) -> evaluation metrics, close().
    """

    def __init__(self, run: Run):
        self.run = run

    def collect(self, positions: int) -> tuple[Samples, dict]:
        run = self.run
        run.selfplay.reset_trees()
        samples, stats = run.selfplay.run(positions, progress=run.progress)
        return samples, {**stats.summary(), "charts/weights_staleness": 0.0}

    def publish(self, iteration: int) -> None:
        """Nothing to send: self-play reads the network itself."""

    def evaluate(self, iteration: int, *, due: bool, last: bool) -> dict:
        if not due:
            return {}
        run = self.run
        started = time.perf_counter()
        record = run.evaluator.evaluate(run.net, iteration, progress=run.progress)
        record["eval/network_iteration"] = iteration
        record["charts/evaluation_seconds"] = time.perf_counter() - started
        return record

    def close(self) -> None:
        pass


def _stop_on_sigterm(signum, frame):
    raise Stopped(signum)


def train(config: Config | None, run_dir: Path | None, *, minutes: float | None = None,
          iterations: int | None = None, hours: float | None = None, progress: bool = True,
          command: list[str] | None = None, log=print, source=None, init_from: str | None = None) -> Path:
    """Run (or resume) training until the budget ends; returns the run folder. The budget: `minutes`
    of this call (a sitting), `iterations` and `hours` of the run in all (every sitting's training
    time counted, as charts/hours reports it); whichever ends first. Stopped by Ctrl-C or
    SIGTERM, it keeps the last finished iteration, says so, and raises errors.Stopped (the command
    exits 130 or 143). The run folder is locked for the whole call (azero/folder_lock.py).

    `source(run)`, when given, builds the run's source of samples (azero/distributed/'s actors);
    by default self-play runs in this process. `init_from`: a checkpoint (or zoo network) whose
    network a new run starts from (azero/warm_start.py), checked before the run folder is made.
    """
    weights = None
    if init_from is not None:
        if run_dir is not None and (run_dir / "config.toml").exists():
            raise UserError(f"--init-from starts a new run, and {run_dir} is a run already: resume it without "
                            "--init-from, or give a new --run-dir")
        if config is None:
            raise UserError("--init-from needs the new run's --game or --config")
        weights = read_initial_network(config, init_from)
    config, run_dir, resuming, before, lock = open_run(config, run_dir, command or sys.argv)
    with lock:
        return _train_locked(config, run_dir, resuming, before, minutes=minutes, iterations=iterations,
                             hours=hours, progress=progress, log=log, source=source, weights=weights)


def _train_locked(config: Config, run_dir: Path, resuming: bool, before: set[str] | None, *, minutes, iterations,
                  hours, progress, log, source, weights=None) -> Path:
    try:
        run = Run(config, run_dir, progress=progress, log=log)
        if weights is not None:
            start_network(run.net, run.trainer.model, weights)
            run.earlier_stages = weights.origin["trained_on"]
            record = json.loads((run_dir / "provenance.json").read_text())
            atomic_write_text(run_dir / "provenance.json", json.dumps({**record, "init_from": weights.origin},
                                                                      indent=2) + "\n")
    except Exception as error:
        if not resuming:
            _discard(run_dir, before)
        if isinstance(error, OSError) and not isinstance(error, BrokenPipeError):  # a full disk, no permission
            then = (f"once that is fixed, continue with: python scripts/train.py --run-dir {run_dir}" if resuming
                    else "nothing was kept")
            raise UserError(f"cannot set up the run's files: {_os_problem(error)}; {then}") from None
        raise
    run.sitting += 1
    if hours is None:  # the budget an earlier sitting gave, kept with the run
        hours = run.budget_hours
    run.budget_hours = hours
    if resuming:
        log(f"resuming {run_dir} at iteration {run.iteration} ({run.positions} positions, buffer {len(run.buffer)}, "
            f"{run.elapsed / 3600:.2f} h of training), sitting {run.sitting}")
        if hours is not None and run.elapsed >= hours * 3600:
            log(f"the run's budget of {hours:g} hours is spent; nothing to do (give a larger --hours to go on)")
    else:
        log(f"new run in {run_dir}" + (f", its network from {weights.origin['source']} (iteration "
                                       f"{weights.origin['iteration']} of {weights.origin['game']})" if weights else ""))
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    # a new run that fails before its first checkpoint leaves no folder (a full disk, a stop keep it, to continue)
    failed = False
    session_start = time.monotonic()
    last_duration = 0.0  # of the last iteration, without its evaluation
    try:
        if source is not None:
            run.use_source(source(run))
        while iterations is None or run.iteration < iterations:
            spent = time.monotonic() - session_start
            if (minutes is not None and spent >= minutes * 60) or (hours is not None and run.elapsed >= hours * 3600):
                break
            last = ((iterations is not None and run.iteration + 1 >= iterations)
                    or (minutes is not None and spent + 2 * last_duration >= minutes * 60)
                    or (hours is not None and run.elapsed + 2 * last_duration >= hours * 3600))
            began = time.monotonic()
            record = run.iteration_step(last=last)
            # An evaluation makes its iteration long; counting it would make every later
            # iteration look like the last one, and each would evaluate again.
            last_duration = time.monotonic() - began - run.evaluation_pause
            log(_summary_line(record))
    except KeyboardInterrupt as stop:
        log(f"stopped; {run_dir} holds iteration {run.saved_iteration}. Continue with: "
            f"python scripts/train.py --run-dir {run_dir}")
        raise Stopped(stop.signal_number if isinstance(stop, Stopped) else signal.SIGINT) from None
    except BrokenPipeError:  # the reader of the log went away (`train.py ... | head`): cli_entry ends quietly
        raise
    except OSError as error:  # a full disk, a folder gone read-only: what is saved stays whole
        raise UserError(f"cannot write the run's files: {_os_problem(error)}. {run_dir} holds "
                        f"iteration {run.saved_iteration}, intact; once that is fixed, continue with: "
                        f"python scripts/train.py --run-dir {run_dir}") from None
    except Exception:
        failed = True
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        run.source.close()
        run.writer.close()
        if failed and not resuming and run.saved_iteration == 0:
            _discard(run_dir, before)
    return run_dir


def _os_problem(error: OSError) -> str:
    """An OSError as a user reads it: the system's words, and the file where it has one."""
    return f"{error.strerror or error}" + (f" ({error.filename})" if error.filename else "")


def _discard(run_dir: Path, before: set[str] | None) -> None:
    """Remove what this command wrote for a new run that failed before saving anything (a run
    folder holding only a config would make every later command with it fail the same way):
    the folder, if it made it, else the entries it added."""
    if before is None:
        shutil.rmtree(run_dir, ignore_errors=True)
        return
    for path in run_dir.iterdir():
        if path.name not in before:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def _summary_line(record: dict) -> str:
    parts = [f"iteration {record['iteration']}"]
    if "losses/total" in record:
        parts.append(f"loss {record['losses/total']:.3f} (policy {record['losses/policy']:.3f}, "
                     f"value {record['losses/value']:.3f})")
    parts.append(f"{record['charts/selfplay_positions_per_s']:.0f} pos/s")
    parts.append(f"game length {record['selfplay/game_length']:.1f}")
    if "eval/elo" in record:
        parts.append(f"Elo {record['eval/elo']:+.0f} [{record['eval/elo_low']:+.0f}, {record['eval/elo_high']:+.0f}]")
    scores = [f"{k.split('vs_')[1]} {v:.0%}" for k, v in record.items() if k.startswith("eval/score_vs_")]
    if scores:
        parts.append("vs " + ", ".join(scores))
    parts.append(f"{record['seconds']:.0f} s")
    return " | ".join(parts)
