"""`az:CHECKPOINT`: a trained network with PUCT or Gumbel AlphaZero search (no noise), built
from a checkpoint.

    player = make("az:runs/gomoku-20261122-1500/latest.pt:sims=200", game)
    player = make("az:runs/gomoku-20261122-1500/latest.pt:simulations=32,algorithm=gumbel,c_scale=0.1", game)

The player searches with the search settings its checkpoint records (azero/search/settings.py:
the algorithm and its constants it was trained with; the defaults for a checkpoint older than a
setting, PUCT for those older than Gumbel), but for its own budget (`simulations`, default
DEFAULT_SIMULATIONS) and arithmetic (`precision`, default auto); a spec sets any of SETTINGS by its
name, and `sims=` and `considered=` are short for `simulations=` and `considered_actions=`.
"""

from __future__ import annotations

import dataclasses

import torch

from games import Game
from games.keyed_random import make_keys
from games.options import Option, read_option

from ..checkpoint import load_checkpoint, network_from_checkpoint, search_settings
from ..errors import UserError
from ..network import LOW_PRECISION_MIN_BATCH, PolicyValueNet, precision_problem
from ..network_search import NetworkSearch
from ..search import Tree, choose, search_with_budget
from ..search.gumbel import chosen_action, deadline_stop
from ..search.proofs import respect_proofs
from ..search.settings import ALGORITHM_SETTINGS, DEFAULTS, SearchSettings, setting_options
from ..search.tree import tree_bytes
from .base import SIMULATIONS_ALLOWED, Analysis, Player
from .spec import NETWORK_VIRTUAL_LOSS, PARALLEL, SECONDS, SEED, SPARE_TREE_BYTES, PlayerEntry, PlayerSpec, leaves_per_step

ARGUMENT = Option(None, str, metavar="CHECKPOINT", help="a checkpoint path")
DEFAULT_SIMULATIONS = 200
# The search settings a spec may set, by their names: the budget, the algorithm and its constants,
# the arithmetic; the others are self-play's (root noise, temperature, tree reuse, cheap searches,
# forced playouts), which a player does not use.
SETTINGS = ("simulations", "algorithm", *ALGORITHM_SETTINGS["puct"], *ALGORITHM_SETTINGS["gumbel"], "precision",
            "solver", "threats", "threat_nodes")
SHORT = {"simulations": "sims", "considered_actions": "considered"}  # the short spellings, also in players' names
_PLAYER_HELP = {  # where the player's default is not the checkpoint's
    "simulations": f"search simulations a move, default {DEFAULT_SIMULATIONS} (gumbel: its plan; a time budget can "
                   "only end it sooner; given, a game's clock only bounds it)",
    "algorithm": "puct or gumbel; default: the checkpoint's search.algorithm, else puct",
    "precision": "the network's arithmetic, as search.precision in train.py --help-config; default auto",
}


def _setting_option(name: str) -> Option:
    """The option of a search setting in a spec: its bounds and help from search/settings.py, unset
    unless given (the checkpoint's value, or the player's own default, then)."""
    option = setting_options()[name]
    help = _PLAYER_HELP.get(name, f"{option.help}; default: the checkpoint's")
    allowed = SIMULATIONS_ALLOWED if name == "simulations" else ""
    noun = {"algorithm": "search algorithm", "precision": "precision"}.get(name, "")
    return dataclasses.replace(option, default=None, help=help, allowed=allowed, noun=noun,
                               metavar="true|false" if option.kind is bool else "")


def _options() -> dict[str, Option]:
    options = {}
    for name in SETTINGS:
        if name in SHORT:
            options[SHORT[name]] = dataclasses.replace(_setting_option(name), help=f"short for {name}=")
        options[name] = _setting_option(name)
    return {**options, "parallel": PARALLEL, "virtual_loss": NETWORK_VIRTUAL_LOSS, "seconds": SECONDS, "seed": SEED}


OPTIONS = _options()
NETWORK_LEAVES = {"cpu": 32}  # the most leaves "auto" gathers per step, by device type; others: 128


def spec_settings(options: dict) -> dict:
    """{setting: value} of the search settings a spec's read options give (None: not given), short
    spellings under their names; UserError for a setting given under both."""
    given = {}
    for key, value in options.items():
        name = next((long for long, short in SHORT.items() if short == key), key)
        if name not in SETTINGS or value is None:
            continue
        if name in given:
            raise UserError(f"az: options {SHORT[name]} and {name} set the same search setting; give one")
        given[name] = value
    return given


