"""`uct:ITERATIONS`: plain random-rollout UCT (UCB1 selection, random playouts); with
`solver=true`, MCTS-Solver's proofs in its tree (search/proofs.py)."""

from __future__ import annotations

import math

import torch

from games.keyed_random import make_keys
from games.options import Option, read_option

from ..errors import UserError
from ..search import CRITERIA, UCB1, RolloutEvaluator, Tree, choose, search, search_with_budget, simulate
from ..search.final import max_robust_exists
from ..search.proofs import respect_proofs
from ..search.selection import MAX_C
from ..search.tree import tree_bytes
from .base import MAX_SIMULATIONS, SIMULATIONS_ALLOWED, Analysis, Player
from .spec import PARALLEL, SECONDS, SEED, SPARE_TREE_BYTES, VIRTUAL_LOSS, leaves_per_step

ARGUMENT = Option(None, int, low=1, high=MAX_SIMULATIONS, allowed=SIMULATIONS_ALLOWED, metavar="ITERATIONS",
                  help="a budget (iterations a move)")
OPTIONS = {
    "c": Option(math.sqrt(2.0), float, low=0, high=MAX_C, help="UCB1 exploration constant, √2 unless given"),
    "final": Option("robust", str, choices=CRITERIA, noun="final-move criterion",
                    help="how the move is chosen among the root's children"),
    "parallel": PARALLEL,
    "virtual_loss": VIRTUAL_LOSS,
    "solver": Option(False, bool, metavar="true|false",
                     help="prove wins, losses and draws in the tree (MCTS-Solver, search.solver); off unless "
                          "given: uct: is the classic baseline, as the scalar reference plays it"),
    "seconds": SECONDS,
    "seed": SEED,
}
ROLLOUT_LEAVES = 64  # the most leaves "auto" gathers per step: one batched rollout of 64 games costs
#                      little more per game than one of 1,024



