"""`uct:ITERATIONS`: plain random-rollout UCT (UCB1 selection, random playouts)."""

from __future__ import annotations

import math

import torch

from games.options import Option, read_option
from games.random import make_keys

from ..errors import UserError
from ..player import MAX_SIMULATIONS, SIMULATIONS_ALLOWED, Analysis, Player
from ..search import CRITERIA, UCB1, RolloutEvaluator, Tree, choose, search, search_with_budget, simulate
from ..search.final import max_robust_exists
from ..search.roots import MAX_ROOTS, RootStats, replicate
from ..search.tree import tree_bytes
from .spec import PARALLEL, SECONDS, SEED, SPARE_TREE_BYTES, VIRTUAL_LOSS, leaves_per_step

ARGUMENT = Option(None, int, low=1, high=MAX_SIMULATIONS, allowed=SIMULATIONS_ALLOWED, metavar="ITERATIONS",
                  help="a budget (iterations a move)")
OPTIONS = {
    "c": Option(math.sqrt(2.0), float, low=0, help="UCB1 exploration constant, √2 unless given"),
    "final": Option("robust", str, choices=CRITERIA, noun="final-move criterion",
                    help="how the move is chosen among the root's children"),
    "parallel": PARALLEL,
    "roots": Option(1, int, low=1, high=MAX_ROOTS, metavar="R",
                    help="trees a position is searched with, each with its own random draws and 1/R of the "
                         "iterations, their root visits summed to choose the move (root parallelism); default 1"),
    "virtual_loss": VIRTUAL_LOSS,
    "seconds": SECONDS,
    "seed": SEED,
}
ROLLOUT_LEAVES = 64  # the most leaves "auto" gathers per step: one batched rollout of 64 games costs
#                      little more per game than one of 1,024



