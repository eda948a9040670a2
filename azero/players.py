"""Players: turn a batch of positions into a batch of moves.

Every command line accepts players as short specs:

    random                      uniformly random legal moves
    uct:1000                    random-rollout UCT, 1,000 iterations a move
    uct:1000:c=1.0,final=secure   options: c (UCB1 constant), final (robust, max, max-robust, secure), seed
    flatmc:1000                 flat Monte Carlo: 1,000 random rollouts spread over the legal moves
    perfect                     exact play by exhaustive search (tic-tac-toe, Nim and other tiny games)
    az:PATH[:sims=200]          a trained network with PUCT search (see azero.agent)
    gtp:COMMAND                 an external engine speaking GTP (Go, Othello), run as a process:
                                everything after "gtp:" is its command line, split like a shell
                                would (quotes group words; no shell runs; the program is looked
                                up on PATH, then in /usr/games), e.g.
                                  gtp:gnugo --mode gtp --level 1 --chinese-rules
                                  gtp:"/usr/games/gtp-rhino --level 1"
                                (see azero.protocols.gtp; one game at a time)

    player = make("uct:1000", game)
    actions = player.act(states)        # long [B]
    player.reset()                      # a new game starts

A player may answer `RESIGN` for a game it gives up (only external GTP engines
do); the arena ends that game as a loss for it. Players with
`one_game_at_a_time = True` (external engines) are given batches of one game.

Randomness: `act(states, keys)` takes per-game keys (games/random.py), so a game's
moves do not depend on which other games share the batch; without keys a player
draws them from its own seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from games import Game, State, sample_uniform_legal
from games.random import fold, make_keys

from .errors import UserError
from .search import CRITERIA, UCB1, RolloutEvaluator, Tree, choose, search, search_with_budget, simulate
from .search.final import max_robust_exists
from .search.tree import tree_bytes

_SPARE_TREE_BYTES = 512 << 20  # players keep their last search tree for reuse up to this size

RESIGN = -2  # a player's answer for a game it gives up (NO_ACTION is -1)


@dataclass
class Analysis:
    """What a search player thought about each position of a batch.

    action:  long  [B]     the move it plays
    visits:  float [B, A]  search visits per move
    q:       float [B, A]  mean value per move for the player to move, in [-1, 1]
    value:   float [B]     value of the position for the player to move, in [-1, 1]
    pv:      list of B lists of actions (principal variations)
    prior:   float [B, A] or None
    """

    action: torch.Tensor
    visits: torch.Tensor
    q: torch.Tensor
    value: torch.Tensor
    pv: list[list[int]]
    prior: torch.Tensor | None = None

    @staticmethod
    def from_tree(tree: Tree, action: torch.Tensor, prior: torch.Tensor | None = None) -> "Analysis":
        return Analysis(
            action=action,
            visits=tree.root_visits().clone(),
            q=tree.root_q().clone(),
            value=tree.root_value().clone(),
            pv=[tree.principal_variation(i) for i in range(tree.batch_size)],
            prior=prior,
        )


class Player:
    """Base class: `act` picks moves; `reset` is called when new games start."""

    spec: str = "player"
    one_game_at_a_time: bool = False  # external engines: the arena plays their games one by one

    def __init__(self, game: Game, seed: int = 0):
        self.game = game
        self.seed = seed
        self._calls = 0

    def _keys(self, states: State, keys: torch.Tensor | None) -> torch.Tensor:
        if keys is None:
            keys = fold(make_keys(self.seed, states.batch_size, states.device), self._calls)
            self._calls += 1
        return keys

    def act(self, states: State, keys: torch.Tensor | None = None) -> torch.Tensor:
        raise NotImplementedError

    def analyse(self, states: State, keys: torch.Tensor | None = None, **budget) -> Analysis | None:
        """A search player's analysis of the positions; None for players without one.

        Search players accept budget overrides: simulations=N or seconds=S, and
        on_progress(analysis) / should_stop() for live analysis in interfaces.
        """
        return None

    def reset(self) -> None:
        """A new game starts (players that keep trees between moves drop them)."""

    def close(self) -> None:
        """Release what the player holds (external engines stop their process)."""

    def __repr__(self) -> str:
        return f"<player {self.spec}>"


class RandomPlayer(Player):
    spec = "random"

    def act(self, states, keys=None):
        return sample_uniform_legal(self.game.legal_mask(states), self._keys(states, keys))


class UCTPlayer(Player):
    """Plain random-rollout UCT: UCB1 selection, one random untried move expanded per
    iteration, a uniformly random rollout, the result backed up (1 / 0.5 / 0)."""

    def __init__(self, game, iterations=1000, c=math.sqrt(2.0), final="robust", seed=0, max_robust_extra=0.5):
        super().__init__(game, seed)
        if final not in CRITERIA:
            raise UserError(f"uct: final={final!r} is not a final-move criterion; choose one of: {', '.join(CRITERIA)}")
        self.iterations, self.c, self.final = iterations, c, final
        self.max_robust_extra = max_robust_extra
        self.rule = UCB1(c)
        self.evaluator = RolloutEvaluator(game)
        options = ([f"c={c:g}"] if c != math.sqrt(2.0) else []) + ([f"final={final}"] if final != "robust" else [])
        self.spec = f"uct:{iterations}" + (":" + ",".join(options) if options else "")
        self._spare: Tree | None = None  # the last search's tree, whose memory the next one reuses

    def analyse(self, states, keys=None, *, simulations=None, seconds=None, on_progress=None, should_stop=None):
        keys = self._keys(states, keys)
        if simulations is not None or seconds is not None or on_progress is not None or should_stop is not None:
            tree = search_with_budget(
                self.game, states, self.evaluator, self.rule, keys,
                simulations=simulations if simulations is not None or seconds is not None else self.iterations,
                seconds=seconds, on_progress=_live(on_progress, self), should_stop=should_stop,
            )
            final = "robust" if self.final == "max-robust" else self.final
            return Analysis.from_tree(tree, self._choose(final, tree))
        extra = int(self.iterations * self.max_robust_extra) if self.final == "max-robust" else 0
        tree = search(self.game, states, self.evaluator, self.rule, self.iterations, keys, extra_capacity=extra,
                      reuse=self._spare)
        # Keep it for the next move unless it is big: then two players' trees would both stay in memory.
        self._spare = tree if tree_bytes(tree) <= _SPARE_TREE_BYTES else None
        if self.final == "max-robust":
            action = self._search_until_max_robust(tree, extra)
        else:
            action = self._choose(self.final, tree)
        return Analysis.from_tree(tree, action)

    def _choose(self, criterion: str, tree: Tree) -> torch.Tensor:
        """The root move by `criterion`; ties in visits go to the child expanded first (classic UCT)."""
        return choose(criterion, tree.root_visits(), tree.child_value_sum[:, 0], c=self.c, created=tree.children[:, 0])

    def _search_until_max_robust(self, tree: Tree, extra: int) -> torch.Tensor:
        """Search on in chunks while some tree has no child with both most visits and best mean.

        A tree's move is fixed at the first chunk boundary where it has one, so it does
        not depend on the other trees; after `extra` more iterations, robust child.
        """
        chunk = max(1, self.iterations // 10)
        decided = torch.full((tree.batch_size,), -1, dtype=torch.long, device=tree.visits.device)
        spent = 0
        while True:
            ok = max_robust_exists(tree.root_visits(), tree.child_value_sum[:, 0]) & (decided < 0)
            decided[ok] = choose("max-robust", tree.root_visits()[ok], tree.child_value_sum[ok, 0])
            if bool((decided >= 0).all()) or spent + chunk > extra:
                break
            simulate(tree, self.game, self.evaluator, self.rule, chunk)
            spent += chunk
        robust = self._choose("robust", tree)
        return torch.where(decided >= 0, decided, robust)

    def act(self, states, keys=None):
        return self.analyse(states, keys).action

    def close(self) -> None:
        self._spare = None


def _live(on_progress, player):
    """Turn an on_progress(analysis) callback into the search's on_progress(tree)."""
    if on_progress is None:
        return None

    def callback(tree):
        on_progress(Analysis.from_tree(tree, tree.root_visits().argmax(dim=1)))

    return callback


