"""The analysis board behind the browser page: one game line, the position shown, an engine, and
the analyses of the positions seen so far.

The line is the game's moves (a loaded SGF record, or the moves played); `ply` says how many of
them the board shows, so stepping back and forth moves `ply` only. A move played at an earlier
position that differs from the line's starts a variation: the line is cut there and the game's
own moves are kept in `main_line` until the page goes back to them.

A background thread does the engine's work, one job at a time, in this order:
  move    the shown position is the line's end and the engine's side is to move: it plays
  look    the shown position at the engine's own budget (the analysis the page shows first)
  graph   every position of the line without a finished analysis, at GRAPH_SIMULATIONS, for the
          win-rate graph
  ponder  the shown position again, searching on until the position changes or the tree would
          outgrow TREE_BYTES: the visits the page shows keep growing while the person thinks
A job stops as soon as the position shown changes. Analyses are kept per position (the moves
that reach it), and a deeper one replaces a shallower one, so the page's visit count only grows.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import games
from games import Game, GameError, State
from games.keyed_random import make_keys

from ..errors import UserError, is_int, is_number
from ..players.base import MAX_SECONDS, RESIGN, Analysis
from ..search import new_tree
from ..search.tree import tree_bytes
from ..session import Engine, GameSession, describe_analysis
from ..sgf import check_supported, game_from_sgf, read_sgf, replay, supports, to_sgf
from .coordinates import cell_names, edge_labels

TREE_BYTES = 256 << 20  # the memory a pondering search tree (or a move's, at the largest budget) may take
GRAPH_SIMULATIONS = 100  # the quick analysis of each position of the game for the win-rate graph
PONDER_SECONDS = MAX_SECONDS  # pondering's time limit; a position change or the tree's size stops it sooner
PROGRESS_SECONDS = 0.2  # live analysis is stored for the page at most this often
MAX_SGF_CHARACTERS = 1_000_000
KEEP_ANALYSES = 5000  # beyond this many positions, analyses off the game's lines are dropped
SETTINGS = ("human", "simulations", "seconds", "ponder")
NEW_GAME = ("game", "human", "simulations")


@dataclass
class Job:
    """One piece of the engine thread's work: `kind` (move, look, graph, ponder) on one position."""

    kind: str
    key: int  # the position's id (Gui._keys): one id per sequence of moves from the start
    state: State
    generation: int  # the Gui's generation when the job was chosen
    epoch: int  # the Gui's epoch (the game and its analyses) when the job was chosen


