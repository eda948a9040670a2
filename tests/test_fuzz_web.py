"""Property-based fuzzing of the browser board's HTTP API with raw requests: any method, path,
headers and body. Every request gets an HTTP answer (a JSON error for anything refused), no
request raises in the server, and the page's next request still works.
Profiles and the long form: tests/conftest.py."""

from __future__ import annotations

import json
import socket
import traceback

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import games  # noqa: E402
from azero.session import Engine  # noqa: E402
from azero.web.server import Gui, start_server  # noqa: E402


@pytest.fixture(scope="module")
def board():
    game = games.make("gomoku", size=7, k=4)
    gui = Gui(game, Engine(game, "random"), human=0)
    server = start_server(gui, 0)
    failures: list[str] = []
    server.handle_error = lambda request, address: failures.append(traceback.format_exc())
    yield gui, server.server_address[1], failures
    gui.close()
    server.shutdown()


TEXT = st.text(st.characters(codec="latin-1", exclude_characters="\r\n"), max_size=30)
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**15), 10**15), st.floats(allow_nan=False), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)), max_leaves=6)
BODIES = st.one_of(
    st.fixed_dictionaries({}, optional={
        "action": st.one_of(st.integers(-3, 60), JSON_VALUES),
        "game": st.one_of(st.sampled_from(["gomoku:size=7,k=4", "tictactoe", "connect4", "nim", "go:size=5",
                                           "othello:size=6", "gomoku:size=99", ""]), JSON_VALUES),
        "human": st.one_of(st.sampled_from([0, 1, 2, -1, True]), JSON_VALUES),
        "simulations": st.one_of(st.integers(-2, 10**13), JSON_VALUES)}).map(lambda d: json.dumps(d).encode()),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()), st.binary(max_size=80))


@st.composite
def raw_request(draw, port: int) -> bytes:
    method = draw(st.one_of(st.sampled_from(["GET", "POST", "PUT", "HEAD", "OPTIONS", "DELETE", "get"]), TEXT))
    path = draw(st.one_of(st.sampled_from(["/", "/api/state", "/api/move", "/api/undo", "/api/new", "/api/sgf",
                                           "/app.js", "/style.css", "/api/state?x=1", "//", "/../etc/passwd"]), TEXT))
    own = f"127.0.0.1:{port}"
    headers = []
    host = draw(st.one_of(st.sampled_from([own, f"localhost:{port}", f"evil.example:{port}", "127.0.0.1", ""]),
                          st.none(), TEXT))
    if host is not None:
        headers.append(("Host", host))
    origin = draw(st.one_of(st.none(), st.sampled_from([f"http://{own}", "http://evil.example", "null"]), TEXT))
    if origin is not None:
        headers.append(("Origin", origin))
    kind = draw(st.one_of(st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain"]),
                          st.none(), TEXT))
    if kind is not None:
        headers.append(("Content-Type", kind))
    body = draw(BODIES)
    length = draw(st.one_of(st.just(str(len(body))), st.none(), st.integers(-5, 10**12).map(str), TEXT))
    if length is not None:
        headers.append(("Content-Length", length))
    headers += draw(st.lists(st.tuples(st.sampled_from(["Sec-Fetch-Site", "Transfer-Encoding", "X"]), TEXT),
                             max_size=2))
    version = draw(st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/9", ""]))
    head = f"{method} {path} {version}".strip() + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    return method, head.encode("latin-1") + b"Connection: close\r\n\r\n" + body


def exchange(port: int, data: bytes) -> bytes:
    """Send `data`, end the sending side, and read the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as connection:
        connection.sendall(data)
        connection.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


@given(data=st.data())
def test_the_board_answers_any_request_and_keeps_serving(board, data):
    gui, port, failures = board
    method, request = data.draw(raw_request(port))
    answer = exchange(port, request)
    assert not failures, failures[-1]
    if answer.startswith(b"HTTP/"):
        head, _, body = answer.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        assert 200 <= status < 500 or status in (501, 505), head  # no 500: an internal error is a bug
        if status >= 400 and method != "HEAD":
            assert "error" in json.loads(body), body
    elif answer:  # an HTTP/0.9 request ("GET /path"): the answer is the body alone
        assert "error" in json.loads(answer), answer
    ok = exchange(port, f"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
    assert ok.startswith(b"HTTP/1.0 200") and json.loads(ok.partition(b"\r\n\r\n")[2])["game"], ok[:200]


def test_an_http_0_9_request_gets_an_error_not_the_page(board):
    """Found by the long form: "GET /" without a version was answered with the page itself."""
    _, port, failures = board
    answer = exchange(port, f"GET /\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
    assert "HTTP/0.9" in json.loads(answer)["error"] and not failures
