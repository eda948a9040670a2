"""The browser GUI: a local HTTP server (127.0.0.1 only) and a page served from this package.

A background thread does the engine's thinking: on the engine's turn it searches
and plays; on yours it analyses the position (ponders) until the position
changes or its budget is spent. Either way the page sees the live analysis: the
win-rate for the side to move, visits and policy per move (the heat map) and the
principal variation. The page polls GET /api/state; moves, undo and new games
are POSTs. Nothing is fetched from the internet.
"""

from __future__ import annotations

import json
import threading
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources


import games
from games import Game, GameError

from ..errors import UserError
from ..player import Analysis
from ..session import Engine, GameSession, describe_analysis
from . import guard

STATIC = {"/": ("index.html", "text/html"), "/app.js": ("app.js", "text/javascript"),
          "/style.css": ("style.css", "text/css")}
PONDER_SIMULATIONS = 4000  # analysis on your turn stops after this many


class Gui:
    """The shared state of the GUI: one game, one engine, the latest analysis."""

    def __init__(self, game: Game, engine: Engine, *, human: int = 0, checkpoint: str | None = None,
                 device="cpu", opponent_spec: str | None = None):
        if not game.has_board:
            raise UserError(f"the GUI shows board games; {game.name} has no board (play it in the terminal)")
        self.lock = threading.Condition()
        self.game, self.engine, self.human = game, engine, human
        self.checkpoint, self.device = checkpoint, device
        self.opponent_spec = opponent_spec or (None if checkpoint else engine.player.spec)
        self.session = GameSession(game)
        self.generation = 0  # bumps whenever the position changes
        self.analysis: dict | None = None
        self.analysis_generation = -1
        self.thinking = False
        self.message = ""
        self.stop = False
        self.worker = threading.Thread(target=self._work, daemon=True)
        self.worker.start()

    # -- the engine thread ------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            with self.lock:
                while not self.stop and not self._has_work():
                    self.lock.wait(timeout=0.5)
                if self.stop:
                    return
                generation = self.generation
                state = self.session.state
                engine_turn = self.session.to_play != self.human
                self.thinking = engine_turn
            try:
                analysis = self._think(state, generation, ponder=not engine_turn)
            except Exception as error:  # keep the GUI alive, show the problem
                with self.lock:
                    self.message = f"engine error: {error}"
                    self.thinking = False
                    self.analysis_generation = generation
                continue
            with self.lock:
                self.thinking = False
                if generation != self.generation:
                    continue
                self._store(analysis, generation)
                if engine_turn and not self.session.over:
                    self.session.play(int(analysis.action[0]))
                    self.generation += 1
                    self.message = f"{self.engine.name} played {self.game.format_action(int(analysis.action[0]))}"
                self.lock.notify_all()

    def _has_work(self) -> bool:
        if self.session.over:
            return False
        return self.analysis_generation != self.generation

    def _think(self, state, generation: int, *, ponder: bool) -> Analysis:
        def progress(analysis: Analysis) -> None:
            with self.lock:
                if generation == self.generation:
                    self._store(analysis, generation, final=False)

        def should_stop() -> bool:
            return self.stop or generation != self.generation

        budget = {"simulations": PONDER_SIMULATIONS} if ponder else {}
        return self.engine.think(state, on_progress=progress, should_stop=should_stop, **budget)

    def _store(self, analysis: Analysis, generation: int, final: bool = True) -> None:
        info = describe_analysis(self.game, analysis, top=5)
        visits = analysis.visits[0]
        total = float(visits.sum())
        prior = analysis.prior[0] if analysis.prior is not None else None
        info["visit_share"] = [round(float(v) / total, 4) if total else 0.0 for v in visits]
        info["policy"] = [round(float(p), 4) for p in prior] if prior is not None else None
        info["pv_actions"] = analysis.pv[0]
        info["best_action"] = int(analysis.action[0])
        info["for_player"] = self.session.to_play
        self.analysis = info
        if final:
            self.analysis_generation = generation

    # -- requests -----------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        with self.lock:
            game, session = self.game, self.session
            state = session.state
            legal = session.legal() if not session.over else []
            previous = session.previous_state
            return {
                "game": game.spec,
                "title": game.describe(),
                "height": game.board_shape[0],
                "width": game.board_shape[1],
                "cells": state.board[0].tolist(),
                "cell_action": game.click_actions(state)[0].tolist(),
                "action_cell": game.action_cells(state)[0].tolist(),
                "last_cell": int(game.action_cells(previous)[0, session.actions[-1]]) if previous is not None else -1,
                "pass_action": game.pass_action,
                "to_play": session.to_play,
                "human": self.human,
                "legal": legal,
                "last": session.actions[-1] if session.actions else None,
                "moves": [game.format_action(a) for a in session.actions],
                "over": session.over,
                "result": session.result_text() if session.over else None,
                "engine": self.engine.name,
                "thinking": self.thinking,
                "analysis": self.analysis,
                "message": self.message,
                "simulations": self.engine.simulations,
                "can_change_game": self.checkpoint is None,
                "sgf": self._sgf_supported(),
                "games": games.presets(board=True),
            }

    def _sgf_supported(self) -> bool:
        from ..sgf import supports

        return supports(self.game)

    def sgf(self) -> str:
        """The game so far as SGF (go, othello, gomoku)."""
        from ..sgf import supports, to_sgf

        with self.lock:
            if not supports(self.game):
                raise GameError(f"SGF has no game type for {self.game.name}")
            names = {self.human: "you", 1 - self.human: self.engine.name}
            return to_sgf(self.game, list(self.session.actions), black=names[0], white=names[1],
                          result=None if self.session.over else "?")

    def move(self, action: int) -> None:
        with self.lock:
            if self.session.over:
                raise GameError("the game is over: start a new one or undo")
            if self.session.to_play != self.human:
                raise GameError("wait: it is the engine's turn")
            if action not in self.session.legal():
                text = self.game.format_action(action) if 0 <= action < self.game.num_actions else str(action)
                raise GameError(f"{text} is not a legal move: {self.game.illegal_reason(self.session.state, action)}")
            self.session.play(action)
            self.generation += 1
            self.message = ""
            self.lock.notify_all()

    def undo(self) -> None:
        with self.lock:
            if not self.session.actions:
                raise GameError("nothing to undo")
            self.session.undo(1)
            if self.session.actions and self.session.to_play != self.human:
                self.session.undo(1)
            self.generation += 1
            self.analysis = None
            self.message = "took back"
            self.lock.notify_all()

    def new(self, options: dict) -> None:
        human = options.get("human", self.human)
        if human not in (0, 1):
            raise GameError("human must be 0 (move first) or 1 (move second)")
        sims = options.get("simulations")
        if sims is not None and (not isinstance(sims, int) or sims < 1):
            raise GameError("simulations must be a positive whole number")
        spec = options.get("game")
        with self.lock:
            game = self.game
            if spec and games.make_from_spec(spec) != self.game:
                if self.checkpoint:
                    raise GameError(f"this network plays {self.game.spec} only")
                game = games.make_from_spec(spec)
                if not game.has_board:
                    raise GameError(f"the GUI shows board games; {game.name} has no board")
            if game != self.game or sims is not None:
                self.engine = Engine(game, self.opponent_spec, checkpoint=self.checkpoint,
                                     simulations=sims if sims is not None else self.engine.simulations,
                                     seconds=self.engine.seconds, device=self.device)
            self.game, self.human = game, human
            self.session = GameSession(game)
            self.generation += 1
            self.analysis = None
            self.message = "new game"
            self.lock.notify_all()

    def close(self) -> None:
        with self.lock:
            self.stop = True
            self.lock.notify_all()