def tree_node_limit(game: Game) -> int:
    """How many nodes a search tree of `game` may hold within TREE_BYTES, leaving room for the
    tree to double in size as it grows."""
    probe = new_tree(game, game.initial_state(1), 16, make_keys(0, 1))
    return max(1000, TREE_BYTES // 2 // max(1, tree_bytes(probe) // 16))


def parse_human(value) -> int | None:
    """The side the person plays from the page's value: 0 first, 1 second, "both" (None: the
    engine only analyses)."""
    if value == "both":
        return None
    if value in (0, 1) and not isinstance(value, bool):
        return int(value)
    raise GameError('human must be 0 (move first), 1 (move second) or "both" (the engine only analyses)')


class Gui:
    """The shared state of the GUI: the game line, the shown position, one engine, the analyses."""

    def __init__(self, game: Game, engine: Engine, *, human: int | None = 0, checkpoint: str | None = None,
                 device="cpu", opponent_spec: str | None = None):
        if not game.has_board:
            raise UserError(f"the GUI shows board games; {game.name} has no board (play it in the terminal)")
        self.lock = threading.Condition()
        # One request that changes the game at a time (taken before `lock`). A new game's engine
        # is built holding only this (compiling for another board takes seconds), so polls and
        # the search go on meanwhile; what that build reads without `lock` (the game, the human's
        # side, the node limit, the engine's budget and seed) only requests write.
        self.changing = threading.Lock()
        self.game_number = 0  # bumps at every new game or SGF load: a click on the board before is refused
        self.engine, self.human = engine, human
        self.checkpoint, self.device = checkpoint, device
        self.opponent_spec = opponent_spec or (None if checkpoint else engine.player.spec)
        self.ponder = True
        self.generation = 0  # bumps whenever the position shown or the engine's task changes
        self.epoch = 0  # bumps whenever the game (and so the meaning of a position's moves) changes
        self.job: Job | None = None
        self.blocked = -1  # a generation whose job failed: no more work until something changes
        self.searchless: Engine | None = None  # the engine, once it showed it has no search to analyse with
        self.message = ""
        self.stop = False
        self.game: Game | None = None
        self._start_game(game)
        self.worker = threading.Thread(target=self._work, daemon=True)
        self.worker.start()

    def _start_game(self, game: Game, actions: list[int] = (), inserted: list[bool] | None = None) -> None:
        """Show `game` with `actions` played (those `inserted` marks as passes put in before one
        side's second move: GameSession.play_inserted_pass), at their end (call with the lock
        held, or before the worker)."""
        if self.game != game:
            self.game = game
            self.epoch += 1
            self.analyses: dict[int, dict] = {}
            # position ids: (parent's id, move) -> id, 0 the start. A line's ids cost one dict
            # look-up a move, where keys made of the moves themselves cost the line's length
            # each (quadratic on every poll of a long game). Like `finished`, they are kept
            # for every position visited in this game (a few dozen bytes each)
            self.ids: dict[tuple[int, int], int] = {}
            self.finished: dict[str, set] = {"look": set(), "graph": set(), "ponder": set()}
            self.node_limit = tree_node_limit(game)
            self.names = cell_names(game, game.click_actions(game.initial_state(1))[0].tolist())
            self.columns, self.rows = edge_labels(game, self.names)
            self.choice = next((spec for spec in games.presets(board=True) if games.make_from_spec(spec) == game),
                               game.spec)  # the game picker's entry for it
        self.game_number += 1
        self.session = GameSession.of(game, list(actions), inserted)
        self.ply = len(self.session.actions)
        self.main_line: list[int] | None = None
        self.main_inserted: list[bool] = []  # the main line's passes put in
        self.players = ("", "")  # black's and white's names from a loaded SGF record
        self.generation += 1

    # -- the position shown ------------------------------------------------------------------------
    def _keys(self, line: list[int] | None = None) -> list[int]:
        """The id of each position of `line` (default: the line shown), from the start to its end."""
        keys = [0]
        for action in self.session.actions if line is None else line:
            keys.append(self.ids.setdefault((keys[-1], action), len(self.ids) + 1))
        return keys

    @property
    def shown(self) -> State:
        return self.session.state_at(self.ply)

    def _engine_to_move(self) -> bool:
        state = self.shown
        return (self.ply == len(self.session.actions) and not bool(state.done[0]) and self.human is not None
                and int(state.to_play[0]) != self.human)

    # -- the engine thread ---------------------------------------------------------------------------
    def _next_job(self) -> Job | None:
        if self.stop or self.blocked == self.generation:
            return None

        keys = self._keys()

        def job(kind, ply):
            return Job(kind, keys[ply], self.session.state_at(ply), self.generation, self.epoch)

        live = not bool(self.shown.done[0])
        key = keys[self.ply]
        if live and self._engine_to_move():
            return job("move", self.ply)
        if self.searchless is self.engine:
            return None  # a player without a search (random, an external program) only plays
        if live and key not in self.finished["look"] and key not in self.finished["ponder"]:
            return job("look", self.ply)
        for ply, other in enumerate(keys):
            if (not bool(self.session.state_at(ply).done[0])
                    and not any(other in done for done in self.finished.values())
                    and self.analyses.get(other, {}).get("visits", 0) < GRAPH_SIMULATIONS):
                return job("graph", ply)
        if live and self.ponder and key not in self.finished["ponder"]:
            return job("ponder", self.ply)
        return None

    def _choose_job(self) -> Job | None:
        """_next_job, or None with the problem shown (and no work until something changes) if
        choosing fails: a fault of ours must not end the engine's thread."""
        try:
            return self._next_job()
        except Exception as error:
            self.message = f"engine error: {type(error).__name__}: {error}"
            self.blocked = self.generation
            return None

    def _work(self) -> None:
        while True:
            with self.lock:
                job = self._choose_job()
                while job is None and not self.stop:
                    self.lock.wait(timeout=0.5)
                    job = self._choose_job()
                if self.stop:
                    return
                self.job, engine, limit = job, self.engine, self.node_limit
            try:
                analysis = self._think(job, engine, limit)
            except Exception as error:  # keep the GUI alive, show the problem
                with self.lock:
                    self.message = f"engine error: {error}"
                    self.blocked, self.job = job.generation, None
                continue
            with self.lock:
                self.job = None
                if job.epoch != self.epoch:
                    continue
                complete = job.generation == self.generation and not self.stop
                if job.kind != "move" and float(analysis.visits.sum()) == 0:
                    self.searchless = engine
                if complete or job.kind == "ponder":  # a stopped ponder is still the deepest look
                    self._store(job, analysis)
                if complete:
                    self.finished["look" if job.kind == "move" else job.kind].add(job.key)
                if complete and job.kind == "move":
                    self._play_engine_move(int(analysis.action[0]))
                self.lock.notify_all()

    def _think(self, job: Job, engine: Engine, limit: int) -> Analysis:
        last_store = [0.0]
        visits = [0]

        def progress(analysis: Analysis) -> None:
            visits[0] = int(analysis.visits[0].sum())
            now = time.monotonic()
            if job.kind == "graph" or now - last_store[0] < PROGRESS_SECONDS:
                return
            last_store[0] = now
            with self.lock:
                if job.generation == self.generation and job.epoch == self.epoch:
                    self._store(job, analysis)

        def should_stop() -> bool:
            if self.stop or job.generation != self.generation:
                return True
            if visits[0] >= limit:  # the tree's memory: a time budget has no other bound
                return True
            return job.kind == "ponder" and not self.ponder

        budget = {"graph": {"simulations": GRAPH_SIMULATIONS, "seconds": None},
                  "ponder": {"simulations": None, "seconds": PONDER_SECONDS}}.get(job.kind, {})
        return engine.think(job.state, on_progress=progress, should_stop=should_stop, **budget)

    def _store(self, job: Job, analysis: Analysis) -> None:
        """Keep the analysis of the job's position if it is at least as deep as the one kept."""
        visits = analysis.visits[0]
        total = float(visits.sum())
        kept = self.analyses.get(job.key)
        if total == 0 or (kept is not None and kept["visits"] > total):
            return  # a player without a search, or a shallower look than the one kept
        info = describe_analysis(self.game, analysis, top=8)
        # the position's win-rate is the root's value (every simulation's result averaged), as
        # Lizzie and KaTrain show it: the best move's own mean is biased upward after few visits
        info["winrate"] = round((float(analysis.value[0]) + 1) / 2, 4)
        prior = analysis.prior[0] if analysis.prior is not None else None
        info["visit_share"] = [round(float(v) / total, 4) for v in visits]
        info["policy"] = [round(float(p), 4) for p in prior] if prior is not None else None
        info["pv_actions"] = analysis.pv[0]
        info["best_action"] = int(analysis.action[0])
        info["for_player"] = int(job.state.to_play[0])
        self.analyses[job.key] = info
        if len(self.analyses) > KEEP_ANALYSES:
            self._forget_analyses()

    def _forget_analyses(self) -> None:
        lines = [self.session.actions] + ([self.main_line] if self.main_line else [])
        wanted = {key for line in lines for key in self._keys(line)}
        self.analyses = {key: info for key, info in self.analyses.items() if key in wanted}

    def _play_engine_move(self, action: int) -> None:
        if action == RESIGN:
            self.message = f"{self.engine.name} resigns"
            self.blocked = self.generation
            return
        self.session.play(action)
        self.ply += 1
        self.generation += 1
        self.message = f"{self.engine.name} played {self.game.format_action(action)}"

    # -- what the page sees ----------------------------------------------------------------------------
    def snapshot(self) -> dict:
        with self.lock:
            game, session, ply = self.game, self.session, self.ply
            state, line, keys = self.shown, session.actions, self._keys()
            over = bool(state.done[0])
            previous = session.state_at(ply - 1) if ply else None
            job = self.job
            return {
                "game": game.spec,
                "title": game.describe(),
                "board_style": game.board_style,
                "height": game.board_shape[0],
                "width": game.board_shape[1],
                "columns": self.columns,
                "rows": self.rows,
                "cell_names": self.names,
                "cells": state.board[0].tolist(),
                "cell_action": game.click_actions(state)[0].tolist(),
                "action_cell": game.action_cells(state)[0].tolist(),
                "last_cell": int(game.action_cells(previous)[0, line[ply - 1]]) if previous is not None else -1,
                "pass_action": game.pass_action,
                "to_play": int(state.to_play[0]),
                "human": "both" if self.human is None else self.human,
                "legal": game.legal_actions(state) if not over else [],
                "last": line[ply - 1] if ply else None,
                "moves": [game.format_action(a) for a in line],
                "ply": ply,
                "game_number": self.game_number,
                "variation_from": self._variation_from(),
                "over": over,
                "result": self._result_text(state) if over else None,
                "engine": self.engine.name,
                "thinking": job is not None and job.kind == "move",
                "work": job.kind if job is not None and job.generation == self.generation else None,
                "analysis": self.analyses.get(keys[ply]) if not over else None,
                "graph": self._graph(keys),
                "message": self.message,
                "simulations": self.engine.simulations,
                "seconds": self.engine.seconds,
                "ponder": self.ponder,
                "ponder_limit": self.node_limit,
                "game_choice": self.choice,
                "can_change_game": self.checkpoint is None,
                "sgf": supports(game),
                "games": games.presets(board=True),
            }

    def _result_text(self, state: State) -> str:
        result = int(self.game.result(state)[0])
        return {1: "first player wins", -1: "second player wins", 0: "draw"}[result]

    def _variation_from(self) -> int | None:
        """The ply where the line shown leaves the game's own moves (None: the line is the game)."""
        if self.main_line is None:
            return None
        line, main = self.session.actions, self.main_line
        shared = 0
        while shared < min(len(line), len(main)) and line[shared] == main[shared]:
            shared += 1
        return shared

    def _graph(self, keys: list[int]) -> list[dict | None]:
        """Per ply of the line (`keys`: its positions' ids): the first player's win-rate and the
        visits behind it (None: not analysed yet); a finished game's last point is its result."""
        points: list[dict | None] = []
        for ply, key in enumerate(keys):
            state = self.session.state_at(ply)
            if bool(state.done[0]):
                points.append({"winrate": (float(self.game.result(state)[0]) + 1) / 2, "visits": 0, "final": True})
                continue
            info = self.analyses.get(key)
            if info is None:
                points.append(None)
                continue
            winrate = info["winrate"] if info["for_player"] == 0 else 1 - info["winrate"]
            points.append({"winrate": round(winrate, 4), "visits": info["visits"]})
        return points

    def sgf(self) -> str:
        """The line shown as SGF (games with an SGF type)."""
        with self.lock:
            check_supported(self.game)
            names = {None: self.players, 0: ("you", self.engine.name), 1: (self.engine.name, "you")}[self.human]
            return to_sgf(self.game, list(self.session.actions), black=names[0], white=names[1],
                          result=None if self.session.over else "?", inserted=list(self.session.inserted))

    # -- requests ---------------------------------------------------------------------------------------
    def _changed(self, message: str = "") -> None:
        self.generation += 1
        self.message = message
        self.lock.notify_all()

    def move(self, action: int, game_number: int | None = None) -> None:
        """Play `action` at the shown position: the line's next move follows the line, another
        move starts a variation there. `game_number`: the snapshot's the click was made on; a
        click on the board of a game since replaced (a new game, an SGF load) is refused."""
        with self.changing, self.lock:
            if game_number is not None and game_number != self.game_number:
                raise GameError("the board changed before that click reached it (a new game); click again")
            state, line = self.shown, self.session.actions
            if bool(state.done[0]):
                raise GameError("the game is over here: step back, undo, or start a new game")
            if self._engine_to_move():
                raise GameError("wait: it is the engine's turn")
            if not 0 <= action < self.game.num_actions:
                raise GameError(f"{action} is not a move of {self.game.describe()} (actions are 0 to "
                                f"{self.game.num_actions - 1})")
            if action not in self.game.legal_actions(state):
                raise GameError(f"{self.game.format_action(action)} is not a legal move: "
                                f"{self.game.illegal_reason(state, action)}")
            if self.ply < len(line) and line[self.ply] == action:
                self.ply += 1
                return self._changed()
            if self.ply < len(line):
                if self.main_line is None:
                    self.main_line, self.main_inserted = list(line), list(self.session.inserted)
                self.session.undo(len(line) - self.ply)
            self.session.play(action)
            self.ply += 1
            self._changed()

    def undo(self) -> None:
        """Take back the move shown (and the engine's reply before it); moves after it are
        dropped, and kept as the game to go back to if the shown position was not the line's end."""
        with self.changing, self.lock:
            if self.ply == 0:
                raise GameError("nothing to undo")
            target = self.ply - 1
            if target > 0 and self.human is not None and int(self.session.state_at(target).to_play[0]) != self.human:
                target -= 1
            line = self.session.actions
            if self.ply < len(line) and self.main_line is None:
                self.main_line, self.main_inserted = list(line), list(self.session.inserted)
            self.session.undo(len(line) - target)
            self.ply = target
            self._changed("took back")

    def goto(self, ply, *, main_line: bool = False) -> None:
        """Show the position after `ply` moves of the line (of the game's own moves if `main_line`)."""
        with self.changing, self.lock:
            if main_line and self.main_line is None:
                raise GameError("there is no variation to leave: this is the game")
            length = len(self.main_line if main_line else self.session.actions)
            if not (is_int(ply) and 0 <= ply <= length):
                raise GameError(f"ply must be a whole number from 0 to {length}")
            if main_line:  # (only once the request is known to be good: a refused one changes nothing)
                session = GameSession.of(self.game, self.main_line, self.main_inserted)
                self.session, self.main_line = session, None
            self.ply = ply
            self._changed()

    @staticmethod
    def _check_simulations(value, limit: int) -> int:
        if not is_int(value) or value < 1:
            raise GameError("simulations must be a positive whole number")
        if value > limit:
            raise GameError(f"at most {limit} simulations a move on this board (the search tree's memory)")
        return value

    def settings(self, data: dict) -> None:
        """Change who plays which side, the engine's strength (simulations or seconds a move) or pondering."""
        unknown = sorted(set(data) - set(SETTINGS))
        if unknown:
            raise GameError(f"unknown setting {unknown[0]}; the settings are {', '.join(SETTINGS)}")
        if "simulations" in data and "seconds" in data:
            raise GameError("give the engine simulations or seconds a move, not both")
        with self.changing, self.lock:
            human = parse_human(data["human"]) if "human" in data else self.human
            simulations = None
            if "simulations" in data:
                simulations = self._check_simulations(data["simulations"], self.node_limit)
            seconds = data.get("seconds")
            if "seconds" in data and not (is_number(seconds) and 0 < seconds <= MAX_SECONDS):
                raise GameError(f"seconds must be a number above 0 and at most {MAX_SECONDS:g}")
            ponder = data.get("ponder", self.ponder)
            if not isinstance(ponder, bool):
                raise GameError("ponder must be true or false")
            self.human, self.ponder = human, ponder
            if simulations is not None:
                self.engine.simulations, self.engine.seconds = simulations, None
            if "seconds" in data:
                self.engine.simulations, self.engine.seconds = None, float(seconds)
            self._changed()

    def new(self, options: dict) -> None:
        """A new game: options `game` (a spec), `human` (0, 1 or "both"), `simulations`."""
        unknown = sorted(set(options) - set(NEW_GAME))
        if unknown:
            raise GameError(f"unknown option {unknown[0]} for a new game; the options are {', '.join(NEW_GAME)}")
        with self.changing:
            human = parse_human(options["human"]) if "human" in options else self.human
            spec = options.get("game")
            if spec is not None and not isinstance(spec, str):
                raise GameError("game must be a game spec such as gomoku:size=9")
            game = self._other_game(games.make_from_spec(spec)) if spec else self.game
            sims = options.get("simulations")
            if sims is not None:
                sims = self._check_simulations(sims, self.node_limit if game == self.game else tree_node_limit(game))
            engine, note = self._engine_for(game, sims)
            with self.lock:
                self._use_engine(engine, sims)
                self.human = human
                self._start_game(game)
                self._changed("new game" + note)

    def load_sgf(self, text) -> None:
        """Show the game of an SGF record at its end; the person then plays both sides (the engine
        analyses) until they choose a side."""
        if not isinstance(text, str) or not text.strip():
            raise GameError("an SGF load needs the file's text")
        if len(text) > MAX_SGF_CHARACTERS:
            raise GameError(f"that SGF file is too big ({len(text)} characters; at most {MAX_SGF_CHARACTERS})")
        record = read_sgf(text)
        with self.changing:
            game = self._other_game(game_from_sgf(record))
            played = replay(game, record)
            moves = played.actions
            engine, note = self._engine_for(game, None)
            with self.lock:
                self._use_engine(engine, None)
                self.human = None
                self._start_game(game, moves, played.inserted)
                self.players = (record.properties.get("PB", [""])[0], record.properties.get("PW", [""])[0])
                if played.passes_put_in and not game.forced_pass:
                    note += (f" ({played.passes_put_in} pass{'es' if played.passes_put_in > 1 else ''} put in "
                             "where the record gives one side two moves in a row)")
                self._changed(f"loaded {len(moves)} moves; you play both sides until you choose one" + note)

    def _other_game(self, game: Game) -> Game:
        """`game` if the GUI may switch to it (a network plays its own game only)."""
        if game != self.game:
            if self.checkpoint:
                raise GameError(f"this network plays {self.game.spec} only, not {game.spec}")
            if not game.has_board:
                raise GameError(f"the GUI shows board games; {game.name} has no board")
        return game

    def _engine_for(self, game: Game, simulations: int | None) -> tuple[Engine | None, str]:
        """A new engine for another game (None for the same game: its engine stays, and a
        network is not loaded again), at `simulations` a move or the budget the page set before
        (lowered to what the new board's tree may hold), and a note for the message where it was
        lowered. Called holding `changing` but not `lock`: the search and polls go on meanwhile."""
        if game == self.game:
            return None, ""
        note, seconds = "", None
        if simulations is None:  # the budget set before, simulations or seconds
            simulations, seconds = self.engine.simulations, self.engine.seconds
            limit = tree_node_limit(game)
            if simulations is not None and simulations > limit:
                simulations, note = limit, f" (at {limit} simulations a move, the most this board's tree may hold)"
        engine = Engine(game, self.opponent_spec, checkpoint=self.checkpoint, simulations=simulations,
                        seconds=seconds, device=self.device, seed=self.engine.seed)
        return engine, note

    def _use_engine(self, engine: Engine | None, simulations: int | None) -> None:
        """Switch to `engine` from `_engine_for`, or give the engine kept `simulations` a move."""
        if engine is not None:
            self.engine = engine
        elif simulations is not None:
            self.engine.simulations, self.engine.seconds = simulations, None

    def close(self, wait: float = 10.0) -> None:
        """Stop the engine's thread, waiting up to `wait` seconds for its search to notice."""
        with self.lock:
            self.stop = True
            self.lock.notify_all()
        if self.worker is not threading.current_thread():
            self.worker.join(timeout=wait)
