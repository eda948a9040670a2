"""The network's search (PUCT with root noise) and the `az:` player built from a checkpoint.

    player = make("az:runs/gomoku-20261122-1500/latest.pt:sims=200", game)

Root noise is Dirichlet noise mixed into the root prior only (AlphaZero): the
concentration alpha defaults to 10 / (typical number of legal moves), estimated
once per game from random play.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from games import Game, State
from games.random import fold, make_keys

from .checkpoint import load_checkpoint, network_from_checkpoint
from .errors import UserError
from .network import PRECISIONS, NetworkEvaluator, PolicyValueNet
from .players import Analysis, Player
from .search import PUCT, Tree, choose, new_tree, search_with_budget, simulate


@lru_cache(maxsize=None)
def typical_legal_moves(game: Game) -> float:
    """Mean number of legal moves over the positions of 32 random games (fixed seed)."""
    state = game.initial_state(32)
    keys = make_keys(12345, 32)
    counts, ply = [], 0
    while not bool(state.done.all()) and ply < 10_000:
        mask = game.legal_mask(state)
        live = ~state.done
        counts.append(mask[live].sum(dim=1).float())
        from games import sample_uniform_legal

        state = game.step(state, sample_uniform_legal(mask, fold(keys, ply)))
        ply += 1
    return float(torch.cat(counts).mean()) if counts else 1.0


def default_alpha(game: Game) -> float:
    return 10.0 / max(typical_legal_moves(game), 1.0)


def add_dirichlet_noise(
    prior: torch.Tensor, legal: torch.Tensor, alpha: float, fraction: float, rng: np.random.Generator
) -> torch.Tensor:
    """(1 - fraction) * prior + fraction * Dirichlet(alpha) over the legal actions of each row.

    prior float [B, A], legal bool [B, A] -> float [B, A].
    """
    gamma = rng.gamma(alpha, 1.0, size=tuple(prior.shape)).astype(np.float32)
    noise = torch.from_numpy(gamma).to(prior.device) * legal
    noise = noise / noise.sum(dim=1, keepdim=True).clamp(min=1e-30)
    return (1.0 - fraction) * prior + fraction * noise


class NetworkSearch:
    """PUCT search driven by a network, for all B positions at once."""

    def __init__(self, game: Game, net: PolicyValueNet, *, device="cpu", c_init=1.25, c_base=19652.0,
                 fpu_reduction=0.0, precision="auto"):
        self.game = game
        self.evaluator = NetworkEvaluator(net, game, device, precision)
        self.rule = PUCT(c_init=c_init, c_base=c_base, fpu_reduction=fpu_reduction)

    def fresh_tree(self, states: State, keys: torch.Tensor, capacity: int) -> Tree:
        """A tree per position whose root carries the network's prior (one forward pass)."""
        prior, _ = self.evaluator(states, keys)
        return new_tree(self.game, states, capacity, keys, root_prior=prior, with_prior=True)

    def search(self, tree: Tree, simulations: int) -> Tree:
        return simulate(tree, self.game, self.evaluator, self.rule, simulations)


class AZPlayer(Player):
    """A network with PUCT search; plays the most visited move (no noise)."""

    def __init__(self, game: Game, net: PolicyValueNet, simulations: int = 200, *, device="cpu", seed=0,
                 name: str = "az", **search_options):
        super().__init__(game, seed)
        if simulations < 1:
            raise UserError("az: sims must be at least 1")
        self.simulations = simulations
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


def make_az_player(spec, game: Game, *, device="cpu", seed=None) -> AZPlayer:
    """`az:PATH[:sims=N,c_init=C,precision=P]` -> an AZPlayer for `game` (the checkpoint must be of that game)."""
    if not spec.argument:
        raise UserError("az needs a checkpoint path, e.g. az:runs/gomoku-.../latest.pt:sims=200")
    allowed = {"sims", "c_init", "seed", "precision"}
    unknown = sorted(set(spec.options) - allowed)
    if unknown:
        raise UserError(f"az: unknown option {', '.join(unknown)}; valid options: {', '.join(sorted(allowed))}")
    try:
        sims = int(spec.options.get("sims", 200))
        c_init = float(spec.options.get("c_init", 1.25))
        seed = int(spec.options.get("seed", seed or 0))
    except ValueError:
        raise UserError(f"az: options must be numbers: {spec.options}") from None
    precision = spec.options.get("precision", "auto")
    if precision not in PRECISIONS:
        raise UserError(f"az: precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision == "int8" and torch.device(device).type != "cpu":
        raise UserError(f"az: precision int8 runs on the CPU only, not on {device}")
    data = load_checkpoint(spec.argument, game=game)
    _, net = network_from_checkpoint(data, device)
    label = f"az@{data['iteration']}"
    return AZPlayer(game, net, sims, device=device, seed=seed, name=label, c_init=c_init, precision=precision)
