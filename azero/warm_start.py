"""A new run's network started from another run's (train.py --init-from): a size curriculum.

    weights = read_initial_network(config, "runs/gomoku9-.../latest.pt")   # before the run folder exists
    start_network(net, trainer_model, weights)                           # then, in the new run

A network with pooled heads (network.heads = "pooled") has the same weights for every board
size of its game, so a run on a small board, whose games are short and cheap, can hand its
network to a run on the large one. Only the network's weights come along (the trained copy's
too, where the run kept a moving average): the new run has its own optimizer, replay buffer,
ladder and clock, and its provenance.json names where it started from. Any other pair of runs
whose networks have the same shape may use it too (e.g. a longer run from a zoo network).
"""

from __future__ import annotations

from dataclasses import dataclass

import games

from . import zoo
from .checkpoint import load_checkpoint, training_stages
from .config import Config
from .errors import UserError
from .network import NetworkConfig, plays


@dataclass
class InitialNetwork:
    """Weights a new run starts from: `model` (the network), `trained` (the optimizer's copy, the
    same unless the run averaged its weights) and where they came from (for provenance.json)."""

    model: dict
    trained: dict
    origin: dict


def read_initial_network(config: Config, source: str) -> InitialNetwork:
    """The weights named by `source` (a checkpoint path, or a zoo network's name) for a new run of
    `config`; UserError unless its network config equals the run's and its game is of the same
    kind (another board size only with pooled heads)."""
    path = zoo.checkpoint_path(source)
    data = load_checkpoint(path)
    game, theirs = games.make_from_spec(config.game.spec), games.make_from_spec(data["game"])
    if type(theirs) is not type(game):
        raise UserError(f"--init-from {source}: a network of {theirs.spec}; this run plays {game.spec}")
    saved = NetworkConfig(**data["network"])
    if saved != config.network:
        key = next(name for name in vars(saved) if getattr(saved, name) != getattr(config.network, name))
        raise UserError(f"--init-from {source}: its network has network.{key} = {getattr(saved, key)!r}, this "
                        f"run's {getattr(config.network, key)!r}; give the run the same [network] section")
    if theirs != game and config.network.heads != "pooled":
        raise UserError(f"--init-from {source}: a network of {theirs.spec} can play {game.spec} only with pooled "
                        "heads (network.heads = \"pooled\" in both runs)")
    if not plays(theirs, game, any_size=True):  # (the rule load_checkpoint applies to players)
        raise UserError(f"--init-from {source}: {theirs.spec} is not {game.spec} on a board of another size")
    trainer = data.get("trainer") if isinstance(data.get("trainer"), dict) else {}
    origin = {"source": str(source), "path": str(path), "game": theirs.spec, "iteration": int(data["iteration"]),
              "hours": float(data["elapsed"]) / 3600 if "elapsed" in data else None,
              "trained_on": training_stages(data)}
    return InitialNetwork(data["model"], trainer.get("model", data["model"]), origin)


def start_network(net, trained, weights: InitialNetwork) -> None:
    """Load the weights into the run's network and into the optimizer's copy (`trained`, which is
    `net` itself unless the run averages its weights)."""
    net.load_state_dict(weights.model)
    if trained is not net:
        trained.load_state_dict(weights.trained)
