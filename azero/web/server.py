"""The browser GUI: a local HTTP server (127.0.0.1 only) for the page in static/ (no internet).

The page is an analysis board (azero/web/gui.py holds its state and the engine's thread): the
board with its coordinates and a colour heat map, the win-rate graph of the whole game, stepping
through the game and playing variations, SGF files, live analysis that deepens while you think.
It polls GET /api/state; everything else is one request each. POST bodies are JSON objects sent
with `Content-Type: application/json`; the API answers JSON (the SGF file aside), and a refused
request (a bad value, a key it does not take) answers 400 with {"error": "one readable sentence"}
and changes nothing.

    GET  /api/state     the snapshot the page draws (Gui.snapshot: board, moves, ply, analysis, graph, settings)
    GET  /api/sgf       the game shown as an SGF file (400 for a game without an SGF type)
    POST /api/move      {"action": A}            play A at the shown position (an earlier one starts a variation);
                        {"action": A, "game_number": G}  ... refused if G is not the snapshot's game_number
                        (the page sends it: a click that reaches the board after a new game is not played there)
    POST /api/undo      {}                       take back the shown move (and the engine's reply)
    POST /api/goto      {"ply": N}               show the position after N moves of the line;
                        {"ply": N, "main_line": true}   ... of the game's own moves, leaving a variation
    POST /api/new       {"game": SPEC, "human": 0 | 1 | "both", "simulations": N}   a new game (all optional)
    POST /api/settings  {"human": ..., "simulations": N | "seconds": S, "ponder": true | false}   any of them
    POST /api/sgf       {"sgf": TEXT}            show an SGF record's game (the person then plays both sides)

Every POST answers with the new snapshot. `human` is the side the person plays: 0 first,
1 second, "both" (the engine only analyses).
"""

from __future__ import annotations

import json
import threading
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources

from games import Game, GameError

from ..errors import UserError, internal_error, is_int
from ..session import Engine
from . import guard
from .gui import Gui

__all__ = ["Gui", "make_handler", "run_gui", "start_server"]

# no other page may frame the board: a transparent frame over a page of its own would get the
# person's clicks (X-Frame-Options for older browsers, frame-ancestors for the others)
PAGE_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}
STATIC = {"/": ("index.html", "text/html"), "/style.css": ("style.css", "text/css"),
          **{f"/{name}": (name, "text/javascript") for name in ("app.js", "board.js", "graph.js")}}
# the keys each POST takes (/api/new and /api/settings name their unknown keys themselves)
KEYS = {"/api/move": {"action", "game_number"}, "/api/undo": set(), "/api/goto": {"ply", "main_line"},
        "/api/sgf": {"sgf"}}