class FlatMCPlayer(Player):
    """Flat Monte Carlo: the rollouts are shared evenly among the legal moves; best mean wins."""

    def __init__(self, game, rollouts=1000, seed=0, chunk=65536):
        super().__init__(game, seed)
        self.rollouts, self.chunk = rollouts, chunk
        self.spec = f"flatmc:{rollouts}"

    def analyse(self, states, keys=None, **budget):
        keys = self._keys(states, keys)
        game, batch, actions = self.game, states.batch_size, self.game.num_actions
        mask = game.legal_mask(states)
        n_legal = mask.sum(dim=1)
        # rollouts per legal move: the budget split evenly, the remainder to the first moves
        rank = mask.long().cumsum(dim=1) - 1
        share = (self.rollouts // n_legal).unsqueeze(1) + (rank < (self.rollouts % n_legal).unsqueeze(1)).long()
        counts = torch.where(mask, share, torch.zeros_like(share)).view(-1)
        pair = torch.arange(batch * actions, device=states.device).repeat_interleave(counts)
        totals = torch.zeros(batch * actions, device=states.device)
        for start in range(0, pair.numel(), self.chunk):
            part = pair[start : start + self.chunk]
            row, action = part // actions, part % actions
            children = game.step(states[row], action)
            serial = torch.arange(start, start + part.numel(), device=states.device)
            result = game.random_playout(children, fold(keys[row], serial))
            sign = 1.0 - 2.0 * states.to_play[row].float()
            totals.index_add_(0, part, result * sign)
        visits = counts.view(batch, actions).float()
        q = torch.where(visits > 0, totals.view(batch, actions) / visits.clamp(min=1), torch.zeros_like(visits))
        action = q.masked_fill(~mask, -math.inf).argmax(dim=1)
        value = q.masked_fill(~mask, -math.inf).amax(dim=1)
        return Analysis(action=action, visits=visits, q=q, value=value, pv=[[int(a)] for a in action])

    def act(self, states, keys=None):
        return self.analyse(states, keys).action


class PerfectPlayer(Player):
    """Exact play from an exhaustive solution; among equally good moves, a random one."""

    spec = "perfect"

    def __init__(self, game, seed=0):
        super().__init__(game, seed)
        from .solver import Solver

        self.solver = Solver(game)

    def act(self, states, keys=None):
        return sample_uniform_legal(self.solver.best_actions(states), self._keys(states, keys))


# -- specs -------------------------------------------------------------------------------------


@dataclass
class PlayerSpec:
    """A parsed spec: name, one positional argument, keyword options."""

    name: str
    argument: str | None = None
    options: dict[str, str] = field(default_factory=dict)


def parse_spec(text: str) -> PlayerSpec:
    """'uct:1000:c=1.0,final=secure' -> PlayerSpec('uct', '1000', {'c': '1.0', 'final': 'secure'})."""
    name, _, rest = text.strip().partition(":")
    if not name:
        raise UserError(f"empty player spec {text!r}; {SPEC_HELP}")
    argument, options = rest or None, {}
    if rest:
        head, sep, tail = rest.rpartition(":")
        last = tail if sep else rest
        if "=" in last:
            argument = head if sep else None
            for part in filter(None, (p.strip() for p in last.split(","))):
                key, eq, value = part.partition("=")
                if not eq or not key or not value:
                    raise UserError(f"cannot read player option {part!r} in {text!r}; write key=value")
                options[key.strip()] = value.strip()
    return PlayerSpec(name.strip().lower(), argument or None, options)


SPEC_HELP = (
    "players are random, uct:ITERATIONS[:c=C,final=robust|max|max-robust|secure,seed=S], "
    "flatmc:ROLLOUTS[:seed=S], perfect, az:CHECKPOINT[:sims=N,...], human, "
    'gtp:COMMAND (an external GTP engine for go or othello, e.g. gtp:"gnugo --mode gtp --level 1")'
)


def _number(spec: PlayerSpec, key: str, text: str | None, kind: Callable, low: float) -> float:
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise UserError(f"{spec.name}: {key}={text!r} is not a number") from None
    if value < low:
        raise UserError(f"{spec.name}: {key} must be at least {low}")
    return value


def _take(spec: PlayerSpec, allowed: set[str]) -> dict[str, str]:
    unknown = sorted(set(spec.options) - allowed)
    if unknown:
        raise UserError(
            f"{spec.name}: unknown option {', '.join(unknown)}; valid options: {', '.join(sorted(allowed)) or 'none'}"
        )
    return spec.options


def make(text: str, game: Game, *, device="cpu", seed: int | None = None) -> Player:
    """Build a player from its spec for `game`; UserError explains a bad spec."""
    head, _, command = text.strip().partition(":")
    if head.strip().lower() == "gtp":  # the rest is a command line, not key=value options
        from .protocols.gtp_client import make_gtp_player

        return make_gtp_player(command, game)
    spec = parse_spec(text)
    name = spec.name
    if name == "random":
        _take(spec, {"seed"})
        return RandomPlayer(game, seed=int(spec.options.get("seed", seed or 0)))
    if name in ("uct", "flatmc"):
        if spec.argument is None:
            raise UserError(f"{name} needs a budget, e.g. {name}:1000")
        budget = int(_number(spec, "budget", spec.argument, int, 1))
        if name == "flatmc":
            opts = _take(spec, {"seed"})
            return FlatMCPlayer(game, budget, seed=int(opts.get("seed", seed or 0)))
        opts = _take(spec, {"c", "final", "seed"})
        c = _number(spec, "c", opts.get("c", math.sqrt(2.0)), float, 0.0)
        return UCTPlayer(game, budget, c=c, final=opts.get("final", "robust"), seed=int(opts.get("seed", seed or 0)))
    if name == "perfect":
        _take(spec, {"seed"})
        return PerfectPlayer(game, seed=int(spec.options.get("seed", seed or 0)))
    if name == "az":
        from .agent import make_az_player

        return make_az_player(spec, game, device=device, seed=seed)
    if name == "human":
        raise UserError("the human player is available in scripts/play.py, not in matches between programs")
    raise UserError(f"unknown player {name!r}; {SPEC_HELP}")
