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
from games.keyed_random import make_keys
from games.options import Option, read_option

from ..checkpoint import load_checkpoint, network_from_checkpoint
from ..config import MAX_CONSIDERED, ConfigError, SearchConfig, config_from_dict
from ..errors import UserError
from ..network import LOW_PRECISION_MIN_BATCH, PRECISIONS, PolicyValueNet, precision_problem
from ..network_search import ALGORITHMS, NetworkSearch
from ..search import Tree, choose, search_with_budget
from ..search.gumbel import chosen_action, deadline_stop
from ..search.selection import MAX_C_INIT, MAX_C_SCALE, MAX_C_VISIT
from ..search.tree import tree_bytes
from .base import MAX_SIMULATIONS, SIMULATIONS_ALLOWED, Analysis, Player
from .spec import NETWORK_VIRTUAL_LOSS, PARALLEL, SECONDS, SEED, SPARE_TREE_BYTES, PlayerEntry, PlayerSpec, leaves_per_step

ARGUMENT = Option(None, str, metavar="CHECKPOINT", help="a checkpoint path")
DEFAULT_SIMULATIONS = 200
OPTIONS = {
    "sims": Option(None, int, low=1, high=MAX_SIMULATIONS, allowed=SIMULATIONS_ALLOWED,
                   help=f"search simulations a move, default {DEFAULT_SIMULATIONS} (gumbel: its plan; a time budget "
                        "can only end it sooner; given, a game's clock only bounds it)"),
    "algorithm": Option(None, str, choices=ALGORITHMS, noun="search algorithm",
                        help="puct or gumbel; default: the checkpoint's search.algorithm, else puct"),
    "c_init": Option(1.25, float, low=0, high=MAX_C_INIT, help="PUCT exploration constant c_init"),
    "considered": Option(None, int, low=1, high=MAX_CONSIDERED,
                         help="gumbel: root moves considered (m); default: the checkpoint's, else 16"),
    "c_visit": Option(None, float, low=0, high=MAX_C_VISIT,
                      help="gumbel: sigma's c_visit; default: the checkpoint's, else 50"),
    "c_scale": Option(None, float, low=0, high=MAX_C_SCALE,
                      help="gumbel: sigma's c_scale; default: the checkpoint's, else 1"),
    "rescale_q": Option(None, bool, metavar="true|false", help="gumbel: sigma's Q min-max normalised at each "
                        "node; default: the checkpoint's, else false"),
    "precision": Option("auto", str, choices=PRECISIONS, noun="precision",
                        help="the network's arithmetic, as search.precision in train.py --help-config"),
    "parallel": PARALLEL,
    "virtual_loss": NETWORK_VIRTUAL_LOSS,
    "seconds": SECONDS,
    "seed": SEED,
}
NETWORK_LEAVES = {"cpu": 32}  # the most leaves "auto" gathers per step, by device type; others: 128