def make_handler(gui: Gui):
    class Handler(BaseHTTPRequestHandler):
        timeout = guard.READ_SECONDS  # a client that stops sending mid-request is dropped, its thread freed

        def log_message(self, format, *args):  # quiet
            pass

        def end_headers(self):
            for name, value in PAGE_HEADERS.items():
                self.send_header(name, value)
            super().end_headers()

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

        def handle_one_request(self):
            # the whole request (line, headers, body) within READ_SECONDS of waiting for it: a
            # client trickling its headers a byte at a time inside the socket's timeout is cut off
            self.deadline = guard.RequestDeadline(self.connection, guard.READ_SECONDS)
            try:
                super().handle_one_request()
            finally:
                self.deadline.cancel()

        def _late(self, part: str) -> None:
            self.close_connection = True
            self.request_version = "HTTP/1.0"  # (a request line cut short reads as HTTP/0.9's, which has no status)
            self._json(408, {"error": f"the request's {part} did not arrive within {self.deadline.seconds:g} s"})

        def send_error(self, code, message=None, explain=None):  # malformed requests, unknown methods
            if self.deadline.expired:  # (what a cut-off request left is no request)
                return self._late("headers")
            self.close_connection = True
            self._json(code, {"error": message or explain or "bad request"})

        def parse_request(self) -> bool:
            if not super().parse_request():
                return False
            if self.deadline.expired:
                self._late("headers")
                return False
            if self.request_version == "HTTP/0.9":  # "GET /": no status line, no headers in the answer
                self.send_error(400, "HTTP/0.9 requests are not served; send HTTP/1.0 or HTTP/1.1")
                return False
            return True

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
            if not self.deadline.cancel():  # (ran out just now: answer, then close)
                self.close_connection = True
            if self._refused(changes_state=False):
                return None
            try:
                return self._get(self.path.split("?")[0])
            except ConnectionError:  # the page went away mid-answer: nobody to tell
                self.close_connection = True
                return None
            except Exception as error:  # a bug answers an error and the board keeps serving
                return self._json(500, {"error": internal_error(error)})

        def _get(self, path: str):
            if path == "/api/state":
                return self._json(200, gui.snapshot())
            if path == "/api/sgf":
                try:
                    body = gui.sgf().encode()
                except (GameError, UserError) as error:
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
                return self._post()
            except ConnectionError:  # the page went away mid-request or mid-answer: nobody to tell
                self.close_connection = True
                return None

        def _read_body(self, length: int) -> bytes:
            """The body's `length` bytes (fewer if the client closes first), all of them within
            the request's deadline: a client that sends a byte now and then, each inside the
            socket's timeout, is refused all the same and its thread freed."""
            parts, left, stalled = [], length, False
            try:
                while left > 0:
                    chunk = self.rfile.read1(min(left, 1 << 16))
                    if not chunk:
                        break
                    parts.append(chunk)
                    left -= len(chunk)
            except TimeoutError:  # nothing for the socket's whole timeout
                stalled = True
            if not self.deadline.cancel() or stalled:
                raise guard.Refused(408, f"the request's body did not arrive within {self.deadline.seconds:g} s")
            return b"".join(parts)

        def _post(self):
            try:
                limit = guard.MAX_SGF_BODY if self.path == "/api/sgf" else guard.MAX_BODY
                body = self._read_body(guard.body_length(self.headers, limit))
            except guard.Refused as refusal:
                self.close_connection = True
                return self._json(refusal.status, {"error": refusal.message})
            try:
                data = json.loads(body or b"{}")
                if not isinstance(data, dict):
                    raise ValueError
            except (ValueError, RecursionError):
                return self._json(400, {"error": "the request body must be a JSON object"})
            try:  # JSON's \ud800 escapes make text no UTF-8 can hold, which the board would store and fail to send
                json.dumps(data, ensure_ascii=False).encode()
            except UnicodeEncodeError:
                return self._json(400, {"error": "the request holds text that is not Unicode (a lone surrogate such "
                                                 "as \\ud800)"})
            try:
                unknown = sorted(set(data) - KEYS[self.path]) if self.path in KEYS else []
                if unknown:
                    known = ", ".join(sorted(KEYS[self.path])) or "none"
                    raise GameError(f"unknown key {unknown[0]} for {self.path}; its keys: {known}")
                if self.path == "/api/move":
                    action = data.get("action")
                    if not is_int(action):
                        raise GameError("a move needs an integer action")
                    number = data.get("game_number")
                    if number is not None and not is_int(number):
                        raise GameError("game_number must be a whole number (the snapshot's)")
                    gui.move(action, number)
                elif self.path == "/api/undo":
                    gui.undo()
                elif self.path == "/api/goto":
                    if not isinstance(data.get("main_line", False), bool):
                        raise GameError("main_line must be true or false")
                    gui.goto(data.get("ply"), main_line=data.get("main_line", False))
                elif self.path == "/api/new":
                    gui.new(data)
                elif self.path == "/api/settings":
                    gui.settings(data)
                elif self.path == "/api/sgf":
                    gui.load_sgf(data.get("sgf"))
                else:
                    return self._json(404, {"error": f"no such request {self.path}"})
            except (GameError, UserError) as error:
                return self._json(400, {"error": str(error)})
            except Exception as error:  # a bug answers an error and the board keeps serving
                return self._json(500, {"error": internal_error(error)})
            self._json(200, gui.snapshot())

    return Handler


class BoardServer(ThreadingHTTPServer):
    """A thread per connection, at most guard.MAX_CONNECTIONS_PER_CLIENT of them for one client
    address at once: a connection over that is answered 503 and closed before it takes a thread."""

    def __init__(self, address, handler):
        super().__init__(address, handler)
        self.clients = guard.ClientConnections()

    def process_request(self, request, client_address):
        if not self.clients.enter(client_address[0]):
            body = json.dumps({"error": f"this client has {guard.MAX_CONNECTIONS_PER_CLIENT} connections open "
                                        "to the board already; close some"}).encode()
            try:
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            except OSError:  # the client has gone already
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: the connection is closed, not counted
            self.clients.leave(client_address[0])
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.clients.leave(client_address[0])


def start_server(gui: Gui, port: int = 0) -> ThreadingHTTPServer:
    """Serve the GUI on 127.0.0.1:port (0 = any free port) in a background thread."""
    try:
        server = BoardServer(("127.0.0.1", port), make_handler(gui))
    except OSError as error:
        raise UserError(f"cannot listen on 127.0.0.1:{port}: {error.strerror}; choose another --port") from None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_gui(game: Game, engine: Engine, *, port: int, open_browser: bool, human_first: bool,
            checkpoint: str | None, device: str) -> int:
    """Serve the GUI for one game and engine until Ctrl-C."""
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
