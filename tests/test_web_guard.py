"""The browser board answers its own page only: other hosts (DNS rebinding), other origins, other
content types and oversized bodies are refused with a JSON error, and the server keeps serving.
The cross-origin attacks run in a real browser (Debian's headless Chromium, driven by Playwright)."""

from __future__ import annotations

import http.client
import http.server
import json
import os
import shutil
import threading
import time
import traceback
from pathlib import Path

import pytest

import games
from azero.session import Engine
from azero.web.guard import MAX_BODY
from azero.web.server import Gui, start_server

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def board():
    game = games.make("gomoku", size=7, k=4)
    gui = Gui(game, Engine(game, "random"), human=0)
    server = start_server(gui, 0)
    yield gui, server.server_address[1]
    gui.close()
    server.shutdown()


def request(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    """(status, JSON answer) of one raw request; headers as given (Host too)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for key, value in (headers or {}).items():
            connection.putheader(key, value)
        connection.endheaders(body)
        reply = connection.getresponse()
        return reply.status, json.loads(reply.read() or b"null")
    finally:
        connection.close()


def own(port: int, **extra) -> dict:
    return {"Host": f"127.0.0.1:{port}", **extra}


def test_the_board_refuses_other_hosts_origins_content_types_and_big_bodies(board):
    gui, port = board
    move = json.dumps({"action": 24}).encode()
    json_type = {"Content-Type": "application/json"}
    refusals = [
        ("GET", "/api/state", None, {"Host": f"evil.example:{port}"}, 403, "answers requests for 127.0.0.1"),
        ("GET", "/", None, {"Host": "127.0.0.1:1"}, 403, "answers requests for"),
        ("GET", "/api/state", None, {}, 403, "without Host"),
        ("POST", "/api/move", move, own(port, Origin="http://evil.example", **json_type), 403, "may not change"),
        ("POST", "/api/move", move, own(port, Origin="null", **json_type), 403, "may not change"),
        ("POST", "/api/move", move, own(port, **{"Sec-Fetch-Site": "cross-site"}, **json_type), 403, "cross-site"),
        ("POST", "/api/move", move, own(port, **{"Content-Type": "text/plain"}), 415, "application/json"),
        ("POST", "/api/move", move, own(port), 415, "application/json"),
        ("POST", "/api/move", b"x", own(port, **json_type, **{"Content-Length": str(MAX_BODY + 1)}), 413, "at most"),
        ("POST", "/api/move", b"", own(port, **json_type, **{"Content-Length": "-1"}), 400, "not a number"),
        ("POST", "/api/move", b"", own(port, **json_type, **{"Transfer-Encoding": "chunked"}), 411, "Content-Length"),
        ("PUT", "/api/move", b"", own(port), 501, "Unsupported method"),
        ("POST", "/api/new", b'{"game": 5}', own(port, **json_type), 400, "game must be a game spec"),
        ("POST", "/api/new", b'{"simulations": 1000000000000}', own(port, **json_type), 400,
         "simulations a move on this board (the search tree's memory)"),
    ]
    for method, path, body, headers, status, words in refusals:
        headers = dict(headers)
        if body is not None and "Content-Length" not in headers and "Transfer-Encoding" not in headers:
            headers["Content-Length"] = str(len(body))
        code, answer = request(port, method, path, body, headers)
        assert (code, words in answer["error"]) == (status, True), (method, path, headers, code, answer)
    assert gui.session.actions == [] and gui.engine.simulations is None
    # the page's own requests, and a program's without Origin, still work
    headers = own(port, Origin=f"http://127.0.0.1:{port}", **{"Sec-Fetch-Site": "same-origin"}, **json_type)
    code, answer = request(port, "POST", "/api/move", move, {**headers, "Content-Length": str(len(move))})
    assert code == 200 and answer["moves"][0] == "d4"
    code, answer = request(port, "GET", "/api/state", None, {"Host": f"localhost:{port}"})
    assert code == 200 and answer["moves"][0] == "d4"


# -- real cross-origin requests from a second page, in Chromium ---------------------------------------

ATTACK = """<!doctype html><html><body><form id="form" method="POST" enctype="text/plain">
<input name='{"action": 10, "x": "' value='"}'></form><script>
async function attack(board) {
  const tries = [
    () => fetch(board + "/api/move", {method: "POST", mode: "no-cors", body: '{"action": 8}'}),
    () => fetch(board + "/api/move", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
                                      body: '{"action": 9}'}),
    () => fetch(board + "/api/undo", {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"}),
    () => fetch(board + "/api/state").then(r => r.text()),
  ];
  const results = [];
  for (const attempt of tries) {
    try { results.push(String(await attempt())); } catch (error) { results.push("blocked: " + error); }
  }
  return results;
}
</script></body></html>"""


def serve_attack_page() -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format, *args):
            pass

        def do_GET(self):
            body = ATTACK.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def browser():
    if not Path(CHROMIUM).exists() and not os.environ.get("CI"):
        pytest.skip("Chromium is not installed (CI installs Debian's chromium)")
    sync_api = pytest.importorskip("playwright.sync_api") if not os.environ.get("CI") else __import__(
        "playwright.sync_api", fromlist=["sync_playwright"])
    with sync_api.sync_playwright() as p:
        # rebind.example resolves to this machine, as a DNS-rebinding attacker's name would
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=[*FLAGS, "--host-resolver-rules=MAP rebind.example 127.0.0.1"])
        yield browser
        browser.close()


def test_another_page_in_the_browser_cannot_drive_or_read_the_board(board, browser):
    gui, port = board
    gui.move(24)  # a position to undo, should the attack get through
    deadline = time.monotonic() + 60
    while len(gui.session.actions) < 2 and time.monotonic() < deadline:  # the engine's reply
        time.sleep(0.05)
    before = (list(gui.session.actions), gui.generation)
    attacker = serve_attack_page()
    try:
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{attacker.server_address[1]}/")  # another origin: another port
        results = page.evaluate(f"attack('http://127.0.0.1:{port}')")
        assert results[2].startswith("blocked") and results[3].startswith("blocked"), results
        page.evaluate(f"document.getElementById('form').action = 'http://127.0.0.1:{port}/api/move'")
        with page.expect_navigation():
            page.evaluate("document.getElementById('form').submit()")
        assert "may not change the board" in page.content()
        # DNS rebinding: the attacker's own name now points here; the board answers nothing to it
        page.goto(f"http://rebind.example:{port}/")
        assert "answers requests for 127.0.0.1" in page.content()
        text = page.evaluate("fetch('/api/state').then(r => r.status + ' ' + r.statusText)")
        assert text.startswith("403")
    finally:
        attacker.shutdown()
    assert (gui.session.actions[: len(before[0])], gui.generation) == before
    # the board's own page still plays
    page = browser.new_page()
    page.goto(f"http://127.0.0.1:{port}/")
    page.wait_for_function("document.querySelectorAll('#board .stone').length === 2", timeout=60_000)
    free = gui.session.legal()[0]
    page.locator(f'#board .cell[data-index="{free}"]').click()
    page.wait_for_function("document.querySelectorAll('#board .stone').length === 4", timeout=60_000)
    assert gui.session.actions[2] == free


def test_another_page_cannot_show_the_board_in_a_frame(board, browser):
    """A transparent frame of the board over a page of its own would get the person's clicks
    (clickjacking); the board's answers forbid every frame."""
    _, port = board
    attacker = serve_attack_page()
    try:
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{attacker.server_address[1]}/")
        page.evaluate(f"""new Promise(done => {{
            const frame = document.createElement("iframe");
            frame.onload = done;
            frame.src = "http://127.0.0.1:{port}/";
            document.body.appendChild(frame);
        }})""")
        framed, board_page = page.frames[-1], f"http://127.0.0.1:{port}/"
        # a refused frame shows Chromium's error page instead (another address, no board)
        assert framed.url != board_page or not framed.evaluate("document.getElementById('board') !== null")
    finally:
        attacker.shutdown()


@pytest.fixture
def impatient_board(monkeypatch):
    """The port of a board whose server gives a request 1 s (guard.READ_SECONDS) instead of 20."""
    from azero.web import guard

    monkeypatch.setattr(guard, "READ_SECONDS", 1.0)
    game = games.make("gomoku", size=7, k=4)
    gui = Gui(game, Engine(game, "random"), human=0)
    server = start_server(gui, 0)
    yield server.server_address[1]
    gui.close()
    server.shutdown()


def post_headers(port: int, length: int) -> bytes:
    return (f"POST /api/move HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


def test_a_client_that_stalls_mid_request_is_dropped(impatient_board):
    import socket

    port = impatient_board
    with socket.create_connection(("127.0.0.1", port), timeout=15) as connection:
        connection.sendall(post_headers(port, 100) + b'{"act')
        started = time.monotonic()
        while connection.recv(65536):  # the server gives up on the body and closes
            pass
        assert time.monotonic() - started < 10
    code, answer = request(port, "GET", "/api/state", None, own(port))
    assert code == 200 and answer["moves"] == []


def test_a_client_that_drips_its_body_is_refused_when_the_body_is_late(impatient_board):
    import socket

    port = impatient_board
    with socket.create_connection(("127.0.0.1", port), timeout=15) as connection:
        connection.sendall(post_headers(port, 100))
        started, answer = time.monotonic(), b""
        for byte in b'{"action": 24' + b" " * 80:  # a byte every 0.3 s: each read well inside the second
            time.sleep(0.3)
            try:
                connection.sendall(bytes([byte]))
            except OSError:  # the server has answered and closed
                break
            if time.monotonic() - started > 10:
                break
        connection.settimeout(5)
        while chunk := connection.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.0 408") and b"did not arrive within 1 s" in answer, answer[:200]
    assert time.monotonic() - started < 5  # was: read on while each byte came within the timeout
    code, state = request(port, "GET", "/api/state", None, own(port))
    assert code == 200 and state["moves"] == []


def _trickle(connection, data: bytes, *, pause: float, budget: float) -> tuple[bytes, float]:
    """Send `data` a byte every `pause` s until the server closes (or `budget` s pass); then
    (what the server answered, seconds from the first byte to its close)."""
    started, answer = time.monotonic(), b""
    for byte in data:
        if time.monotonic() - started > budget:
            break
        try:
            connection.sendall(bytes([byte]))
        except OSError:  # closed by the server
            break
        time.sleep(pause)
    connection.settimeout(budget)
    try:
        while chunk := connection.recv(65536):
            answer += chunk
    except OSError:
        pass
    return answer, time.monotonic() - started


def test_a_client_that_trickles_its_headers_is_cut_off_at_the_request_deadline(impatient_board):
    """One header byte every 0.2 s (each read well inside the socket's 1 s) does not hold a
    thread past the whole request's deadline: the server answers 408 and closes."""
    import socket

    port = impatient_board
    headers = f"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: {'z' * 60}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port), timeout=15) as connection:
        answer, seconds = _trickle(connection, headers, pause=0.2, budget=8.0)
    assert answer.startswith(b"HTTP/1.0 408") and b"headers did not arrive within 1 s" in answer, answer[:200]
    assert seconds < 4, seconds  # was: every header read on, 20 s and more
    code, state = request(port, "GET", "/api/state", None, own(port))
    assert code == 200 and state["moves"] == []


def test_one_client_address_holds_a_bounded_number_of_connections(impatient_board, monkeypatch):
    """Connections from 127.0.0.2 over its limit are refused at once with 503; another address
    (127.0.0.1) is still served meanwhile, and once the idle ones are cut off 127.0.0.2 is too."""
    import socket

    from azero.web import guard

    monkeypatch.setattr(guard, "MAX_CONNECTIONS_PER_CLIENT", 4)
    port = impatient_board
    held = []
    try:
        for _ in range(4):  # idle connections: they send nothing
            held.append(socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.2", 0)))
        time.sleep(0.2)  # (the server takes them in order)
        with socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.2", 0)) as extra:
            extra.sendall(f"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            answer = b""
            while chunk := extra.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.0 503") and b"4 connections open" in answer, answer[:200]
        code, state = request(port, "GET", "/api/state", None, own(port))  # from 127.0.0.1
        assert code == 200 and state["moves"] == []
    finally:
        for connection in held:
            connection.close()
    time.sleep(0.5)
    deadline = time.monotonic() + 5
    while True:  # the held connections' threads end (closed by us, or cut off at 1 s)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=("127.0.0.2", 0))
        try:
            connection.request("GET", "/api/state", headers=own(port))
            status = connection.getresponse().status
        finally:
            connection.close()
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == 200


def test_a_client_that_resets_mid_request_costs_no_traceback():
    import socket
    import struct

    game = games.make("gomoku", size=7, k=4)
    gui = Gui(game, Engine(game, "random"), human=0)
    server = start_server(gui, 0)
    failures = []
    server.handle_error = lambda request, address: failures.append(traceback.format_exc())
    port = server.server_address[1]
    try:
        connection = socket.create_connection(("127.0.0.1", port), timeout=15)
        connection.sendall(post_headers(port, 100) + b'{"act')
        time.sleep(0.3)  # the handler is reading the body
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        connection.close()  # a reset, not a goodbye
        time.sleep(0.5)
        code, answer = request(port, "GET", "/api/state", None, own(port))
        assert code == 200 and answer["moves"] == []
        assert failures == []
    finally:
        gui.close()
        server.shutdown()
