"""One game at a time for people and protocols: moves as text, undo, the engine's move and its analysis.

The terminal UI, the browser GUI, the Piskvork brain and the JSON analysis mode
all drive a `GameSession`; an `Engine` is any player spec or checkpoint with a
search budget (simulations or seconds).
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

import games
from games import Game, GameError, State
from games.keyed_random import fold, make_keys

from . import zoo
from .errors import UserError, is_int, is_number
from .players import make
from .players.base import MAX_SECONDS, MAX_SIMULATIONS, SIMULATIONS_ALLOWED, Analysis, Player
from .search.memory import TreeTooLarge
from .search.proofs import UNKNOWN, WON, proof_words


def check_budget(simulations=None, seconds=None) -> None:
    """UserError unless a search budget is in range: simulations a whole number in 1..MAX_SIMULATIONS,
    seconds a number above 0 and at most MAX_SECONDS (None: not given)."""
    if simulations is not None and not (is_int(simulations) and 1 <= simulations <= MAX_SIMULATIONS):
        raise UserError(f"simulations={simulations!r} is out of range; allowed: a whole number {SIMULATIONS_ALLOWED}")
    if seconds is not None and not (is_number(seconds) and 0 < seconds <= MAX_SECONDS):
        raise UserError(f"seconds={seconds!r} is out of range; allowed: above 0 and at most {MAX_SECONDS:g}")


def settle_memory() -> None:
    """For a process that plays under a clock (the Piskvork brain, the GTP engine), once its engine
    is made: collect what is garbage now and freeze the rest. Python's full collection walks every
    object it tracks, with torch loaded about 200,000 (0.15 s here with a training run beside it);
    one falling inside a timed move is the likely cause of a first move of 0.28 s at a 0.2 s
    Piskvork turn, seen once in CI. Frozen objects are left out of later collections; the next
    call (a new game's engine) collects what the last engine let go of."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def engine_maker(spec: str | Callable[[Game], str] | None, **options) -> Callable[[Game], Engine]:
    """What a protocol engine makes its Engines with, one for each game it is asked to play (a
    Piskvork START, a GTP board size or komi): Engine(game, spec, **options), settled (above);
    `spec` may be a function of the game (the zoo's network of each board)."""

    def make(game: Game) -> Engine:
        engine = Engine(game, spec(game) if callable(spec) else spec, **options)
        settle_memory()
        return engine

    return make


class Engine:
    """A player with a budget: `think(state)` -> Analysis (or a bare move for players without search)."""

    def __init__(self, game: Game, spec: str | None = None, *, checkpoint: str | None = None,
                 simulations: int | None = None, seconds: float | None = None, device="cpu", seed: int = 0):
        if (spec is None) == (checkpoint is None):
            raise UserError("give an engine as a player spec or a checkpoint, not both")
        check_budget(simulations, seconds)
        if spec is None:
            # (the colon ends the path, which may hold '=' or ':' of its own)
            spec = f"az:{checkpoint}:" + (f"simulations={simulations}" if simulations else "")
        self.game = game
        self.player: Player = make(spec, game, device=device, seed=seed)
        self.simulations, self.seconds = simulations, seconds
        self.seed = seed
        self.calls = 0
        self.player.prepare(game.initial_state(1))  # compiling, network modules: now, not in the first move

    @property
    def name(self) -> str:
        return self.player.spec

    def budget(self) -> dict:
        out = {}
        if self.simulations is not None:
            out["simulations"] = self.simulations
        if self.seconds is not None:
            out["seconds"] = self.seconds
        return out

    def think(self, state: State, *, clock: float | None = None, on_progress=None, should_stop=None,
              **budget) -> Analysis:
        """Analysis of a one-game state (`action` is the move the engine would play).

        budget: simulations=N and/or seconds=S for this search, over the engine's own.
        clock:  seconds a game's clock allows this move (a Piskvork turn, GTP time settings): an
                upper bound on the budget, which is the engine's own (--sims, --seconds), else the
                one the player's spec states (uct:2000's 2000); a spec that states none searches
                until the clock. A stated budget larger than the tree memory limit holds (a
                Piskvork INFO max_memory, AZERO_TREE_MEMORY) is not refused here: the clock and
                the limit end that search."""
        check_budget(**budget)
        keys = fold(make_keys(self.seed, 1), self.calls)
        self.calls += 1
        options = {**self.budget(), **budget}
        from_spec = set()
        if clock is not None:
            check_budget(seconds=clock)
            stated = {"simulations": self.player.stated_simulations, "seconds": self.player.stated_seconds}
            for key, value in stated.items():
                if key not in options and value is not None:
                    options[key] = value
                    from_spec.add(key)
            options["seconds"] = min(options.get("seconds", clock), clock)
        if on_progress is not None:
            options["on_progress"] = on_progress
        if should_stop is not None:
            options["should_stop"] = should_stop
        try:
            analysis = self.player.analyse(state, keys, **options)
        except TreeTooLarge:  # (refused before anything is allocated)
            if "simulations" not in from_spec:
                raise
            del options["simulations"]
            analysis = self.player.analyse(state, keys, **options)
        if analysis is None:  # random, perfect: a move without an analysis
            action = self.player.act(state, keys)
            zeros = torch.zeros(1, self.game.num_actions)
            analysis = Analysis(action=action, visits=zeros, q=zeros.clone(), value=torch.zeros(1), pv=[[int(action)]])
        return analysis


@dataclass
class GameSession:
    """The moves of one game so far, with undo."""

    game: Game
    actions: list[int] = field(default_factory=list)
    # per action: a pass put in before one side's second move in a row (play_inserted_pass)
    inserted: list[bool] = field(default_factory=list)

    def __post_init__(self):
        self._states = [self.game.initial_state(1)]

    @classmethod
    def of(cls, game: Game, actions: list[int], inserted: list[bool] | None = None) -> "GameSession":
        """A session with `actions` played (those `inserted` marks as passes put in: play_inserted_pass)."""
        session = cls(game)
        for index, action in enumerate(actions):
            if inserted is not None and inserted[index]:
                session.play_inserted_pass()
            else:
                session.play(action)
        return session

    @property
    def state(self) -> State:
        return self._states[-1]

    @property
    def previous_state(self) -> State | None:
        """The position before the last move (None before the first)."""
        return self._states[-2] if self.actions else None

    def state_at(self, ply: int) -> State:
        """The position after the first `ply` moves (0: the start)."""
        return self._states[ply]

    @property
    def over(self) -> bool:
        return bool(self.state.done[0])

    @property
    def to_play(self) -> int:
        return int(self.state.to_play[0])

    def legal(self) -> list[int]:
        return self.game.legal_actions(self.state)

    def parse(self, text: str) -> int:
        """A move from text; GameError explains what is wrong (unreadable, illegal, game over)."""
        if self.over:
            raise GameError(f"the game is over ({self.result_text()}); no move follows its end")
        action = self.game.parse_action(text)
        if action not in self.legal():
            raise GameError(f"{text.strip()} is not a legal move here: {self.game.illegal_reason(self.state, action)}")
        return action

    def play(self, action: int) -> None:
        self._states.append(self.game.step(self.state, torch.tensor([int(action)])))
        self.actions.append(int(action))
        self.inserted.append(False)

    def play_inserted_pass(self) -> None:
        """The pass put in before one side's second move in a row (Game.inserted_pass): it
        ends no game, nor counts toward two passes in a row."""
        self._states.append(self.game.inserted_pass(self.state))
        self.actions.append(int(self.game.pass_action))
        self.inserted.append(True)

    def undo(self, count: int = 1) -> int:
        """Take back up to `count` moves; returns how many were taken back."""
        taken = 0
        while taken < count and self.actions:
            self.actions.pop()
            self.inserted.pop()
            self._states.pop()
            taken += 1
        return taken

    def new(self) -> None:
        self.actions.clear()
        self.inserted.clear()
        self._states = [self.game.initial_state(1)]

    def result_text(self) -> str:
        result = int(self.game.result(self.state)[0])
        return {1: "first player wins", -1: "second player wins", 0: "draw"}[result]

    def set_moves(self, moves: list[str]) -> None:
        """Replace the game with these moves (text); GameError names the first bad one."""
        self.new()
        for i, text in enumerate(moves):
            try:
                self.play(self.parse(text))
            except GameError as error:
                self.new()
                raise GameError(f"move {i + 1} ({text}): {error}") from None


def describe_analysis(game: Game, analysis: Analysis, *, top: int = 5) -> dict:
    """Plain values for people and protocols: best move, win-rate for the side to move, top moves, PV;
    "proof": the best move's proven result in words ("wins in 3": search/proofs.py), where proven,
    and each move's too. Proven wins head the list, fastest first, visited or not (the threat
    search proves moves the search never tried); then moves by visits. A proven move's win-rate is
    exact (1, 0.5 or 0)."""
    visits = analysis.visits[0]
    best = int(analysis.action[0])
    if not 0 <= best < game.num_actions:  # RESIGN or NO_ACTION: callers answer those themselves
        raise ValueError(f"describe_analysis: {best} is no move of {game.spec}")
    q = analysis.q[0].clone()
    proven = wins = torch.zeros_like(visits, dtype=torch.bool)
    plies = torch.zeros_like(visits, dtype=torch.float64)
    if analysis.proof is not None:
        proof = analysis.proof[0]
        exact = torch.tensor([0.0, -1.0, 0.0, 1.0], dtype=q.dtype)  # UNKNOWN, LOST, DRAWN, WON
        proven, wins = proof != UNKNOWN, proof == WON
        q = torch.where(proven, exact[proof.long()], q)
        plies = analysis.proof_plies[0].to(torch.float64)
    # the side to move's win-rate: the value of the move chosen (the mean over all moves
    # would count the search's exploration of bad moves against the position)
    value = float(q[best]) if visits[best] > 0 or bool(proven[best]) else float(analysis.value[0])
    # proven wins first, fastest first; then by visits
    key = torch.where(wins, 1e12 - plies, visits.to(torch.float64))
    order = [int(a) for a in torch.argsort(key, descending=True) if visits[a] > 0 or wins[a]][:top]
    moves = [
        {"move": game.format_action(a), "visits": int(visits[a]), "winrate": round(float(q[a] + 1) / 2, 4),
         **_proof_of(analysis, a)}
        for a in order
    ]
    return {
        **_proof_of(analysis, best),
        "best_move": game.format_action(best),
        "winrate": round((value + 1) / 2, 4),
        "visits": int(visits.sum()),
        "moves": moves,
        "pv": [game.format_action(a) for a in analysis.pv[0]],
    }


def _proof_of(analysis: Analysis, action: int) -> dict:
    """{"proof": "wins in 3"} for a move the search proved (proofs.proof_words), else {}."""
    if analysis.proof is None:
        return {}
    words = proof_words(int(analysis.proof[0, action]), int(analysis.proof_plies[0, action]))
    return {} if words is None else {"proof": words}


def game_from_args(game_spec: str | None, checkpoint: str | None) -> Game:
    """The game of a checkpoint, or from a spec; both given must agree (or, for a network with
    pooled heads, the spec may be its game on a board of another size: that board's game)."""
    from .checkpoint import load_checkpoint, pooled_heads
    from .network import plays

    if checkpoint:
        data = load_checkpoint(checkpoint)
        game = games.make_from_spec(data["game"])
        if game_spec:
            wanted = games.make_from_spec(game_spec)
            if not plays(game, wanted, any_size=pooled_heads(data)):
                raise UserError(f"{checkpoint} is a checkpoint of {game.spec}, not of {game_spec}")
            return wanted
        return game
    if not game_spec:
        raise UserError("give --checkpoint PATH, or --game SPEC with --opponent SPEC")
    if game_spec in zoo.names():  # a zoo network's name (gomoku15, go9): its game
        return zoo.get(game_spec).game
    return games.make_from_spec(_preset_game(game_spec))


def _preset_game(game_spec: str) -> str:
    """The game spec of a preset's name that names no game (gomoku15 -> gomoku:size=15,k=5), as
    train.py --game reads it; any other text unchanged."""
    from .config import load_config, preset_path

    name = game_spec.strip()
    if ":" in name or name in games.names() or not preset_path(name).is_file():
        return game_spec
    return load_config(game=name).game.spec


def zoo_player(game: Game, instead: str = "--checkpoint PATH or --opponent SPEC") -> str:
    """The spec of the zoo network that plays `game` (a command given no checkpoint or player);
    UserError naming the zoo's networks if none does, and what to give `instead`."""
    entry = zoo.for_game(game)
    if entry is None:
        listed = "; ".join(f"{e.name} ({e.card['game']})" for e in zoo.entries()) or "none"
        raise UserError(f"no zoo network plays {game.spec}: give {instead} (zoo networks: {listed})")
    return f"zoo:{entry.name}"


def zoo_engine_maker(instead: str, **options) -> Callable[[Game], Engine]:
    """engine_maker for a protocol engine given no checkpoint or player: each game it is asked to
    play (a Piskvork START, a GTP boardsize) gets the zoo's network of that game, or a UserError."""
    return engine_maker(lambda game: zoo_player(game, instead), **options)