class AZPlayer(Player):
    """A network with PUCT search (plays the most visited move) or Gumbel AlphaZero's (plays the
    best of the most visited of the m moves of highest prior); no noise.

    search_options: NetworkSearch's keywords (algorithm, c_init, considered_actions, ...).
    trained_with: the algorithm of the checkpoint's training; the name shows any other.
    """

    def __init__(self, game: Game, net: PolicyValueNet, simulations: int | None = None, *, device="cpu", seed=0,
                 name: str = "az", parallel: str | int = "auto", seconds: float | None = None,
                 trained_with: str = "puct", **search_options):
        super().__init__(game, seed)
        self.stated_simulations = simulations  # None: a game's clock decides (session.Engine.think)
        simulations = DEFAULT_SIMULATIONS if simulations is None else simulations
        self.simulations = read_option("az: option sims", OPTIONS["sims"], simulations, error=UserError)
        self.parallel = read_option("az: option parallel", OPTIONS["parallel"], str(parallel), error=UserError)
        self.searcher = NetworkSearch(game, net, device=device, **search_options)
        self.widest = NETWORK_LEAVES.get(torch.device(device).type, 128)
        algorithm = self.searcher.algorithm
        # the algorithm is named unless it is PUCT and the checkpoint's own (trained_with): a Gumbel
        # checkpoint searched with PUCT must not read as searched the way it was trained
        named = algorithm != "puct" or trained_with != "puct"
        self.spec = f"{name}:sims={simulations}" + (f",algorithm={algorithm}" if named else "")
        # the options that change how it plays, as the spec would give them (a match's two names differ)
        c_init = search_options.get("c_init", OPTIONS["c_init"].default)
        precision = search_options.get("precision", OPTIONS["precision"].default)
        self.spec += f",c_init={c_init:g}" if c_init != OPTIONS["c_init"].default and algorithm == "puct" else ""
        if algorithm == "gumbel":  # Gumbel's constants where they differ from SearchConfig's defaults
            defaults = SearchConfig()
            for key, option in (("considered_actions", "considered"), ("c_visit", "c_visit"), ("c_scale", "c_scale")):
                value = search_options.get(key, getattr(defaults, key))
                self.spec += f",{option}={value:g}" if value != getattr(defaults, key) else ""
            self.spec += ",rescale_q=true" if search_options.get("rescale_q", defaults.rescale_q) else ""
        self.spec += f",precision={precision}" if precision != OPTIONS["precision"].default else ""
        self.spec += f",parallel={self.parallel}" if self.parallel != "auto" else ""
        virtual_loss = search_options.get("virtual_loss", NETWORK_VIRTUAL_LOSS.default)
        self.spec += ",virtual_loss=true" if virtual_loss and algorithm == "puct" else ""  # Gumbel has no pending visits
        self.spec += f",seconds={seconds:g}" if seconds else ""
        self.seconds = self.stated_seconds = seconds
        self._spare: Tree | None = None  # the last timed search's tree, whose memory the next one reuses

    def leaves_per_step(self, simulations: int | None) -> int:
        """The leaves each search step gathers per tree for a budget of `simulations` (None: time).
        Gumbel's search takes the simulations of a round of its schedule together, the same
        search in fewer network calls (the network's arithmetic aside: under precision "auto"
        a call of 16 leaves or more runs in int8 or bfloat16), so "auto" is every move a
        round may hold (m, at most the widest batch). With rescale_q a round's walks see the
        min and max of Q at the round's start (search.gumbel.round_actions), not quite the
        one-leaf search, but it played even with it (400 games, docs/benchmarks.md)."""
        if self.searcher.algorithm == "gumbel" and self.parallel == "auto":
            return max(1, min(self.searcher.considered_actions, self.widest))
        return leaves_per_step(self.parallel, simulations, self.widest)

    def analyse(self, states, keys=None, *, simulations=None, seconds=None, on_progress=None, should_stop=None):
        keys = self._keys(states, keys)
        if simulations is None and seconds is None and self.seconds is not None:  # the player's own clock
            simulations, seconds = self.simulations, self.seconds
        if self.searcher.algorithm == "gumbel":
            return self._analyse_gumbel(states, keys, simulations, seconds, on_progress, should_stop)
        if simulations is None and seconds is None and on_progress is None and should_stop is None:
            tree = self.searcher.fresh_tree(states, keys, self.simulations + 1)
            prior = tree.prior[:, 0].clone()
            self.searcher.search(tree, self.simulations, parallel=self.leaves_per_step(self.simulations))
        else:
            prior, _ = self.searcher.evaluator(states, keys)
            live = None
            if on_progress is not None:
                def live(tree):
                    on_progress(Analysis.from_tree(tree, tree.root_visits().argmax(dim=1), prior=prior))
            simulations = simulations if simulations is not None or seconds is not None else self.simulations
            tree = search_with_budget(
                self.game, states, self.searcher.evaluator, self.searcher.rule, keys,
                simulations=simulations, seconds=seconds, root_prior=prior, on_progress=live,
                should_stop=should_stop, parallel=self.leaves_per_step(simulations), reuse=self._spare,
            )
            self._spare = tree if tree_bytes(tree) <= SPARE_TREE_BYTES else None
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
        simulations = simulations or self.simulations
        result = self.searcher.gumbel_search(states, keys, simulations, noise=False, on_progress=live,
                                             should_stop=deadline_stop(seconds, should_stop),
                                             parallel=self.leaves_per_step(simulations))
        return Analysis.from_tree(result.tree, result.action, prior=result.tree.prior[:, 0].clone())

    def act(self, states, keys=None):
        return self.analyse(states, keys).action

    def close(self) -> None:
        self._spare = None

    def prepare(self, state) -> None:
        """Build the network's inference modules for every batch a search calls it with (one
        position, a few, a full step of leaves: their arithmetic may differ, int8 calibrates
        once) and compile the search's loops (a short search)."""
        evaluator = self.searcher.evaluator
        widest = self.leaves_per_step(None)
        for size in sorted({1, 2, widest, max(widest, LOW_PRECISION_MIN_BATCH)}):
            evaluator(state.repeat_interleave(size))
        self.analyse(state, make_keys(self.seed, state.batch_size), simulations=2 * widest)


