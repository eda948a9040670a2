"""RaySelfPlay: the run's samples from self-play actors on Ray, its evaluation on an evaluator actor.

The learner is the run (azero/loop.py's Run): it calls collect, trains, publishes, evaluates,
writes the run folder, exactly as with self-play in one process. Here:

- collect(positions) keeps one `play` call in flight per actor (Ray's back-pressure: an actor
  that finished its chunk waits for the learner's next call) and takes chunks as they finish
  (ray.wait) until the iteration has `positions` positions. A call returns the games an actor
  finished in about CALL_SECONDS (or its share of the iteration, if sooner), so finished games
  leave an actor soon and new weights reach it soon: between moves, every few seconds. The learner trains
  positions * sample_reuse / batch_size steps on them, as in one process, so the sample reuse
  of the config holds whatever the number of actors: with many actors the actors wait, with
  few the learner does. Actors whose chunk arrived are sent the next call at once, with the
  weights then published, so they play while the learner trains.
- publish(iteration) puts the new weights in Ray's object store once, as version `iteration`;
  each call carries a reference to the newest version, which an actor fetches only when it is
  newer than its own. A sample's staleness is the newest version when it reaches the learner
  less the version that played it (charts/weights_staleness, the iteration's mean).
- evaluate(...) starts the ladder on the evaluator actor when an evaluation is due and it is
  free (else as soon as it is), and reports an evaluation in the record of the iteration in which
  it finished (eval/network_iteration says which network it was); only the run's last iteration
  waits for it. The last iteration's record holds the last network's evaluation alone: an
  earlier one still running then is finished first and rates the ladder, unreported.

Metrics: charts/selfplay_positions_per_s is the iteration's positions over the wall time since
the previous iteration's were in (the pipeline's rate, training included: actors play on while
the learner trains); actors/<k>/positions is how many positions actor k sent in the iteration
(0 if its calls were still running: with a small iteration the first actors to answer can fill
it), and actors/<k>/positions_per_s, present when it sent some, its own rate while it played them.

Faults: actors are created with max_restarts=-1 and max_task_retries=0, so Ray restarts a dead
actor process and the call it was running fails; the learner calls the new process again. Only
that actor's games in progress are lost; every chunk received passes the ledger (ledger.py), so
no finished game is lost or counted twice. If the learner dies, its actors die with it (Ray
ties actors to the process that made them) and `--run-dir` continues from the last checkpoint.
"""

from __future__ import annotations

import math
import re
import time

from tqdm import tqdm

from ..errors import UserError
from ..network import precision_problem
from ..selfplay import Samples, SelfPlayStats
from .cluster import cluster_cpus, cluster_gpus, require_ray
from .ledger import Ledger, select_games
from .workers import EvaluatorWorker, SelfPlayWorker

CALL_SECONDS = 2.0  # an actor returns its finished games at least this often (and takes new weights)
PATIENCE = 600.0  # seconds an actor may keep failing calls (restarting) before the run stops
START_SECONDS = 600.0  # for every actor to start (import torch, build its network) on a node


def user_error_inside(ray, error: BaseException) -> UserError | None:
    """The UserError an actor's method raised (Ray hands it over wrapped, as a RayTaskError whose
    text is the remote traceback), or None for any other failure."""
    cause = getattr(error, "cause", None) if isinstance(error, ray.exceptions.RayTaskError) else None
    return cause if isinstance(cause, UserError) else None


def failure_line(error: BaseException) -> str:
    """One line for a failed call: the last 'SomethingError: ...' line of Ray's text (a remote
    traceback's own error), else its first line."""
    lines = [line.strip() for line in str(error).strip().splitlines()] or [type(error).__name__]
    return next((line for line in reversed(lines) if re.match(r"\w+(Error|Exception): ", line)), lines[0])[:300]


class ActorsFailing(UserError):
    """An actor keeps dying (its constructor fails, or its machine is gone for good)."""


def default_actors(cpus: float) -> int:
    """One actor per core the cluster has, less one for the learner (at least one)."""
    return max(1, int(cpus) - 1)


