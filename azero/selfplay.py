"""Self-play: many games at once as one batched state, turned into training samples.

Each move searches all B positions together (PUCT with root noise), plays a move
in every game (in proportion to visits for the first `temperature_moves` moves,
then the most visited), and records (planes, visit distribution, legal moves,
player to move). With `search.algorithm = "gumbel"` the search is Gumbel AlphaZero's
(search/gumbel.py): the move is its Gumbel-sampled choice and the policy recorded is
its improved policy softmax(logits + sigma(completed Q)); no Dirichlet noise, no
temperature, a fresh tree each move. When a game ends, its positions become samples whose value is
the outcome from the view of the player to move there; the game restarts in
place, so the batch stays full. Games in progress carry over between iterations
(their state is part of `state_dict`, so a resumed run continues them exactly).

With `reuse_tree`, the subtree under the move played is kept as the next
search's tree, and the new simulations are added to it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from games import Game, player_sign
from games.random import fold, make_keys, uniform

from .config import SearchConfig, SelfPlayConfig
from .network import PolicyValueNet
from .search.network_search import NetworkSearch, add_dirichlet_noise, default_alpha
from .search.tree import replace_rows, subtree


@dataclass
class Samples:
    """Training samples.

    planes: uint8 [n, C, H, W]  (0/1 planes of game.encode)
    policy: float [n, A]        the search's policy: visit distribution (PUCT) or improved policy (Gumbel)
    legal:  bool  [n, A]
    value:  float [n]           outcome from the view of the player to move, in [-1, 1]
    """

    planes: torch.Tensor
    policy: torch.Tensor
    legal: torch.Tensor
    value: torch.Tensor

    def __len__(self) -> int:
        return self.value.shape[0]

    @staticmethod
    def cat(parts: list["Samples"]) -> "Samples":
        return Samples(*(torch.cat([getattr(p, f) for p in parts]) for f in ("planes", "policy", "legal", "value")))


@dataclass
class SelfPlayStats:
    positions: int = 0
    games: int = 0
    first_player_wins: int = 0
    draws: int = 0
    total_length: int = 0
    seconds: float = 0.0
    mean_batch: float = 0.0

    def summary(self) -> dict:
        games = max(self.games, 1)
        return {
            "selfplay/games": self.games,
            "selfplay/game_length": self.total_length / games,
            "selfplay/first_player_win_rate": self.first_player_wins / games,
            "selfplay/draw_rate": self.draws / games,
            "charts/selfplay_positions_per_s": self.positions / max(self.seconds, 1e-9),
            "charts/selfplay_games_per_s": self.games / max(self.seconds, 1e-9),
            "charts/mean_batch_size": self.mean_batch,
        }


class SelfPlay:
    """B self-play games kept going across iterations."""

    def __init__(self, game: Game, net: PolicyValueNet, search: SearchConfig, selfplay: SelfPlayConfig, *,
                 device="cpu", seed: int = 0):
        self.game, self.search_cfg = game, search
        self.batch = selfplay.games
        self.searcher = NetworkSearch(game, net, device=device, algorithm=search.algorithm, c_init=search.c_init,
                                      c_base=search.c_base, fpu_reduction=search.fpu_reduction,
                                      considered_actions=search.considered_actions, c_visit=search.c_visit,
                                      c_scale=search.c_scale, precision=search.precision)
        self.gumbel = search.algorithm == "gumbel"
        self.reuse_tree = search.reuse_tree and not self.gumbel
        self.alpha = search.dirichlet_alpha or default_alpha(game)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.capacity = 2 * search.simulations + 1 if self.reuse_tree else search.simulations + 1
        max_len = game.num_actions * 4 + 16
        self.max_len = max_len
        h, w = game.board_shape
        b = self.batch
        self.states = game.initial_state(b)
        self.game_ids = torch.arange(b, dtype=torch.long)  # which game each slot plays (keys derive from it)
        self.next_game_id = b
        self.length = torch.zeros(b, dtype=torch.long)
        self.planes = torch.zeros(b, max_len, game.num_planes, h, w, dtype=torch.uint8)
        self.policy = torch.zeros(b, max_len, game.num_actions)
        self.legal = torch.zeros(b, max_len, game.num_actions, dtype=torch.bool)
        self.to_play = torch.zeros(b, max_len, dtype=torch.long)
        self.tree = None

    # -- one move of every game ---------------------------------------------------------------
    def _keys(self) -> torch.Tensor:
        return fold(make_keys(self.seed, 1).expand(self.batch) + self.game_ids * 0x9E37, self.states.move_number)

    def _search(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Search all positions; returns the policy target float [B, A] and the move to play long [B]."""
        keys = self._keys()
        if self.gumbel:
            result = self.searcher.gumbel_search(self.states, keys, self.search_cfg.simulations, noise=True)
            self.tree = result.tree
            return result.policy, result.action
        if self.tree is None:
            self.tree = self.searcher.fresh_tree(self.states, keys, self.capacity)
        else:
            self.tree.keys = keys
        legal = self.tree.legal[:, 0]
        self.tree.prior[:, 0] = add_dirichlet_noise(
            self.tree.prior[:, 0], legal, self.alpha, self.search_cfg.noise_fraction, self.rng
        )
        self.searcher.search(self.tree, self.search_cfg.simulations)
        visits = self.tree.root_visits()
        return visits / visits.sum(dim=1, keepdim=True).clamp(min=1), self._choose(visits)

    def _choose(self, visits: torch.Tensor) -> torch.Tensor:
        """Temperature 1 (in proportion to visits) early in each game, then the most visited."""
        greedy = visits.argmax(dim=1)
        draw = uniform(fold(self._keys(), 0x7E47), (self.batch, 1)).squeeze(1)
        cumulative = visits.cumsum(dim=1)
        target = draw * cumulative[:, -1]
        sampled = torch.searchsorted(cumulative, target.unsqueeze(1), right=True).squeeze(1)
        sampled = sampled.clamp(max=visits.shape[1] - 1)
        early = self.states.move_number < self.search_cfg.temperature_moves
        return torch.where(early, sampled, greedy)

    def step(self) -> tuple[Samples | None, list[tuple[int, int]]]:
        """Play one move in every game; returns the samples of finished games and (result, length) of each."""
        game, b = self.game, self.batch
        policy, action = self._search()
        rows = torch.arange(b)
        slot = self.length.clamp(max=self.max_len - 1)
        self.planes[rows, slot] = game.encode(self.states).to(torch.uint8)
        self.policy[rows, slot] = policy
        self.legal[rows, slot] = self.tree.legal[:, 0]
        self.to_play[rows, slot] = self.states.to_play
        self.length += 1
        self.states = game.step(self.states, action)
        if self.reuse_tree:
            self.tree, kept = subtree(self.tree, action)
            # a kept subtree must leave room for this move's simulations
            kept &= self.tree.next_node + self.search_cfg.simulations < self.capacity
        else:
            self.tree, kept = None, torch.zeros(b, dtype=torch.bool)
        finished = self.states.done.nonzero().squeeze(1)
        samples, outcomes = None, []
        if finished.numel():
            samples, outcomes = self._harvest(finished)
            kept[finished] = False
        if self.tree is not None and not bool(kept.all()):
            fresh = (~kept).nonzero().squeeze(1)
            replace_rows(self.tree, fresh, self.searcher.fresh_tree(
                self.states.take(fresh), self._keys().index_select(0, fresh), self.capacity))
        return samples, outcomes

    def _harvest(self, finished: torch.Tensor) -> tuple[Samples, list[tuple[int, int]]]:
        """Samples of the finished games, then restart them in place."""
        result = self.game.result(self.states.take(finished))
        parts, outcomes = [], []
        for i, slot in enumerate(finished.tolist()):
            n = int(self.length[slot])
            sign = player_sign(self.to_play[slot, :n]).float()
            parts.append(Samples(self.planes[slot, :n].clone(), self.policy[slot, :n].clone(),
                                 self.legal[slot, :n].clone(), result[i] * sign))
            outcomes.append((int(result[i]), n))
        fresh = self.game.initial_state(finished.numel())
        self.states.put_(finished, fresh)
        count = finished.numel()
        self.game_ids[finished] = torch.arange(self.next_game_id, self.next_game_id + count)
        self.next_game_id += count
        self.length[finished] = 0
        return Samples.cat(parts), outcomes

    # -- an iteration ---------------------------------------------------------------------------
    def run(self, positions: int, *, progress: bool = True) -> tuple[Samples, SelfPlayStats]:
        """Play until at least `positions` positions of finished games are collected."""
        stats, parts = SelfPlayStats(), []
        start = time.perf_counter()
        calls_before = self.searcher.evaluator.calls
        evaluated_before = self.searcher.evaluator.positions
        with tqdm(total=positions, desc="self-play", unit="pos", disable=not progress, leave=False) as bar:
            while stats.positions < positions:
                samples, outcomes = self.step()
                if samples is None:
                    continue
                parts.append(samples)
                stats.positions += len(samples)
                for result, length in outcomes:
                    stats.games += 1
                    stats.first_player_wins += result > 0
                    stats.draws += result == 0
                    stats.total_length += length
                bar.update(len(samples))
        stats.seconds = time.perf_counter() - start
        calls = self.searcher.evaluator.calls - calls_before
        stats.mean_batch = (self.searcher.evaluator.positions - evaluated_before) / max(calls, 1)
        return Samples.cat(parts), stats

    # -- persistence ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Games in progress and random state (trees are rebuilt: searches restart from fresh trees)."""
        return {
            "states": {k: v for k, v in vars(self.states).items()},
            "game_ids": self.game_ids.clone(),
            "next_game_id": self.next_game_id,
            "length": self.length.clone(),
            "planes": self.planes.clone(),
            "policy": self.policy.clone(),
            "legal": self.legal.clone(),
            "to_play": self.to_play.clone(),
            "rng": _rng_state(self.rng),
        }

    def load_state_dict(self, data: dict) -> None:
        self.states = type(self.states)(**data["states"])
        self.game_ids = data["game_ids"]
        self.next_game_id = int(data["next_game_id"])
        for key in ("length", "planes", "policy", "legal", "to_play"):
            setattr(self, key, data[key])
        self.rng = _rng_from_state(data["rng"])
        self.tree = None

    def reset_trees(self) -> None:
        """Drop kept subtrees (done at every iteration boundary, so resumed runs match uninterrupted ones)."""
        self.tree = None


def _rng_state(rng: np.random.Generator) -> dict:
    state = rng.bit_generator.state
    inner = state["state"]
    # big integers as decimal strings: loadable with weights_only=True
    return {"state": str(inner["state"]), "inc": str(inner["inc"]),
            "has_uint32": int(state["has_uint32"]), "uinteger": int(state["uinteger"])}


def _rng_from_state(data: dict) -> np.random.Generator:
    rng = np.random.default_rng()
    rng.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": int(data["state"]), "inc": int(data["inc"])},
        "has_uint32": int(data["has_uint32"]),
        "uinteger": int(data["uinteger"]),
    }
    return rng