def build(game: Game, path: str, options: dict, *, device, seed) -> AZPlayer:
    """An AZPlayer for `game` from the checkpoint at `path` (it must be a checkpoint of that game)."""
    return player_from_checkpoint(game, path, options, device=device, seed=seed)


def player_from_checkpoint(game: Game, path, options: dict, *, device, seed, name: str | None = None) -> AZPlayer:
    """build's work, for the az: and zoo: players: `name` is the player's name in match records
    (default az@ITERATION)."""
    problem = precision_problem(options["precision"], device)
    if problem:
        raise UserError(f"az: precision {problem}")
    data = load_checkpoint(path, game=game)
    _, net = network_from_checkpoint(data, device)
    saved = checkpoint_search(data)

    def given(key, saved_key):
        return options[key] if options[key] is not None else saved[saved_key]

    return AZPlayer(game, net, options["sims"], device=device, seed=seed, name=name or f"az@{data['iteration']}",
                    algorithm=given("algorithm", "algorithm"), c_init=options["c_init"],
                    considered_actions=given("considered", "considered_actions"),
                    c_visit=given("c_visit", "c_visit"), c_scale=given("c_scale", "c_scale"),
                    rescale_q=given("rescale_q", "rescale_q"),
                    precision=options["precision"], parallel=options["parallel"],
                    virtual_loss=options["virtual_loss"], seconds=options["seconds"], trained_with=saved["algorithm"])


def checkpoint_search(data: dict) -> dict:
    """The search settings a checkpoint was trained with (its config's [search], or its `search`
    entry), each read and checked as config.py does; SearchConfig's defaults for what it does not
    say (PUCT for checkpoints older than Gumbel)."""
    defaults = SearchConfig()
    section = (data.get("config") or {}).get("search") or data.get("search") or {}
    out = {}
    for key in ("algorithm", "considered_actions", "c_visit", "c_scale", "rescale_q"):
        value = section.get(key, getattr(defaults, key)) if isinstance(section, dict) else getattr(defaults, key)
        try:
            out[key] = getattr(config_from_dict({"search": {key: value}}).search, key)
        except ConfigError as error:
            raise UserError(f"checkpoint's saved search settings: {error}") from None
    return out


def make_az_player(spec: PlayerSpec, game: Game, *, device="cpu", seed: int | None = None) -> AZPlayer:
    """The AZPlayer of a parsed `az:PATH[:sims=N,algorithm=A,c_init=C,precision=P,parallel=K,seed=S,...]` spec."""
    return PlayerEntry("az", build, "", ARGUMENT, OPTIONS).create(spec, game, device=device, seed=seed)
