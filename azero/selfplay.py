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

The training signals of docs/training.md, each a switch of the config, act here:

* Playout cap randomization (`selfplay.full_search_fraction` < 1): each move of each game
  is, with that probability, a full search (`search.simulations`, root noise, the policy
  target); the others are cheap searches (`search.cheap_simulations`, no noise, no forced
  playouts) whose samples keep their value and auxiliary targets but carry policy weight
  0, so the policy loss skips them. All B trees first get the cheap simulations together,
  then the full searches' trees get the rest, as a smaller batch. With Gumbel, the cheap
  moves get a Gumbel search of `search.cheap_simulations` (its sample chooses the move).
* Forced playouts (`search.forced_playouts` = k > 0, PUCT only): in full searches the root
  gives each visited move its forced visits, and the policy target (and the move chosen)
  takes them out again (search/forced.py).
* The search's value in the value target (`selfplay.search_value_weight` = w > 0): each
  position's value target is (1 - w) * the game's outcome + w * the root value of the
  search made there (the mean of its root children's values, the mover's view).
* Random openings (`selfplay.opening_plies` = n > 0): each game, when it starts, plays its
  own number of uniformly random legal moves, drawn uniformly from 0 to n, none of which
  ends it (games.opening_move; a game whose every legal move would end it stops its
  opening there); the searches begin after them, and the random moves' positions are not
  samples (`search.temperature_moves` counts them).
* Proven moves (`search.solver`, on by default; search/proofs.py): where the search proved
  root moves, the move played is the fastest win, or never a lost move while one is not
  lost (the most visited of those), and the policy target puts all its weight on the
  fastest winning moves (evenly), or none on the lost moves (the rest renormalised). The
  value target stays the game's outcome: play that follows the proofs reaches the proven
  result, so the outcome already is the exact value there.
* Auxiliary targets: a finished game's ownership of each point and its final margin
  (games with `has_ownership` / `has_score`), from each position's player to move's view,
  and the next position's policy target as the opponent-reply target; each recorded only
  when the network has its head (`stored_fields`), the others left at their defaults.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from games import NO_ACTION, Game, State, opening_move, player_sign
from games.keyed_random import fold, make_keys, uniform

from .config import SelfPlayConfig
from .network import PolicyValueNet
from .network_search import NetworkSearch, add_dirichlet_noise, default_alpha
from .search.forced import prune_forced_visits
from .search.proofs import proven_target, respect_proofs
from .search.settings import SearchSettings
from .search.tree import replace_rows, subtree, take_rows


