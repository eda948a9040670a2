"""Player specs and registry entries: how 'uct:1000:c=1.0,final=secure' is read and built.

A spec is `NAME[:ARGUMENT][:key=value,...]`; a registry entry (`PlayerEntry`)
gives the argument's and the options' schema (games/options.py), and `create`
reads a parsed spec against it and calls the player's builder.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from games import Game
from games.options import Option, is_whole_number, read_option, read_options

from ..errors import UserError
from .base import MAX_SECONDS, Player

MAX_SEED = 2**32 - 1  # seeds are 32-bit (games.keyed_random.make_keys), as run.seed
SEED = Option(None, int, low=0, high=MAX_SEED, help="random seed, the command's seed unless given")
SPARE_TREE_BYTES = 512 << 20  # search players keep their last tree for reuse up to this size
MAX_PARALLEL = 1024  # leaves a step gathers from one tree, at most: far more than any evaluator's useful batch
PARALLEL = Option(
    "auto", str, check=lambda text: text == "auto" or (is_whole_number(text) and 1 <= int(text) <= MAX_PARALLEL),
    allowed=f"auto or a whole number at least 1 and at most {MAX_PARALLEL}", metavar="K",
    help="leaves each search step gathers from the tree for one evaluator call (auto: from the budget; "
         "gumbel: a round of its schedule)",
)
SECONDS = Option(None, float, low=0.001, high=MAX_SECONDS, metavar="S",
                 help="search time a move (the budget then caps it); in a match, play one game at a time (--batch 1)")
VIRTUAL_LOSS = Option(True, bool, metavar="true|false",
                      help="leaves in flight count as lost visits (false: as visits only, WU-UCT); default true")
# The network search's: on Othello at 800 simulations and K = 28 virtual loss cost about 150 Elo
# against the pending-count form, which kept the sequential search's strength (docs/benchmarks.md)
NETWORK_VIRTUAL_LOSS = Option(False, bool, metavar="true|false",
                              help="leaves in flight count as lost visits (true) or as visits only (WU-UCT); default false")


def leaves_per_step(choice: str | int, simulations: int | None, widest: int) -> int:
    """The leaves a search step gathers from each tree (search/engine.py's `parallel`): the
    number given, or for "auto" about the square root of the simulations, at most `widest`
    (the evaluator's batch that keeps it busy; `widest` itself for a search bounded by time
    only). The square root keeps the leaves in flight a small share of the search while a
    search of a few hundred simulations still fills a batch of 16-32."""
    if choice != "auto":
        return int(choice)
    if simulations is None:
        return widest
    return max(1, min(widest, math.isqrt(simulations)))


@dataclass
class PlayerSpec:
    """A parsed spec: name, one positional argument, keyword options (all as text)."""

    name: str
    argument: str | None = None
    options: dict[str, str] = field(default_factory=dict)


def split_spec(text: str) -> PlayerSpec:
    """'uct:1000:c=1.0,final=secure' -> PlayerSpec('uct', '1000', {'c': '1.0', 'final': 'secure'})."""
    name, _, rest = text.strip().partition(":")
    argument, options = rest or None, {}
    if rest:
        head, sep, tail = rest.rpartition(":")
        last = tail if sep else rest
        if sep and not tail.strip():  # 'az:net.pt:' (options left out after the colon)
            argument = head
        elif "=" in last:
            argument = head if sep else None
            for part in filter(None, (p.strip() for p in last.split(","))):
                key, eq, value = part.partition("=")
                if not eq or not key or not value:
                    raise UserError(f"cannot read player option {part!r} in {text!r}; write key=value")
                if key.strip() in options:
                    raise UserError(f"player option {key.strip()} is given twice in {text!r}")
                options[key.strip()] = value.strip()
    return PlayerSpec(name.strip().lower(), argument or None, options)


# build(game, argument, options, *, device, seed) -> Player; options hold every schema key but seed
Builder = Callable[..., Player]


@dataclass(frozen=True)
class PlayerEntry:
    """One registered player.

    name:     the spec's first word ("uct")
    build:    build(game, argument, options, *, device, seed) -> Player, given checked values
    help:     one line for help texts
    argument: the value after "name:" (its metavar names it in usage, e.g. ITERATIONS); None: takes none
    options:  key -> Option, the key=value options after the argument
    raw:      everything after "name:" is the argument as it stands (a command line), no options
    """

    name: str
    build: Builder
    help: str
    argument: Option | None = None
    options: Mapping[str, Option] = field(default_factory=dict)
    raw: bool = False

    def usage(self) -> str:
        """'uct:ITERATIONS[:c=C,final=robust|max|max-robust|secure,seed=SEED]'."""
        text = self.name
        if self.argument is not None:
            text += ":" + (self.argument.metavar or "ARGUMENT")
        if self.options:
            text += "[:" + ",".join(f"{key}={option.usage(key)}" for key, option in self.options.items()) + "]"
        return text

    def create(self, spec: PlayerSpec | str, game: Game, *, device="cpu", seed: int | None = None) -> Player:
        """The player `spec` asks for (its argument and options checked against this entry's schema).

        A `seed=` option overrides `seed`; without either the seed is 0.
        """
        if self.raw:  # the text after "name:" as it stands
            if not isinstance(spec, str):
                raise TypeError(f"{self.name} players are created from the spec's text")
            return self.build(game, spec.strip().partition(":")[2], {}, device=device, seed=seed or 0)
        if isinstance(spec, str):
            spec = split_spec(spec)
        argument = self._argument(spec)
        options: dict[str, Any] = read_options(self.name, self.options, spec.options, error=UserError)
        chosen = options.pop("seed", None)
        return self.build(game, argument, options, device=device, seed=chosen if chosen is not None else seed or 0)

    def _argument(self, spec: PlayerSpec):
        if self.argument is None:
            if spec.argument is not None:
                raise UserError(f"{self.name} takes no argument ({spec.argument!r}); write {self.usage()}")
            return None
        if spec.argument is None:
            raise UserError(f"{self.name} needs {self.argument.help}; write {self.usage()}")
        where = f"{self.name}: {(self.argument.metavar or 'argument').lower()}"
        return read_option(where, self.argument, spec.argument, error=UserError)