class UCTPlayer(Player):
    """Plain random-rollout UCT: UCB1 selection, one random untried move expanded per
    iteration, a uniformly random rollout, the result backed up (1 / 0.5 / 0)."""

    def __init__(self, game, iterations=1000, c=math.sqrt(2.0), final="robust", seed=0, max_robust_extra=0.5,
                 parallel: str | int = "auto", virtual_loss: bool = True, seconds: float | None = None,
                 solver: bool = False):
        super().__init__(game, seed)
        final = read_option("uct: option final", OPTIONS["final"], final, error=UserError)
        self.parallel = read_option("uct: option parallel", OPTIONS["parallel"], str(parallel), error=UserError)
        self.iterations, self.c, self.final = iterations, c, final
        self.stated_simulations = iterations
        self.max_robust_extra = max_robust_extra
        self.rule = UCB1(c, virtual_loss=virtual_loss)
        self.solver = solver
        self.evaluator = RolloutEvaluator(game)
        options = ([f"c={c:g}"] if c != math.sqrt(2.0) else []) + ([f"final={final}"] if final != "robust" else [])
        options += ([f"parallel={self.parallel}"] if self.parallel != "auto" else [])
        options += ([] if virtual_loss else ["virtual_loss=false"]) + (["solver=true"] if solver else [])
        options += [f"seconds={seconds:g}"] if seconds else []
        self.spec = f"uct:{iterations}" + (":" + ",".join(options) if options else "")
        self.seconds = self.stated_seconds = seconds
        self._spare: Tree | None = None  # the last search's tree, whose memory the next one reuses

    def leaves_per_step(self, simulations: int | None) -> int:
        """The leaves each search step gathers per tree for a budget of `simulations` (None: time)."""
        return leaves_per_step(self.parallel, simulations, ROLLOUT_LEAVES)

    def analyse(self, states, keys=None, *, simulations=None, seconds=None, on_progress=None, should_stop=None):
        keys = self._keys(states, keys)
        if simulations is None and seconds is None and self.seconds is not None:  # the player's own clock
            simulations, seconds = self.iterations, self.seconds
        if simulations is not None or seconds is not None or on_progress is not None or should_stop is not None:
            simulations = simulations if simulations is not None or seconds is not None else self.iterations
            tree = search_with_budget(
                self.game, states, self.evaluator, self.rule, keys,
                simulations=simulations, seconds=seconds, on_progress=_live(on_progress, self),
                should_stop=should_stop, parallel=self.leaves_per_step(simulations), reuse=self._spare,
                solver=self.solver,
            )
            self._keep(tree)
            final = "robust" if self.final == "max-robust" else self.final
            return Analysis.from_tree(tree, self._choose(final, tree))
        extra = int(self.iterations * self.max_robust_extra) if self.final == "max-robust" else 0
        tree = search(self.game, states, self.evaluator, self.rule, self.iterations, keys, extra_capacity=extra,
                      reuse=self._spare, parallel=self.leaves_per_step(self.iterations), solver=self.solver)
        self._keep(tree)
        if self.final == "max-robust":
            action = self._search_until_max_robust(tree, extra)
        else:
            action = self._choose(self.final, tree)
        return Analysis.from_tree(tree, action)

    def _keep(self, tree: Tree) -> None:
        """Keep the tree's memory for the next move unless it is big: then two players' trees
        would both stay in memory."""
        self._spare = tree if tree_bytes(tree) <= SPARE_TREE_BYTES else None

    def _choose(self, criterion: str, tree: Tree) -> torch.Tensor:
        """The root move by `criterion`; ties in visits go to the child expanded first (classic UCT); the
        root's proofs respected (search/proofs.py)."""
        return respect_proofs(tree, choose(criterion, tree.root_visits(), tree.child_value_sum[:, 0], c=self.c,
                                           created=tree.children[:, 0]))

    def _search_until_max_robust(self, tree: Tree, extra: int) -> torch.Tensor:
        """Search on in chunks while some tree has no child with both most visits and best mean.

        A tree's move is fixed at the first chunk boundary where it has one, so it does
        not depend on the other trees; after `extra` more iterations, robust child.
        """
        chunk = max(1, self.iterations // 10)
        decided = torch.full((tree.batch_size,), -1, dtype=torch.long, device=tree.visits.device)
        spent = 0
        while True:
            ok = max_robust_exists(tree.root_visits(), tree.child_value_sum[:, 0]) & (decided < 0)
            decided[ok] = choose("max-robust", tree.root_visits()[ok], tree.child_value_sum[ok, 0])
            if bool((decided >= 0).all()) or spent + chunk > extra:
                break
            simulate(tree, self.game, self.evaluator, self.rule, chunk, parallel=self.leaves_per_step(self.iterations),
                     solver=self.solver)
            spent += chunk
        robust = self._choose("robust", tree)
        return respect_proofs(tree, torch.where(decided >= 0, decided, robust))

    def act(self, states, keys=None):
        return self.analyse(states, keys).action

    def prepare(self, state) -> None:
        """Compile the game's playouts (one rollout of `state`) and the search's loops (a short
        search of each kind a move may run, its leaves valued by a stand-in: the walks, the
        expansion and the backup are what compile). Rollouts for the whole short search from
        the start of a long game took tens of seconds (19x19 Go: hundreds of moves each)."""
        keys = make_keys(self.seed, state.batch_size)
        self.evaluator(state, keys)
        steps = 2 * self.leaves_per_step(None)
        rollouts, self.evaluator = self.evaluator, _draws
        try:
            self.analyse(state, keys, simulations=steps)  # the kind a clock runs
            search(self.game, state, self.evaluator, self.rule, steps, keys, parallel=self.leaves_per_step(steps),
                   solver=self.solver)
        finally:
            self.evaluator = rollouts
            self._spare = None  # (a tree of the stand-in's values)

    def close(self) -> None:
        self._spare = None


def _draws(states, keys, legal=None) -> tuple[None, torch.Tensor]:
    """A stand-in evaluator for `prepare`: every leaf a draw, no prior (as the rollouts give)."""
    return None, torch.zeros(states.batch_size, device=states.device)


def _live(on_progress, player):
    """Turn an on_progress(analysis) callback into the search's on_progress(tree)."""
    if on_progress is None:
        return None

    def callback(tree):
        on_progress(Analysis.from_tree(tree, respect_proofs(tree, tree.root_visits().argmax(dim=1))))

    return callback


def build(game, iterations, options, *, device, seed) -> UCTPlayer:
    return UCTPlayer(game, iterations, c=options["c"], final=options["final"], seed=seed,
                     parallel=options["parallel"], virtual_loss=options["virtual_loss"], seconds=options["seconds"],
                     solver=options["solver"])