class UCTPlayer(Player):
    """Plain random-rollout UCT: UCB1 selection, one random untried move expanded per
    iteration, a uniformly random rollout, the result backed up (1 / 0.5 / 0).

    roots: R > 1 searches each position with R trees of its own random draws, ceil(N / R)
    iterations each (search/roots.py), and chooses from their summed root statistics."""

    def __init__(self, game, iterations=1000, c=math.sqrt(2.0), final="robust", seed=0, max_robust_extra=0.5,
                 parallel: str | int = "auto", virtual_loss: bool = True, seconds: float | None = None,
                 roots: int = 1):
        super().__init__(game, seed)
        final = read_option("uct: option final", OPTIONS["final"], final, error=UserError)
        self.parallel = read_option("uct: option parallel", OPTIONS["parallel"], str(parallel), error=UserError)
        self.roots = read_option("uct: option roots", OPTIONS["roots"], str(roots), error=UserError)
        self.iterations, self.c, self.final = iterations, c, final
        self.max_robust_extra = max_robust_extra
        self.rule = UCB1(c, virtual_loss=virtual_loss)
        self.evaluator = RolloutEvaluator(game)
        options = ([f"c={c:g}"] if c != math.sqrt(2.0) else []) + ([f"final={final}"] if final != "robust" else [])
        options += ([f"parallel={self.parallel}"] if self.parallel != "auto" else [])
        options += [f"roots={self.roots}"] if self.roots != 1 else []
        options += ([] if virtual_loss else ["virtual_loss=false"]) + ([f"seconds={seconds:g}"] if seconds else [])
        self.spec = f"uct:{iterations}" + (":" + ",".join(options) if options else "")
        self.seconds = seconds
        self._spare: Tree | None = None  # the last search's tree, whose memory the next one reuses

    def leaves_per_step(self, simulations: int | None) -> int:
        """The leaves each search step gathers per tree for a budget of `simulations` a tree
        (None: time); with R roots "auto" gathers at most 1/R of a rollout batch from each."""
        return leaves_per_step(self.parallel, simulations, max(1, ROLLOUT_LEAVES // self.roots))

    def per_tree(self, simulations: int | None) -> int | None:
        """The simulations each of a position's trees makes for a budget of `simulations`: ceil(N / R)."""
        return None if simulations is None else -(-simulations // self.roots)

    def analyse(self, states, keys=None, *, simulations=None, seconds=None, on_progress=None, should_stop=None):
        keys = self._keys(states, keys)
        copies, copy_keys = replicate(states, keys, self.roots)
        if simulations is None and seconds is None and self.seconds is not None:  # the player's own clock
            simulations, seconds = self.iterations, self.seconds
        if simulations is not None or seconds is not None or on_progress is not None or should_stop is not None:
            simulations = simulations if simulations is not None or seconds is not None else self.iterations
            tree = search_with_budget(
                self.game, copies, self.evaluator, self.rule, copy_keys,
                simulations=self.per_tree(simulations), seconds=seconds, on_progress=_live(on_progress, self),
                should_stop=should_stop, parallel=self.leaves_per_step(self.per_tree(simulations)),
                reuse=self._spare,
            )
            self._keep(tree)
            final = "robust" if self.final == "max-robust" else self.final
            stats = RootStats.of(tree, self.roots)
            return Analysis.from_roots(stats, self._choose(final, stats))
        iterations = self.per_tree(self.iterations)
        extra = int(iterations * self.max_robust_extra) if self.final == "max-robust" else 0
        tree = search(self.game, copies, self.evaluator, self.rule, iterations, copy_keys, extra_capacity=extra,
                      reuse=self._spare, parallel=self.leaves_per_step(iterations))
        self._keep(tree)
        if self.final == "max-robust":
            action = self._search_until_max_robust(tree, iterations, extra)
            return Analysis.from_roots(RootStats.of(tree, self.roots), action)
        stats = RootStats.of(tree, self.roots)
        return Analysis.from_roots(stats, self._choose(self.final, stats))

    def _keep(self, tree: Tree) -> None:
        """Keep the tree's memory for the next move unless it is big: then two players' trees
        would both stay in memory."""
        self._spare = tree if tree_bytes(tree) <= SPARE_TREE_BYTES else None

    def _choose(self, criterion: str, stats: RootStats) -> torch.Tensor:
        """The root move by `criterion`; ties in visits go to the child expanded first (classic UCT)."""
        return choose(criterion, stats.visits, stats.value_sum, c=self.c, created=stats.created)

    def _search_until_max_robust(self, tree: Tree, iterations: int, extra: int) -> torch.Tensor:
        """Search on in chunks while some position has no child with both most visits and best
        mean (over its trees; `iterations` and `extra` are a tree's).

        A position's move is fixed at the first chunk boundary where it has one, so it does
        not depend on the other positions; after `extra` more iterations, robust child.
        """
        chunk = max(1, iterations // 10)
        stats = RootStats.of(tree, self.roots)
        decided = torch.full((stats.visits.shape[0],), -1, dtype=torch.long, device=tree.visits.device)
        spent = 0
        while True:
            ok = max_robust_exists(stats.visits, stats.value_sum) & (decided < 0)
            decided[ok] = choose("max-robust", stats.visits[ok], stats.value_sum[ok])
            if bool((decided >= 0).all()) or spent + chunk > extra:
                break
            simulate(tree, self.game, self.evaluator, self.rule, chunk, parallel=self.leaves_per_step(iterations))
            spent += chunk
            stats = RootStats.of(tree, self.roots)
        robust = self._choose("robust", stats)
        return torch.where(decided >= 0, decided, robust)

    def act(self, states, keys=None):
        return self.analyse(states, keys).action

    def prepare(self, state) -> None:
        """Compile the search's loops and the game's (a short search of each kind a move may run)."""
        keys = make_keys(self.seed, state.batch_size)
        steps = 2 * self.leaves_per_step(None)
        self.analyse(state, keys, simulations=steps * self.roots)  # the kind a clock runs
        copies, copy_keys = replicate(state, keys, self.roots)
        search(self.game, copies, self.evaluator, self.rule, steps, copy_keys, parallel=self.leaves_per_step(steps))

    def close(self) -> None:
        self._spare = None


def _live(on_progress, player):
    """Turn an on_progress(analysis) callback into the search's on_progress(tree)."""
    if on_progress is None:
        return None

    def callback(tree):
        stats = RootStats.of(tree, player.roots)
        on_progress(Analysis.from_roots(stats, stats.visits.argmax(dim=1)))

    return callback


def build(game, iterations, options, *, device, seed) -> UCTPlayer:
    return UCTPlayer(game, iterations, c=options["c"], final=options["final"], seed=seed,
                     parallel=options["parallel"], virtual_loss=options["virtual_loss"], seconds=options["seconds"],
                     roots=options["roots"])
