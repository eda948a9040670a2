"""The search's settings: one frozen SearchSettings from the config or a player spec down to the rules.

    settings = config.search                                 # the [search] section is one
    settings = SearchSettings(algorithm="gumbel", c_scale=0.1)
    settings = settings.replace(simulations=400, c_init=2)   # a copy with fields changed by name

Each setting has one name (the config's: `search.NAME`), and its default, bounds and help text
in its field here, which the config's schema, `--help-config`, the configuration reference, the
`az:` player's options, NetworkSearch and the selection rules' defaults (search/selection.py)
all read. A value out of bounds is refused when the settings are made, whoever makes them.
The bounds are the largest values that keep the search the algorithm it is named for: beyond
them one term is every choice, and the float32 arithmetic overflows to inf and NaN.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass

from games.options import field_option, option_field, read_option

from ..errors import UserError
from .memory import MAX_SIMULATIONS

ALGORITHMS = ("puct", "gumbel")
# The settings of each algorithm's rule at every node (NetworkSearch builds the rule from them;
# a player's name shows those that differ from the defaults)
ALGORITHM_SETTINGS = {"puct": ("c_init", "c_base", "fpu_reduction"),
                      "gumbel": ("considered_actions", "c_visit", "c_scale", "rescale_q")}
PRECISIONS = ("auto", "float32", "bfloat16", "int8")  # the network's arithmetic (azero/network.py)
MAX_MOVES = 100_000  # moves of a game (temperature moves)
MAX_C_INIT = 100.0  # PUCT's c_init (AlphaZero's is the default below)
MAX_C_BASE = 1e9  # PUCT's c_base (AlphaZero's is the default below); beyond it c(N) is c_init at any visit count
MAX_FPU_REDUCTION = 1.0  # PUCT's first-play urgency reduction: 1 already scores unvisited moves as losses
MAX_DIRICHLET_ALPHA = 1000.0  # far past uniform noise (10 / legal moves is the default)
MAX_CONSIDERED = 100_000  # Gumbel's considered root moves (m; more than a game's moves considers them all)
MAX_C_VISIT = 10_000.0  # Gumbel's c_visit (the paper's 50)
MAX_C_SCALE = 100.0  # Gumbel's c_scale (the paper's 1, mctx's 0.1 with rescaling)
MAX_FORCED_PLAYOUTS = 100.0  # KataGo's k, at most (the paper's 2): beyond it forcing is the whole search
MAX_THREAT_NODES = 10**7
MAX_CACHE_ENTRIES = 1 << 24  # the evaluation cache's entries, at most (search/cache.py)

_f = option_field  # (the schema below is a table: one line per setting)


@dataclass(frozen=True)
class SearchSettings:
    """How the network searches: the algorithm, its constants, self-play's exploration, the
    network's arithmetic. The [search] section of a config; a checkpoint records it."""

    algorithm: str = _f("puct", "puct = AlphaZero (PUCT, Dirichlet root noise, visit-count policy targets); gumbel = "
                       "Gumbel AlphaZero (Gumbel-sampled root moves, sequential halving, completed-Q targets)",
                       choices=ALGORITHMS)
    simulations: int = _f(64, "search simulations per move in self-play", low=1, high=MAX_SIMULATIONS)
    c_init: float = _f(1.25, "PUCT exploration constant c_init", low=0, high=MAX_C_INIT)
    c_base: float = _f(19652.0, "PUCT exploration constant c_base", low=1, high=MAX_C_BASE)
    fpu_reduction: float = _f(0.0, "first-play urgency: an unvisited move's value is the parent's minus this",
                             low=0, high=MAX_FPU_REDUCTION)
    dirichlet_alpha: float = _f(0.0, "PUCT root noise concentration; 0 = 10 / (typical number of legal moves)",
                               low=0, high=MAX_DIRICHLET_ALPHA)
    noise_fraction: float = _f(0.25, "PUCT: weight of the Dirichlet noise in the root prior", low=0, high=1)
    temperature_moves: int = _f(8, "PUCT: moves of each game sampled in proportion to visits; then the most "
                               "visited (gumbel always plays its sampled choice)", low=0, high=MAX_MOVES)
    reuse_tree: bool = _f(True, "PUCT: keep the chosen move's subtree for the next move in self-play (gumbel "
                         "searches a fresh tree each move)")
    considered_actions: int = _f(16, "gumbel: root moves sampled without replacement for sequential halving (m)",
                                low=1, high=MAX_CONSIDERED)
    c_visit: float = _f(50.0, "gumbel: sigma(q) = (c_visit + most visits of a sibling) * c_scale * q, q on [0, 1]",
                       low=0, high=MAX_C_VISIT)
    c_scale: float = _f(1.0, "gumbel: the weight of the values against the network's logits in sigma",
                       low=0, high=MAX_C_SCALE)
    rescale_q: bool = _f(False, "gumbel: sigma's q min-max normalised over each node's legal moves (best 1, worst "
                        "0; mctx's default, with c_scale 0.1) instead of (1 + Q) / 2")
    cheap_simulations: int = _f(16, "simulations of a cheap search (playout cap randomization: moves not "
                               "chosen by selfplay.full_search_fraction); fewer than search.simulations",
                               low=1, high=MAX_SIMULATIONS)
    forced_playouts: float = _f(0.0, "KataGo's forced playouts in self-play: each visited root move c gets at "
                               "least sqrt(k * P(c) * root visits) visits, pruned from the policy target after; "
                               "k (2 in the paper), 0 = off", low=0, high=MAX_FORCED_PLAYOUTS)
    solver: bool = _f(True, "prove wins, losses and draws in the tree (MCTS-Solver): a walk stops at a proven "
                     "position and backs up its exact value, selection skips moves proven lost, the fastest proven "
                     "win is played and never a lost move while another is not lost; self-play's policy targets "
                     "follow the proofs")
    threats: bool = _f(True, "k-in-a-row games (gomoku, tic-tac-toe): before searching a position, a bounded "
                      "threat search (victory by continuous fours) proves the root's moves: a forced win by fours "
                      "is played at once, and where the opponent has one, every move that does not stop it is "
                      "proven lost (exact within the node bound; other games: no effect)")
    threat_nodes: int = _f(20000, "the node bound of each threat search of a position (search.threats): "
                          "attacker moves tried, about a million a second compiled; 0 = off",
                          low=0, high=MAX_THREAT_NODES)
    precision: str = _f("auto", "network arithmetic in the search: auto = for batches of 16 or more on a CPU, "
                       "int8 if it has VNNI (AVX-512 VNNI / AVX-VNNI / AMX), else bfloat16 if it runs that "
                       "natively (AVX-512 BF16 / AMX), else int8 if it has AVX2, else float32; float32 on GPUs "
                       "and for smaller batches", choices=PRECISIONS)
    cache_entries: int = _f(0, "evaluation cache: network evaluations remembered by position (a table of this "
                           "many entries, rounded down to a power of two, about 4 * (moves + 3) bytes each), shared "
                           "by a game's moves and the games of a batch, emptied when the weights change; 0 = off",
                           low=0, high=MAX_CACHE_ENTRIES)

    def __post_init__(self):
        """Every value read as its field's kind (an int for a float becomes a float) and checked
        against its bounds: UserError naming search.NAME and what is allowed."""
        for name, option in setting_options().items():
            object.__setattr__(self, name, read_option(f"search.{name}", option, getattr(self, name), error=UserError))

    def replace(self, **changes) -> "SearchSettings":
        """A copy with the named settings changed (validated); UserError naming the valid names for
        an unknown one."""
        unknown = sorted(set(changes) - set(setting_options()))
        if unknown:
            raise UserError(f"unknown search setting {', '.join(unknown)}; valid settings: "
                            f"{', '.join(setting_options())}")
        return dataclasses.replace(self, **changes) if changes else self

    @classmethod
    def from_dict(cls, data: dict, origin: str) -> "SearchSettings":
        """Settings from a saved table (a checkpoint's or a run's [search]): the defaults for the
        settings it does not name (written before they existed), its unknown keys ignored (written
        by a version that had them); UserError naming `origin` for a value out of bounds."""
        if not isinstance(data, dict):
            raise UserError(f"{origin}: the search settings are a {type(data).__name__}, not a table")
        known = {key: value for key, value in data.items() if key in setting_options()}
        try:
            return cls(**known)
        except UserError as error:
            raise UserError(f"{origin}: {error}") from None

    def differences(self, names: typing.Iterable[str]) -> dict:
        """{name: value} of the settings among `names` whose value is not the default."""
        return {name: getattr(self, name) for name in names if getattr(self, name) != getattr(DEFAULTS, name)}


@functools.cache
def setting_options() -> dict:
    """{name: Option} of every setting, in the order of the fields (games/options.py reads values with them)."""
    kinds = typing.get_type_hints(SearchSettings)
    return {f.name: field_option(f, kinds[f.name]) for f in dataclasses.fields(SearchSettings)}


DEFAULTS = SearchSettings()  # every setting's default: the rules in selection.py take theirs from here