class RaySelfPlay:
    def __init__(self, run, *, actors: int | None = None, actor_device: str = "cpu", log=print):
        self.ray = ray = require_ray()
        self.run, self.log = run, log
        config = run.config
        cpus = cluster_cpus(ray)
        if cpus <= 0:  # no actor could ever be placed: the run would wait without a word
            raise UserError("the Ray cluster has no CPU for the actors (a head started with --num-cpus=0 and no "
                            "worker node joined yet?)")
        count = actors or default_actors(cpus)
        problem = precision_problem(config.search.precision, actor_device)
        if problem:
            raise UserError(f"search.precision {problem} (the actors' device is {actor_device})")
        gpus = 0.0
        if actor_device.startswith("cuda"):
            if cluster_gpus(ray) == 0:
                raise UserError("--actor-device cuda, but the Ray cluster has no GPU")
            gpus = min(1.0, cluster_gpus(ray) / count)  # an equal share of the cluster's GPUs each
        share = min(1.0, cpus / count) if cpus else 1.0  # logical cores each, so all actors fit
        self.positions_per_call = math.ceil(config.selfplay.positions_per_iteration / count)
        self.ledger = Ledger()
        self.version, self.weights, self.publish_seconds = -1, None, 0.0
        self.publish(run.iteration)
        worker = ray.remote(SelfPlayWorker).options(max_restarts=-1, max_task_retries=0, num_cpus=share,
                                                    num_gpus=gpus)
        settings = config.to_dict()
        seeds = [(config.run.seed * 7919 + run.iteration * 104_729 + k + 1) % 2**31 for k in range(count)]
        self.actors = [worker.remote(settings, k, seeds[k], actor_device, 1) for k in range(count)]
        evaluator = ray.remote(EvaluatorWorker).options(max_restarts=-1, max_task_retries=0, num_cpus=0)
        self.evaluator = evaluator.remote(settings, "cpu", 1)
        try:  # an actor whose constructor fails (e.g. a node without azero) is dead for good
            identities = ray.get([actor.identity.remote() for actor in self.actors], timeout=START_SECONDS)
            evaluator_pid = ray.get(self.evaluator.identity.remote(), timeout=START_SECONDS)[0]
        except ray.exceptions.GetTimeoutError:  # (actors the cluster cannot place wait there for ever)
            raise ActorsFailing(f"the actors did not start within {START_SECONDS:.0f} s: can the cluster place "
                                f"{count} actors of {share:g} CPU{' and ' + format(gpus, 'g') + ' GPU' if gpus else ''} "
                                f"each? It has {cpus:g} CPUs") from None
        except ray.exceptions.RayError as error:  # (died, killed for memory, unschedulable, raised inside)
            raise user_error_inside(ray, error) or ActorsFailing(f"the actors could not start: "
                                                                 f"{failure_line(error)}") from None
        self.incarnations = [incarnation for _, incarnation in identities]
        for k, (pid, _) in enumerate(identities):
            log(f"self-play actor {k}: pid {pid}")
        log(f"evaluator actor: pid {evaluator_pid}")
        self.restarts = [0] * count
        self.lost_calls = [0] * count  # calls that failed because the actor died
        self.failures = [0] * count  # in a row, since the actor's last chunk
        self.failing_since = [0.0] * count
        self.retry_at = [0.0] * count
        self.pending: dict = {}  # reference of a call in flight -> actor index
        self.evaluation = None  # (reference, iteration) of the evaluation in flight
        self.evaluation_due = False
        self.collected_at = time.perf_counter()

    # -- samples ----------------------------------------------------------------------------------
    def _dispatch_idle(self) -> None:
        busy = set(self.pending.values())
        now = time.perf_counter()
        for k, actor in enumerate(self.actors):
            if k not in busy and self.retry_at[k] <= now:
                reference = actor.play.remote(self.version, [self.weights], self.positions_per_call, CALL_SECONDS)
                self.pending[reference] = k

    def _receive(self, reference, k: int):
        """The chunk of a finished call, or None if its actor died (it is called again later)."""
        exceptions = self.ray.exceptions
        try:
            chunk = self.ray.get(reference)
        except exceptions.RayError as error:  # the actor died or was killed (for memory too), its node went
            user = user_error_inside(self.ray, error)  # away, its result was lost, or the call raised
            if user is not None:  # (a fault of the run's settings: every call would meet it)
                raise user from None
            now = time.perf_counter()
            self.lost_calls[k] += 1
            self.failures[k] += 1
            if self.failures[k] == 1:
                self.failing_since[k] = now
            elif now - self.failing_since[k] > PATIENCE:
                raise ActorsFailing(f"self-play actor {k} has failed every call for {PATIENCE:.0f} s; the last "
                                    f"error: {failure_line(error)}") from None
            self.retry_at[k] = now + min(2.0, 0.1 * self.failures[k])
            return None
        self.failures[k] = 0
        if chunk.incarnation != self.incarnations[k]:
            self.incarnations[k] = chunk.incarnation
            self.restarts[k] += 1
            self.log(f"self-play actor {k} restarted: pid {chunk.pid}")
        return chunk

    def collect(self, positions: int) -> tuple[Samples, dict]:
        """Chunks from the actors until they hold `positions` positions; (samples, self-play record)."""
        ray = self.ray
        count = len(self.actors)
        parts, chunks = [], []
        intake = 0.0
        played = [0] * count
        seconds = [0.0] * count
        stale = 0
        with tqdm(total=positions, desc="self-play", unit="pos", disable=not self.run.progress, leave=False) as bar:
            while sum(len(p) for p in parts) < positions:
                self._dispatch_idle()
                if not self.pending:  # every actor waits to be called again after a failure
                    time.sleep(0.2)
                    continue
                ready, _ = ray.wait(list(self.pending), num_returns=1, timeout=0.2)
                for reference in ready:
                    received = time.perf_counter()
                    k = self.pending.pop(reference)
                    chunk = self._receive(reference, k)
                    if chunk is None:
                        continue
                    keep = self.ledger.admit(chunk)
                    samples = select_games(chunk, keep)
                    parts.append(samples)
                    chunks.append((chunk, keep))
                    played[k] += len(chunk.samples)
                    seconds[k] += chunk.seconds
                    stale += len(samples) * (self.version - chunk.version)
                    bar.update(len(samples))
                    intake += time.perf_counter() - received
        self._dispatch_idle()  # the actors play on while the learner trains
        now = time.perf_counter()
        samples = Samples.cat(parts)
        stats = SelfPlayStats(positions=len(samples), moves=len(samples), policy_targets=int(samples.policy_weight.sum()),
                              seconds=now - self.collected_at)
        self.collected_at = now
        calls = evaluated = 0
        loads = []
        for chunk, keep in chunks:
            results, lengths = chunk.results[keep], chunk.lengths[keep]
            stats.games += int(keep.sum())
            stats.first_player_wins += int((results > 0).sum())
            stats.draws += int((results == 0).sum())
            stats.total_length += int(lengths.sum())
            calls += chunk.network_calls
            evaluated += chunk.network_positions
            if chunk.load_seconds:
                loads.append(chunk.load_seconds)
        stats.mean_batch = evaluated / max(calls, 1)
        record = {**stats.summary(), "charts/weights_staleness": stale / max(len(samples), 1)}
        for k in range(count):
            record[f"actors/{k}/positions"] = played[k]  # 0 if its calls were still running (or failed)
            if seconds[k]:
                record[f"actors/{k}/positions_per_s"] = played[k] / seconds[k]
            record[f"actors/{k}/restarts"] = self.restarts[k]  # new processes that have sent games
            record[f"actors/{k}/lost_calls"] = self.lost_calls[k]  # calls its dying processes took along
        record.update({
            "actors/count": count,
            "actors/restarts": sum(self.restarts),
            "actors/lost_calls": sum(self.lost_calls),
            "actors/intake_us_per_sample": 1e6 * intake / max(len(samples), 1),
            "actors/publish_seconds": self.publish_seconds,
            **self.ledger.faults(),
        })
        if loads:
            record["actors/weights_load_seconds"] = sum(loads) / len(loads)
        return samples, record

    def publish(self, iteration: int) -> None:
        """The network's weights, as version `iteration`, into Ray's object store."""
        started = time.perf_counter()
        state = {key: value.detach().cpu() for key, value in self.run.net.state_dict().items()}
        self.weights = self.ray.put(state)
        self.version = iteration
        self.publish_seconds = time.perf_counter() - started

    # -- evaluation -------------------------------------------------------------------------------
    def _start_evaluation(self, iteration: int) -> None:
        reference = self.evaluator.evaluate.remote(iteration, [self.weights], self.run.evaluator.state_dict())
        self.evaluation = (reference, iteration)
        self.evaluation_due = False

    def _finish_evaluation(self, *, wait: bool) -> dict:
        reference, iteration = self.evaluation
        ready, _ = self.ray.wait([reference], timeout=None if wait else 0)
        if not ready:
            return {}
        self.evaluation = None
        try:
            metrics, state, seconds = self.ray.get(reference)
        except self.ray.exceptions.RayError as error:
            user = user_error_inside(self.ray, error)
            if user is not None:  # (a ladder rung this node cannot make: every evaluation would meet it)
                raise user from None
            self.log(f"the evaluator actor failed evaluating iteration {iteration} ({failure_line(error)}); the "
                     "next evaluation replaces it")
            self.evaluation_due = True
            return {}
        self.run.evaluator.load_state_dict(state)
        return {**metrics, "eval/network_iteration": iteration, "charts/evaluation_seconds": seconds}

    def evaluate(self, iteration: int, *, due: bool, last: bool) -> dict:
        metrics = self._finish_evaluation(wait=False) if self.evaluation else {}
        self.evaluation_due |= due
        if last:  # the run ends with the evaluation of its last network
            if self.evaluation:  # an earlier network's, still running: it rates the ladder first
                self._finish_evaluation(wait=True)
            self._start_evaluation(iteration)
            # the record reports only the last network's evaluation (its eval/* keys would
            # otherwise mix two networks'); the earlier one is in the ladder's state
            return self._finish_evaluation(wait=True) or metrics
        elif self.evaluation_due and self.evaluation is None:
            self._start_evaluation(iteration)
        return metrics

    def close(self) -> None:
        for actor in [*self.actors, self.evaluator]:
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception:  # already gone with its node or the instance
                pass
        self.pending.clear()
        self.evaluation = None