@dataclass
class Samples:
    """Training samples.

    planes:          uint8 [n, C, H, W]  (0/1 planes of game.encode)
    policy:          float [n, A]        the search's policy: visit distribution (PUCT, pruned of forced
                                         playouts) or improved policy (Gumbel)
    legal:           bool  [n, A]
    value:           float [n]           outcome from the view of the player to move, in [-1, 1] (with the
                                         search's value mixed in under `selfplay.search_value_weight`)
    policy_weight:   float [n]           1 where `policy` is a target (a full search), 0 after a cheap search
    ownership:       int8  [n, H, W]     the final owner of each point, player to move's view (+1: that player's);
                                         0 in games without ownership
    score:           float [n]           the final margin, player to move's view; 0 in games without a score
    opponent_policy: float [n, A]        the next position's policy target (the opponent's reply)
    opponent_weight: float [n]           1 where that target exists (the next move was a full search)

    The fields after `value` may be left out (targets of heads the network lacks, older
    replay files, tests): they default to policy weight 1 and no auxiliary targets, each
    one row repeated (stride 0 along the samples: no memory, and a few bytes when pickled
    to a learner), which `cat` keeps so. Write into a batch's fields only if they were given.
    """

    planes: torch.Tensor
    policy: torch.Tensor
    legal: torch.Tensor
    value: torch.Tensor
    policy_weight: torch.Tensor | None = None
    ownership: torch.Tensor | None = None
    score: torch.Tensor | None = None
    opponent_policy: torch.Tensor | None = None
    opponent_weight: torch.Tensor | None = None

    def __post_init__(self) -> None:
        n, device = self.value.shape[0], self.value.device
        if self.policy_weight is None:
            self.policy_weight = repeated(torch.ones((), device=device), n)
        if self.ownership is None:
            self.ownership = repeated(torch.zeros(self.planes.shape[-2:], dtype=torch.int8, device=device), n)
        if self.score is None:
            self.score = repeated(torch.zeros((), device=device), n)
        if self.opponent_policy is None:
            self.opponent_policy = repeated(torch.zeros(self.policy.shape[1:], device=device), n)
        if self.opponent_weight is None:
            self.opponent_weight = repeated(torch.zeros((), device=device), n)

    def __len__(self) -> int:
        return self.value.shape[0]

    def fields(self) -> dict[str, torch.Tensor]:
        """Every field by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def map(self, fn) -> "Samples":
        """The samples with `fn` applied to every field."""
        return Samples(**{name: fn(t) for name, t in self.fields().items()})

    @staticmethod
    def cat(parts: list["Samples"]) -> "Samples":
        names = [f.name for f in dataclasses.fields(Samples)]
        return Samples(**{name: _cat([getattr(p, name) for p in parts]) for name in names})


def repeated(row: torch.Tensor, n: int) -> torch.Tensor:
    """`row` as n rows [n, *row.shape] that share its memory (stride 0 along the first dim)."""
    return row.as_strided((n, *row.shape), (0, *row.stride()))


def _cat(tensors: list[torch.Tensor]) -> torch.Tensor:
    """torch.cat, but parts that all repeat one row (targets not recorded) stay that row repeated."""
    rows = [t[0] for t in tensors if len(t)]
    if rows and all(t.stride(0) == 0 for t in tensors if len(t)) and all(torch.equal(r, rows[0]) for r in rows):
        return repeated(rows[0], sum(len(t) for t in tensors))
    return torch.cat(tensors)


# The targets of the network's optional heads: a run whose network lacks the head neither
# records, keeps nor saves them (the opponent's policy alone is A floats a sample: 360 MB
# in a 400,000-sample ring of 15x15 gomoku, and as much again sent by self-play actors).
HEAD_FIELDS = {
    "ownership": ("ownership",),
    "score": ("score",),
    "opponent_policy": ("opponent_policy", "opponent_weight"),
}


def stored_fields(network_config) -> list[str]:
    """The fields of `Samples` a run with this network trains on, so records and keeps."""
    dropped = {name for head, names in HEAD_FIELDS.items() if not getattr(network_config, head) for name in names}
    return [f.name for f in dataclasses.fields(Samples) if f.name not in dropped]


@dataclass
class SelfPlayStats:
    positions: int = 0  # positions of the games that finished (what goes to the buffer)
    moves: int = 0  # positions the searches played, in every game (finished or not): the self-play rate's count
    policy_targets: int = 0
    games: int = 0
    first_player_wins: int = 0
    draws: int = 0
    total_length: int = 0
    seconds: float = 0.0
    mean_batch: float = 0.0
    cache_lookups: int = 0  # positions the evaluation cache was asked for (0 without a cache)
    cache_hits: int = 0
    cache_bytes: int = 0

    def summary(self) -> dict:
        games = max(self.games, 1)
        return {
            "selfplay/games": self.games,
            "selfplay/game_length": self.total_length / games,
            "selfplay/first_player_win_rate": self.first_player_wins / games,
            "selfplay/draw_rate": self.draws / games,
            "selfplay/policy_target_share": self.policy_targets / max(self.positions, 1),
            "charts/selfplay_positions_per_s": self.moves / max(self.seconds, 1e-9),
            "charts/selfplay_games_per_s": self.games / max(self.seconds, 1e-9),
            "charts/mean_batch_size": self.mean_batch,
            **({"charts/cache_hit_rate": self.cache_hits / self.cache_lookups, "charts/cache_megabytes":
                self.cache_bytes / 2**20} if self.cache_lookups else {}),
        }


def game_samples(game: Game, final: State, planes: torch.Tensor, policy: torch.Tensor, policy_weight: torch.Tensor,
                 legal: torch.Tensor, to_play: torch.Tensor, fields: list[str] | None = None,
                 search_value: torch.Tensor | None = None, search_value_weight: float = 0.0) -> Samples:
    """The samples of one finished game: its n positions' records and targets from its end.

    final: State [1], the finished position; planes uint8 [n, C, H, W], policy float [n, A],
    policy_weight float [n], legal bool [n, A], to_play long [n] (the player to move at each).
    The value, ownership and score come from `final`, each turned to the view of the
    position's player to move; the opponent's reply of position t is position t + 1's target.
    Of the auxiliary targets, only those in `fields` (by default all) are built.
    search_value: float [n], the root value of the search at each position (the mover's view;
    NaN where not recorded, as in games in progress when a run from before it resumed); the
    value target is (1 - search_value_weight) * outcome + search_value_weight * search_value
    where it is recorded, the outcome elsewhere.
    """
    wanted = set(HEAD_FIELDS) if fields is None else set(fields)
    sign = player_sign(to_play)
    result = game.result(final)[0]
    ownership = score = opponent_policy = opponent_weight = None
    if game.has_ownership and "ownership" in wanted:
        ownership = game.ownership(final)[0] * sign.to(torch.int8).view(-1, 1, 1)
    if game.has_score and "score" in wanted:
        score = game.score(final)[0] * sign.float()
    if "opponent_policy" in wanted:
        opponent_policy, opponent_weight = torch.zeros_like(policy), torch.zeros_like(policy_weight)
        opponent_policy[:-1], opponent_weight[:-1] = policy[1:], policy_weight[1:]  # none after the last move
    value = result * sign.float()
    if search_value_weight > 0 and search_value is not None:
        mixed = (1.0 - search_value_weight) * value + search_value_weight * search_value.to(value.dtype)
        value = torch.where(torch.isfinite(search_value), mixed, value)
    return Samples(planes, policy, legal, value, policy_weight=policy_weight, ownership=ownership,
                   score=score, opponent_policy=opponent_policy, opponent_weight=opponent_weight)


def tree_nodes(search: SearchSettings) -> int:
    """Nodes of each self-play game's tree: one search, or two when the tree is kept for the next move."""
    keep = search.reuse_tree and search.algorithm != "gumbel"
    return 2 * search.simulations + 1 if keep else search.simulations + 1


