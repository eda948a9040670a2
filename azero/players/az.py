"""`az:CHECKPOINT`: a trained network with PUCT or Gumbel AlphaZero search (no noise), built
from a checkpoint.

    player = make("az:runs/gomoku-20261122-1500/latest.pt:sims=200", game)
    player = make("az:runs/gomoku-20261122-1500/latest.pt:sims=32,algorithm=gumbel", game)

The search is the checkpoint's `search.algorithm` (with its Gumbel constants) unless the
spec says otherwise; checkpoints that do not name one search with PUCT.
"""

from __future__ import annotations

import torch

from games import Game
from games.options import Option, read_option

from ..checkpoint import load_checkpoint, network_from_checkpoint
from ..config import ConfigError, SearchConfig, config_from_dict
from ..errors import UserError
from ..network import PRECISIONS, PolicyValueNet, precision_problem
from ..player import MAX_SIMULATIONS, SIMULATIONS_ALLOWED, Analysis, Player
from ..search import choose, search_with_budget
from ..search.gumbel import chosen_action, deadline_stop
from ..search.network_search import ALGORITHMS, NetworkSearch
from .spec import SEED, PlayerEntry, PlayerSpec

ARGUMENT = Option(None, str, metavar="CHECKPOINT", help="a checkpoint path")
OPTIONS = {
    "sims": Option(200, int, low=1, high=MAX_SIMULATIONS, allowed=SIMULATIONS_ALLOWED,
                   help="search simulations a move (gumbel: its plan; a time budget can only end it sooner)"),
    "algorithm": Option(None, str, choices=ALGORITHMS, noun="search algorithm",
                        help="puct or gumbel; default: the checkpoint's search.algorithm, else puct"),
    "c_init": Option(1.25, float, low=0, help="PUCT exploration constant c_init"),
    "considered": Option(None, int, low=1, help="gumbel: root moves considered (m); default: the checkpoint's, "
                         "else 16"),
    "c_visit": Option(None, float, low=0, help="gumbel: sigma's c_visit; default: the checkpoint's, else 50"),
    "c_scale": Option(None, float, low=0, help="gumbel: sigma's c_scale; default: the checkpoint's, else 1"),
    "precision": Option("auto", str, choices=PRECISIONS, noun="precision",
                        help="the network's arithmetic, as search.precision in train.py --help-config"),
    "seed": SEED,
}


class AZPlayer(Player):
    """A network with PUCT search (plays the most visited move) or Gumbel AlphaZero's (plays the
    best of the most visited of the m moves of highest prior); no noise.

    search_options: NetworkSearch's keywords (algorithm, c_init, considered_actions, ...).
    """

    def __init__(self, game: Game, net: PolicyValueNet, simulations: int = 200, *, device="cpu", seed=0,
                 name: str = "az", **search_options):
        super().__init__(game, seed)
        self.simulations = read_option("az: option sims", OPTIONS["sims"], simulations, error=UserError)
        self.searcher = NetworkSearch(game, net, device=device, **search_options)
        algorithm = self.searcher.algorithm
        self.spec = f"{name}:sims={simulations}" + (f",algorithm={algorithm}" if algorithm != "puct" else "")

    def analyse(self, states, keys=None, *, simulations=None, seconds=None, on_progress=None, should_stop=None):
        keys = self._keys(states, keys)
        if self.searcher.algorithm == "gumbel":
            return self._analyse_gumbel(states, keys, simulations, seconds, on_progress, should_stop)
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

    def _analyse_gumbel(self, states, keys, simulations, seconds, on_progress, should_stop) -> Analysis:
        """Gumbel AlphaZero without noise: `simulations` (else the player's sims) planned by
        sequential halving; a time budget or should_stop may end the search sooner."""
        live = None
        if on_progress is not None:
            rule = self.searcher.rule

            def live(tree):
                noise = torch.zeros_like(tree.prior[:, 0])
                on_progress(Analysis.from_tree(tree, chosen_action(tree, rule, noise), prior=tree.prior[:, 0]))
        result = self.searcher.gumbel_search(states, keys, simulations or self.simulations, noise=False,
                                             on_progress=live, should_stop=deadline_stop(seconds, should_stop))
        return Analysis.from_tree(result.tree, result.action, prior=result.tree.prior[:, 0].clone())

    def act(self, states, keys=None):
        return self.analyse(states, keys).action


def build(game: Game, path: str, options: dict, *, device, seed) -> AZPlayer:
    """An AZPlayer for `game` from the checkpoint at `path` (it must be a checkpoint of that game)."""
    problem = precision_problem(options["precision"], device)
    if problem:
        raise UserError(f"az: precision {problem}")
    data = load_checkpoint(path, game=game)
    _, net = network_from_checkpoint(data, device)
    saved = checkpoint_search(data)

    def given(key, saved_key):
        return options[key] if options[key] is not None else saved[saved_key]

    return AZPlayer(game, net, options["sims"], device=device, seed=seed, name=f"az@{data['iteration']}",
                    algorithm=given("algorithm", "algorithm"), c_init=options["c_init"],
                    considered_actions=given("considered", "considered_actions"),
                    c_visit=given("c_visit", "c_visit"), c_scale=given("c_scale", "c_scale"),
                    precision=options["precision"])


def checkpoint_search(data: dict) -> dict:
    """The search settings a checkpoint was trained with (its config's [search], or its `search`
    entry), each read and checked as config.py does; SearchConfig's defaults for what it does not
    say (PUCT for checkpoints older than Gumbel)."""
    defaults = SearchConfig()
    section = (data.get("config") or {}).get("search") or data.get("search") or {}
    out = {}
    for key in ("algorithm", "considered_actions", "c_visit", "c_scale"):
        value = section.get(key, getattr(defaults, key)) if isinstance(section, dict) else getattr(defaults, key)
        try:
            out[key] = getattr(config_from_dict({"search": {key: value}}).search, key)
        except ConfigError as error:
            raise UserError(f"checkpoint's saved search settings: {error}") from None
    return out


def make_az_player(spec: PlayerSpec, game: Game, *, device="cpu", seed: int | None = None) -> AZPlayer:
    """The AZPlayer of a parsed `az:PATH[:sims=N,algorithm=A,c_init=C,precision=P,seed=S,...]` spec."""
    return PlayerEntry("az", build, "", ARGUMENT, OPTIONS).create(spec, game, device=device, seed=seed)
