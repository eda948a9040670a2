"""`policy:CHECKPOINT`: a trained network's own choice, with no search: the legal move its
policy head rates most probable (the first of equals).

    player = make("policy:runs/connect4-20261207-1200/latest.pt", game)
    player = make("policy:gomoku8", game)      # a zoo network, by name

What the network has learnt on its own, as AlphaZero.jl reports it beside its search's figures
("the network alone"); deterministic, one network call for a whole batch of positions.
"""

from __future__ import annotations

import torch

from games import Game
from games.options import Option

from .. import zoo
from ..checkpoint import load_checkpoint, network_from_checkpoint
from ..errors import UserError
from ..network import PRECISIONS, NetworkEvaluator, PolicyValueNet, precision_problem
from .base import Player

ARGUMENT = Option(None, str, metavar="CHECKPOINT", help="a checkpoint path, or a zoo network's name")
OPTIONS = {
    "precision": Option("float32", str, choices=PRECISIONS, noun="precision",
                        help="the network's arithmetic (float32 by default, so a judged move does not depend on the "
                             "CPU; auto, bfloat16, int8 as search.precision)"),
}


class PolicyPlayer(Player):
    """The most probable legal move of the network's policy, for each position of a batch."""

    def __init__(self, game: Game, net: PolicyValueNet, *, device="cpu", precision: str = "float32",
                 name: str = "policy"):
        super().__init__(game)
        self.device = torch.device(device)
        self.evaluator = NetworkEvaluator(net.eval(), game, self.device, precision=precision)
        self.spec = name + (f":precision={precision}" if precision != OPTIONS["precision"].default else "")

    def act(self, states, keys=None) -> torch.Tensor:
        prior, _ = self.evaluator(states.to(self.device))
        return prior.argmax(dim=1).to(states.device)  # (zero off the legal moves: masked_softmax)

    def prepare(self, state) -> None:
        self.evaluator(state.to(self.device))


def build(game: Game, argument: str | None, options: dict, *, device, seed) -> PolicyPlayer:
    if not argument:
        raise UserError("policy: needs a checkpoint, e.g. policy:runs/RUN/latest.pt, or a zoo network's name")
    problem = precision_problem(options["precision"], device)
    if problem:
        raise UserError(f"policy: precision {problem}")
    data = load_checkpoint(zoo.checkpoint_path(argument, game), game=game)
    _, net = network_from_checkpoint(data, device)
    return PolicyPlayer(game, net, device=device, precision=options["precision"], name=f"policy:{argument}")