class SelfPlay:
    """B self-play games kept going across iterations."""

    def __init__(self, game: Game, net: PolicyValueNet, search: SearchSettings, selfplay: SelfPlayConfig, *,
                 device="cpu", seed: int = 0):
        self.game, self.search_cfg = game, search
        self.fields = stored_fields(net.config)  # the auxiliary targets its network has heads for
        self.batch = selfplay.games
        self.full_search_fraction = selfplay.full_search_fraction
        self.search_value_weight = selfplay.search_value_weight
        self.opening_plies = selfplay.opening_plies
        if self.full_search_fraction < 1 and not 1 <= search.cheap_simulations < search.simulations:
            raise ValueError("search.cheap_simulations must be at least 1 and fewer than search.simulations")
        self.searcher = NetworkSearch(game, net, search, device=device)
        self.gumbel = search.algorithm == "gumbel"
        self.reuse_tree = search.reuse_tree and not self.gumbel
        self.alpha = search.dirichlet_alpha or default_alpha(game)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.capacity = tree_nodes(search)
        max_len = game.num_actions * 4 + 16
        self.max_len = max_len
        h, w = game.board_shape
        b = self.batch
        self.game_ids = torch.arange(b, dtype=torch.long)  # which game each slot plays (keys derive from it)
        self.states = self._starts(self.game_ids)
        self.next_game_id = b
        self.length = torch.zeros(b, dtype=torch.long)
        self.planes = torch.zeros(b, max_len, game.num_planes, h, w, dtype=torch.uint8)
        self.policy = torch.zeros(b, max_len, game.num_actions)
        self.policy_weight = torch.zeros(b, max_len)
        self.legal = torch.zeros(b, max_len, game.num_actions, dtype=torch.bool)
        self.to_play = torch.zeros(b, max_len, dtype=torch.long)
        self.search_value = torch.full((b, max_len), float("nan"))  # the root value of each move's search
        self.tree = None
        self.root_legal = None  # the roots' legal moves when there is no one tree (Gumbel with cheap searches)

    # -- one move of every game ---------------------------------------------------------------
    def _game_keys(self, ids: torch.Tensor) -> torch.Tensor:
        """Each game's own key (long [n]) from its id: its random draws derive from it."""
        return make_keys(self.seed, 1).expand(ids.numel()) + ids * 0x9E37

    def _keys(self) -> torch.Tensor:
        return fold(self._game_keys(self.game_ids), self.states.move_number)

    def _starts(self, ids: torch.Tensor) -> State:
        """The first positions of games `ids` (long [n]): the initial position after each game's
        random opening (`selfplay.opening_plies`), which its key decides."""
        states = self.game.initial_state(ids.numel())
        if self.opening_plies == 0:
            return states
        keys = fold(self._game_keys(ids), 0x0FE4)
        plies = (uniform(keys, (ids.numel(), 1)).squeeze(1) * (self.opening_plies + 1)).long()
        for ply in range(self.opening_plies):
            rows = (plies > ply).nonzero().squeeze(1)
            if rows.numel() == 0:
                break
            action = opening_move(self.game, states.take(rows), fold(keys.index_select(0, rows), 1000 + ply))
            stuck = action == NO_ACTION  # every legal move would end the game: its opening stops here
            plies[rows[stuck]] = ply
            rows, action = rows[~stuck], action[~stuck]
            if rows.numel():
                states.put_(rows, self.game.step(states.take(rows), action))
        return states

    def _full_searches(self, keys: torch.Tensor) -> torch.Tensor:
        """bool [B]: the games whose move gets a full search (all of them without playout cap randomization)."""
        if self.full_search_fraction >= 1:
            return torch.ones(self.batch, dtype=torch.bool)
        return uniform(fold(keys, 0xCA9), (self.batch, 1)).squeeze(1) < self.full_search_fraction

    def _search(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Search all positions; returns the policy target float [B, A] (PUCT: the visits with
        forced playouts taken out of full searches), the move to play long [B], which
        searches were full, bool [B], and the searches' root values float [B] (the mover's view)."""
        config = self.search_cfg
        keys = self._keys()
        if self.gumbel:
            return self._gumbel_search(keys)
        if self.tree is None:
            self.tree = self.searcher.fresh_tree(self.states, keys, self.capacity)
        else:
            self.tree.keys = keys
        tree, full = self.tree, self._full_searches(keys)
        legal = tree.legal[:, 0]
        if bool(full.all()):
            tree.prior[:, 0] = add_dirichlet_noise(tree.prior[:, 0], legal, self.alpha, config.noise_fraction, self.rng)
            self.searcher.search(tree, config.simulations)
        else:  # playout cap randomization: cheap searches everywhere, the rest of the full ones after
            rows = full.nonzero().squeeze(1)
            if rows.numel():
                tree.prior[rows, 0] = add_dirichlet_noise(tree.prior[rows, 0], legal[rows], self.alpha,
                                                          config.noise_fraction, self.rng)
            self.searcher.search(tree, config.cheap_simulations, explore=False)
            if rows.numel():
                part = take_rows(tree, rows)
                self.searcher.search(part, config.simulations - config.cheap_simulations)
                replace_rows(tree, rows, part)
        visits = tree.root_visits()
        if config.forced_playouts > 0:
            pruned = prune_forced_visits(visits, tree.child_value_sum[:, 0], tree.prior[:, 0], tree.visits[:, 0],
                                         k=config.forced_playouts, c_init=config.c_init, c_base=config.c_base)
            visits = torch.where(full.unsqueeze(1), pruned, visits)
        # the root's proofs (the solver's, search/proofs.py): the fastest win played and all the
        # target on the fastest wins; no lost move while one is not lost, and none of the target on them
        policy = proven_target(tree, visits / visits.sum(dim=1, keepdim=True).clamp(min=1))
        return policy, respect_proofs(tree, self._choose(visits)), full, tree.root_value().cpu()

    def _gumbel_search(self, keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """`_search` by Gumbel AlphaZero: fresh trees, the improved policy as the target; under
        playout cap randomization the cheap moves get Gumbel's search with fewer simulations
        (its Gumbel sample is also how it chooses the move, so they keep it)."""
        config, full = self.search_cfg, self._full_searches(keys)
        if bool(full.all()):
            result = self.searcher.gumbel_search(self.states, keys, config.simulations, noise=True)
            self.tree = result.tree
            return result.policy, result.action, full, result.tree.root_value().cpu()
        policy = torch.zeros(self.batch, self.game.num_actions)
        value = torch.zeros(self.batch)
        action = torch.zeros(self.batch, dtype=torch.long)
        legal = torch.zeros(self.batch, self.game.num_actions, dtype=torch.bool)
        for rows, simulations in ((full.nonzero().squeeze(1), config.simulations),
                                  ((~full).nonzero().squeeze(1), config.cheap_simulations)):
            if rows.numel():
                result = self.searcher.gumbel_search(self.states.take(rows), keys.index_select(0, rows), simulations,
                                                     noise=True)
                policy[rows], action[rows] = result.policy.to(policy.device), result.action.to(action.device)
                legal[rows] = result.tree.legal[:, 0].to(legal.device)
                value[rows] = result.tree.root_value().cpu()
        self.tree = None
        self.root_legal = legal
        return policy, action, full, value

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
        policy, action, full, value = self._search()
        rows = torch.arange(b)
        slot = self.length.clamp(max=self.max_len - 1)
        self.planes[rows, slot] = game.encode(self.states).to(torch.uint8)
        self.policy[rows, slot] = policy
        self.policy_weight[rows, slot] = full.float()
        self.legal[rows, slot] = self.root_legal if self.tree is None else self.tree.legal[:, 0]
        self.to_play[rows, slot] = self.states.to_play
        self.search_value[rows, slot] = value
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
        game = self.game
        final = self.states.take(finished)
        result = game.result(final)
        parts, outcomes = [], []
        for i, slot in enumerate(finished.tolist()):
            n = int(self.length[slot])
            parts.append(game_samples(game, final[i], self.planes[slot, :n].clone(), self.policy[slot, :n].clone(),
                                      self.policy_weight[slot, :n].clone(), self.legal[slot, :n].clone(),
                                      self.to_play[slot, :n], self.fields, self.search_value[slot, :n],
                                      self.search_value_weight))
            outcomes.append((int(result[i]), n))
        count = finished.numel()
        self.game_ids[finished] = torch.arange(self.next_game_id, self.next_game_id + count)
        self.next_game_id += count
        self.states.put_(finished, self._starts(self.game_ids[finished]))
        self.length[finished] = 0
        return Samples.cat(parts), outcomes

    # -- an iteration ---------------------------------------------------------------------------
    def run(self, positions: int, *, progress: bool = True) -> tuple[Samples, SelfPlayStats]:
        """Play until at least `positions` positions of finished games are collected."""
        stats, parts = SelfPlayStats(), []
        start = time.perf_counter()
        evaluator = self.searcher.evaluator
        calls_before, evaluated_before = evaluator.calls, evaluator.positions
        lookups_before, hits_before = getattr(evaluator, "lookups", 0), getattr(evaluator, "hits", 0)
        with tqdm(total=positions, desc="self-play", unit="pos", disable=not progress, leave=False) as bar:
            while stats.positions < positions:
                samples, outcomes = self.step()
                stats.moves += self.batch
                if samples is None:
                    continue
                parts.append(samples)
                stats.positions += len(samples)
                stats.policy_targets += int(samples.policy_weight.sum())
                for result, length in outcomes:
                    stats.games += 1
                    stats.first_player_wins += result > 0
                    stats.draws += result == 0
                    stats.total_length += length
                bar.update(len(samples))
        stats.seconds = time.perf_counter() - start
        calls = evaluator.calls - calls_before
        stats.mean_batch = (evaluator.positions - evaluated_before) / max(calls, 1)
        stats.cache_lookups = getattr(evaluator, "lookups", 0) - lookups_before
        stats.cache_hits = getattr(evaluator, "hits", 0) - hits_before
        stats.cache_bytes = getattr(evaluator, "bytes", 0)
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
            "policy_weight": self.policy_weight.clone(),
            "legal": self.legal.clone(),
            "to_play": self.to_play.clone(),
            "search_value": self.search_value.clone(),
            "rng": _rng_state(self.rng),
        }

    def load_state_dict(self, data: dict) -> None:
        self.states = type(self.states)(**data["states"])
        self.game_ids = data["game_ids"]
        self.next_game_id = int(data["next_game_id"])
        for key in ("length", "planes", "policy", "legal", "to_play"):
            setattr(self, key, data[key])
        # (runs saved before playout cap randomization: every search was a full one)
        self.policy_weight = data.get("policy_weight", torch.ones(self.policy.shape[:2]))
        # (runs saved before the search's value was recorded: NaN, their games in progress train on the outcome)
        self.search_value = data.get("search_value", torch.full(self.policy.shape[:2], float("nan")))
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
