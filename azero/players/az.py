"""`az:CHECKPOINT`: a trained network with PUCT search (no noise), built from a checkpoint.

    player = make("az:runs/gomoku-20261122-1500/latest.pt:sims=200", game)
"""

from __future__ import annotations

from games import Game
from games.options import Option, read_option

from ..checkpoint import load_checkpoint, network_from_checkpoint
from ..errors import UserError
from ..network import PRECISIONS, PolicyValueNet, precision_problem
from ..player import MAX_SIMULATIONS, SIMULATIONS_ALLOWED, Analysis, Player
from ..search import choose, search_with_budget
from ..search.network_search import NetworkSearch
from .spec import SEED, PlayerEntry, PlayerSpec

ARGUMENT = Option(None, str, metavar="CHECKPOINT", help="a checkpoint path")
OPTIONS = {
    "sims": Option(200, int, low=1, high=MAX_SIMULATIONS, allowed=SIMULATIONS_ALLOWED, help="PUCT simulations a move"),
    "c_init": Option(1.25, float, low=0, help="PUCT exploration constant c_init"),
    "precision": Option("auto", str, choices=PRECISIONS, noun="precision",
                        help="the network's arithmetic, as search.precision in train.py --help-config"),
    "seed": SEED,
}


class AZPlayer(Player):
    """A network with PUCT search; plays the most visited move (no noise)."""

    def __init__(self, game: Game, net: PolicyValueNet, simulations: int = 200, *, device="cpu", seed=0,
                 name: str = "az", **search_options):
        super().__init__(game, seed)
        self.simulations = read_option("az: option sims", OPTIONS["sims"], simulations, error=UserError)
        self.searcher = NetworkSearch(game, net, device=device, **search_options)
        self.spec = f"{name}:sims={simulations}"

    def analyse(self, states, keys=None, *, simulations=None, seconds=None, on_progress=None, should_stop=None):
        keys = self._keys(states, keys)
        if simulations is None and seconds is None and on_progress is None and should_stop is None:
            tree = self.searcher.fresh_tree(states, keys, self.simulations + 1)
            prior = tree.prior[:, 0].clone()
            self.searcher.search(tree, self.simulations)
        else:
            prior, _ = self.searcher.evaluator(states, keys)
            live = None
            if on_progress is not None:
                def live(tree):
                    on_progress(Analysis.from_tree(tree, tree.root_visits().argmax(dim=1), prior=prior))
            tree = search_with_budget(
                self.game, states, self.searcher.evaluator, self.searcher.rule, keys,
                simulations=simulations if simulations is not None or seconds is not None else self.simulations,
                seconds=seconds, root_prior=prior, on_progress=live, should_stop=should_stop,
            )
        action = choose("robust", tree.root_visits(), tree.child_value_sum[:, 0])
        return Analysis.from_tree(tree, action, prior=prior)

    def act(self, states, keys=None):
        return self.analyse(states, keys).action


def build(game: Game, path: str, options: dict, *, device, seed) -> AZPlayer:
    """An AZPlayer for `game` from the checkpoint at `path` (it must be a checkpoint of that game)."""
    problem = precision_problem(options["precision"], device)
    if problem:
        raise UserError(f"az: precision {problem}")
    data = load_checkpoint(path, game=game)
    _, net = network_from_checkpoint(data, device)
    return AZPlayer(game, net, options["sims"], device=device, seed=seed, name=f"az@{data['iteration']}",
                    c_init=options["c_init"], precision=options["precision"])


def make_az_player(spec: PlayerSpec, game: Game, *, device="cpu", seed: int | None = None) -> AZPlayer:
    """The AZPlayer of a parsed `az:PATH[:sims=N,c_init=C,precision=P,seed=S]` spec."""
    return PlayerEntry("az", build, "", ARGUMENT, OPTIONS).create(spec, game, device=device, seed=seed)
