"""The player interface: turn a batch of positions into a batch of moves.

    actions = player.act(states)        # long [B]
    analysis = player.analyse(states)   # Analysis, or None for players without a search
    player.reset()                      # a new game starts
    player.prepare(state)               # slow one-time work (compiling, network modules) before a clock runs

Players are built from specs by `azero.players.make` (the registry); this module
holds only what every player and every caller of one shares.

A player may answer `RESIGN` for a game it gives up (only external GTP engines
do); the arena ends that game as a loss for it. A player with `games_at_once = N`
(external engines: a GTP engine 1, Piskvork brains a process per game) is given at most N
games at a time.

Randomness: `act(states, keys)` takes per-game keys (games/keyed_random.py), so a game's
moves do not depend on which other games share the batch; without keys a player
draws them from its own seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from games import Game, State
from games.keyed_random import fold, make_keys

from ..search import Tree
from ..search.memory import MAX_SIMULATIONS
from ..search.proofs import root_proofs

RESIGN = -2  # a player's answer for a game it gives up (NO_ACTION is -1)
# The most one move may ask of a player: simulations (or rollouts, MAX_SIMULATIONS) and seconds of search.
MAX_SECONDS = 3600.0
SIMULATIONS_ALLOWED = f"1..{MAX_SIMULATIONS:,}"


@dataclass
class Analysis:
    """What a search player thought about each position of a batch.

    action:  long  [B]     the move it plays
    visits:  float [B, A]  search visits per move
    q:       float [B, A]  mean value per move for the player to move, in [-1, 1]
    value:   float [B]     value of the position for the player to move, in [-1, 1]
    pv:      list of B lists of actions (principal variations)
    prior:   float [B, A] or None
    proof:   int8  [B, A] or None  each move's proven result for the player to move (search/proofs.py:
                                   0 unknown, LOST 1, DRAWN 2, WON 3)
    proof_plies: long [B, A] or None  the plies to the end of the game after a proven move, itself included
    """

    action: torch.Tensor
    visits: torch.Tensor
    q: torch.Tensor
    value: torch.Tensor
    pv: list[list[int]]
    prior: torch.Tensor | None = None
    proof: torch.Tensor | None = None
    proof_plies: torch.Tensor | None = None

    @staticmethod
    def from_tree(tree: Tree, action: torch.Tensor, prior: torch.Tensor | None = None) -> "Analysis":
        proof, plies = root_proofs(tree)
        return Analysis(
            action=action,
            visits=tree.root_visits().clone(),
            q=tree.root_q().clone(),
            value=tree.root_value().clone(),
            pv=[tree.principal_variation(i) for i in range(tree.batch_size)],
            prior=prior,
            proof=proof.clone(),
            proof_plies=plies,
        )


class Player:
    """Base class: `act` picks moves; `reset` is called when new games start."""

    spec: str = "player"
    games_at_once: int | None = None  # the most games the arena gives it in one batch (None: any)
    # The budget a move that the player's spec states (uct:2000 states 2000 simulations; az states
    # them with sims=; seconds= states seconds): a game's clock (session.Engine.think's `clock`)
    # only bounds it. None: the spec states none, and the clock is the budget.
    stated_simulations: int | None = None
    stated_seconds: float | None = None

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

    def prepare(self, state: State) -> None:
        """Do the slow one-time work now, before a clock runs: compile the search's loops, build
        the network's inference modules, calibrate int8. `state`: a position of the game (batch 1).
        Protocol engines call it at start-up (session.Engine), so no move pays for it."""

    def close(self) -> None:
        """Release what the player holds (external engines stop their process)."""

    def __repr__(self) -> str:
        return f"<player {self.spec}>"