def make_handler(gui: Gui):
    class Handler(BaseHTTPRequestHandler):
        timeout = guard.READ_SECONDS  # a client that stops sending mid-request is dropped, its thread freed

        def log_message(self, format, *args):  # quiet
            pass

        def _send(self, code: int, body: bytes, kind: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, code: int, data: dict) -> None:
            self._send(code, json.dumps(data).encode(), "application/json")

        def send_error(self, code, message=None, explain=None):  # malformed requests, unknown methods
            self.close_connection = True
            self._json(code, {"error": message or explain or "bad request"})

        def _refused(self, *, changes_state: bool) -> bool:
            """Answer a request the guard refuses (azero/web/guard.py); True if it was refused."""
            port = self.server.server_address[1]
            try:
                guard.check_host(self.headers, port)
                if changes_state:
                    guard.check_sender(self.headers, port)
            except guard.Refused as refusal:
                self.close_connection = True
                self._json(refusal.status, {"error": refusal.message})
                return True
            return False

        def do_GET(self):
            if self._refused(changes_state=False):
                return None
            path = self.path.split("?")[0]
            if path == "/api/state":
                return self._json(200, gui.snapshot())
            if path == "/api/sgf":
                try:
                    body = gui.sgf().encode()
                except GameError as error:
                    return self._json(400, {"error": str(error)})
                self.send_response(200)
                self.send_header("Content-Type", "application/x-go-sgf")
                self.send_header("Content-Disposition", 'attachment; filename="azero-game.sgf"')
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return None
            if path in STATIC:
                name, kind = STATIC[path]
                body = resources.files("azero.web").joinpath("static", name).read_bytes()
                return self._send(200, body, kind + "; charset=utf-8")
            self._json(404, {"error": f"no such page {path}"})

        def do_POST(self):
            if self._refused(changes_state=True):
                return None
            try:
                body = self.rfile.read(guard.body_length(self.headers))
            except guard.Refused as refusal:
                self.close_connection = True
                return self._json(refusal.status, {"error": refusal.message})
            try:
                data = json.loads(body or b"{}")
                if not isinstance(data, dict):
                    raise ValueError
            except (ValueError, RecursionError):
                return self._json(400, {"error": "the request body must be a JSON object"})
            try:
                if self.path == "/api/move":
                    action = data.get("action")
                    if isinstance(action, bool) or not isinstance(action, int):
                        raise GameError("a move needs an integer action")
                    gui.move(action)
                elif self.path == "/api/undo":
                    gui.undo()
                elif self.path == "/api/new":
                    gui.new(data)
                else:
                    return self._json(404, {"error": f"no such request {self.path}"})
            except (GameError, UserError) as error:
                return self._json(400, {"error": str(error)})
            except Exception as error:  # a bug answers an error and the board keeps serving
                return self._json(500, {"error": f"internal error: {type(error).__name__}: {error}"})
            self._json(200, gui.snapshot())

    return Handler


def start_server(gui: Gui, port: int = 0) -> ThreadingHTTPServer:
    """Serve the GUI on 127.0.0.1:port (0 = any free port) in a background thread."""
    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(gui))
    except OSError as error:
        raise UserError(f"cannot listen on 127.0.0.1:{port}: {error.strerror}; choose another --port") from None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_gui(game: Game, engine: Engine, *, port: int, open_browser: bool, human_first: bool,
            checkpoint: str | None, device: str) -> int:
    gui = Gui(game, engine, human=0 if human_first else 1, checkpoint=checkpoint, device=device)
    server = start_server(gui, port)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"azero GUI at {url} (Ctrl-C to stop)", flush=True)
    if open_browser:
        webbrowser.open(url)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        gui.close()
        server.shutdown()
    return 0
