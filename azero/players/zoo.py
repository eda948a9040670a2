"""zoo:NAME[:options]: a network of the model zoo (azero/zoo/), searched as an az: player.

The options are az:'s; without simulations= (sims=) or algorithm= the player searches as the network's card
says its figures were measured, so `zoo:gomoku8` plays at the strength its card reports.
"""

from __future__ import annotations

from games import Game
from games.options import Option

from .. import zoo
from .az import player_from_checkpoint, spec_settings

ARGUMENT = Option(None, str, metavar="NAME", help="a zoo network's name (azero zoo lists them)")


def build(game: Game, name: str, options: dict, *, device, seed):
    entry = zoo.checked(name, game)
    card_search = {"simulations": entry.card["sims"], "algorithm": entry.card["algorithm"]}
    given = spec_settings(options)
    options = {**options, **{key: value for key, value in card_search.items() if key not in given}}
    return player_from_checkpoint(game, entry.path, options, device=device, seed=seed, name=f"zoo:{name}")