def _spec_text(value) -> str:
    """A setting's value as a spec writes it: 2, 0.1, true, int8."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else f"{value:g}"


class AZPlayer(Player):
    """A network with PUCT search (plays the most visited move) or Gumbel AlphaZero's (plays the
    best of the most visited of the m moves of highest prior); no noise.

    settings: the search's settings (SearchSettings; the defaults if None), `changes` (settings by
    name) applied over them; `simulations` (None: not stated, DEFAULT_SIMULATIONS, and a game's
    clock decides, session.Engine.think) over their own. Self-play's forced playouts are left out.
    trained_with: the algorithm of the checkpoint's training; the name shows any other.
    """

    def __init__(self, game: Game, net: PolicyValueNet, simulations: int | None = None, *,
                 settings: SearchSettings | None = None, device="cpu", seed=0, name: str = "az",
                 parallel: str | int = "auto", seconds: float | None = None, trained_with: str = "puct",
                 virtual_loss: bool = NETWORK_VIRTUAL_LOSS.default, **changes):
        super().__init__(game, seed)
        self.stated_simulations = simulations  # None: a game's clock decides (session.Engine.think)
        simulations = DEFAULT_SIMULATIONS if simulations is None else simulations
        self.settings = (settings or DEFAULTS).replace(**changes, simulations=simulations, forced_playouts=0.0)
        self.simulations = self.settings.simulations
        self.parallel = read_option("az: option parallel", OPTIONS["parallel"], str(parallel), error=UserError)
        self.searcher = NetworkSearch(game, net, self.settings, device=device, virtual_loss=virtual_loss)
        self.widest = NETWORK_LEAVES.get(torch.device(device).type, 128)
        algorithm = self.settings.algorithm
        # the algorithm is named unless it is PUCT and the checkpoint's own (trained_with): a Gumbel
        # checkpoint searched with PUCT must not read as searched the way it was trained
        named = algorithm != "puct" or trained_with != "puct"
        self.spec = f"{name}:sims={self.simulations}" + (f",algorithm={algorithm}" if named else "")
        # the settings that change how it plays, where they differ from the defaults (a match's two names differ)
        shown = ALGORITHM_SETTINGS[algorithm] + ("precision", "solver", "threats", "threat_nodes")
        for setting, value in self.settings.differences(shown).items():
            self.spec += f",{SHORT.get(setting, setting)}={_spec_text(value)}"
        self.spec += f",parallel={self.parallel}" if self.parallel != "auto" else ""
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
                    on_progress(Analysis.from_tree(tree, respect_proofs(tree, tree.root_visits().argmax(dim=1)),
                                                   prior=prior))
            simulations = simulations if simulations is not None or seconds is not None else self.simulations
            tree = search_with_budget(
                self.game, states, self.searcher.evaluator, self.searcher.rule, keys,
                simulations=simulations, seconds=seconds, root_prior=prior, on_progress=live,
                should_stop=should_stop, parallel=self.leaves_per_step(simulations), reuse=self._spare,
                solver=self.settings.solver, threat_nodes=self.searcher.threat_nodes,
            )
            self._spare = tree if tree_bytes(tree) <= SPARE_TREE_BYTES else None
        action = respect_proofs(tree, choose("robust", tree.root_visits(), tree.child_value_sum[:, 0]))
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
    given = spec_settings(options)
    problem = precision_problem(given.get("precision", DEFAULTS.precision), device)
    if problem:
        raise UserError(f"az: precision {problem}")
    data = load_checkpoint(path, game=game)
    _, net = network_from_checkpoint(data, device)
    trained = search_settings(data)
    simulations = given.pop("simulations", None)
    # the checkpoint's search, with the player's own arithmetic unless the spec gives one
    settings = trained.replace(precision=DEFAULTS.precision).replace(**given)
    return AZPlayer(game, net, simulations, settings=settings, device=device, seed=seed,
                    name=name or f"az@{data['iteration']}", parallel=options["parallel"],
                    virtual_loss=options["virtual_loss"], seconds=options["seconds"], trained_with=trained.algorithm)


def make_az_player(spec: PlayerSpec, game: Game, *, device="cpu", seed: int | None = None) -> AZPlayer:
    """The AZPlayer of a parsed `az:PATH[:simulations=N,algorithm=A,c_init=C,precision=P,parallel=K,seed=S,...]` spec."""
    return PlayerEntry("az", build, "", ARGUMENT, OPTIONS).create(spec, game, device=device, seed=seed)
