"""Who may drive the browser board's server: its own page on this machine, and programs, nobody else.

The server listens on 127.0.0.1, but any web page the user visits can send requests
there. So every request is checked before it is answered:

* Host must be 127.0.0.1:PORT or localhost:PORT. A page on another site that points its
  own name at 127.0.0.1 (DNS rebinding) sends its own name and is refused, so it can read
  nothing, not even the page.
* A state-changing request (POST) must carry a JSON body (Content-Type: application/json),
  which no HTML form can send and which a script on another origin can send only after a
  CORS preflight this server never grants; and where the browser says who sends it
  (Origin, Sec-Fetch-Site), that must be the board's own page. A request with neither
  header comes from a program, not from a page in a browser (browsers send Origin with
  every POST from a page).
* A body is read only up to MAX_BODY bytes (MAX_SGF_BODY for an SGF file) and only as long as Content-Length says; a
  connection that stalls for READ_SECONDS is closed, and a request (its line, headers and body)
  not all there READ_SECONDS after the server began to wait for it is refused with 408 and its
  connection closed (a client sending a byte now and then would hold a thread for ever).
* One client address holds at most MAX_CONNECTIONS_PER_CLIENT connections at once; more are
  answered 503 and closed (a browser opens six to a host), so one tab cannot take every thread.
"""

from __future__ import annotations

import socket
import threading

from games.options import is_whole_number

MAX_BODY = 64 << 10  # bytes; the board's requests are a few dozen
MAX_SGF_BODY = 8 << 20  # bytes of an SGF upload: the GUI's 1,000,000 characters, JSON-escaped
READ_SECONDS = 20.0  # a connection that sends nothing for this long is closed; a whole request's time
MAX_CONNECTIONS_PER_CLIENT = 16


class Refused(Exception):
    """A request the server will not carry out: an HTTP status and a message for the JSON answer."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def own_hosts(port: int) -> tuple[str, ...]:
    """The Host values (and, after http://, the Origins) that name this server; browsers leave
    HTTP's default port 80 out of both."""
    hosts = f"127.0.0.1:{port}", f"localhost:{port}"
    return hosts + ("127.0.0.1", "localhost") if port == 80 else hosts


def check_host(headers, port: int) -> None:
    """Refused unless the request names this server (no DNS rebinding)."""
    host = (headers.get("Host") or "").strip().lower()
    if host not in own_hosts(port):
        raise Refused(403, f"this server answers requests for {' or '.join(own_hosts(port))} only, not "
                      f"{host or 'a request without Host'}")


def check_sender(headers, port: int) -> None:
    """Refused unless a state-changing request comes from the board's own page (or a program)."""
    origin = headers.get("Origin")
    if origin is not None and origin.strip().lower() not in tuple(f"http://{host}" for host in own_hosts(port)):
        raise Refused(403, f"requests from {origin.strip() or 'an empty origin'} may not change the board; "
                      "only its own page may")
    site = headers.get("Sec-Fetch-Site")
    if site is not None and site.strip().lower() != "same-origin":
        raise Refused(403, f"a {site.strip()} request may not change the board; only its own page may")
    kind = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise Refused(415, f"send the body as JSON with Content-Type: application/json, not {kind or 'none'}")


def body_length(headers, limit: int = MAX_BODY) -> int:
    """The body's size from Content-Length, checked against `limit` bytes (0 without one)."""
    if headers.get("Transfer-Encoding"):
        raise Refused(411, "send the body with a Content-Length, not in chunks")
    text = (headers.get("Content-Length") or "0").strip()
    if not is_whole_number(text):
        raise Refused(400, f"Content-Length {text!r} is not a number of bytes")
    length = int(text)
    if length > limit:
        raise Refused(413, f"the body is {length:,} bytes; this server reads at most {limit:,} here")
    return length


class RequestDeadline:
    """The time a request has to arrive whole: at `seconds` after it is armed, the connection's
    reading side is shut (its blocked read returns at once, with what came so far) unless
    `cancel` came first; `expired` says which. The writing side stays open for the answer."""

    def __init__(self, connection: socket.socket, seconds: float):
        self.connection, self.seconds, self.expired = connection, seconds, False
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        with self._lock:
            if self._timer is None:
                return
            self.expired = True
        try:
            self.connection.shutdown(socket.SHUT_RD)
        except OSError:  # the client has gone already
            pass

    def cancel(self) -> bool:
        """Stop the clock (the request is all read); False if it had run out."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            return not self.expired


class ClientConnections:
    """The open connections of each client address, at most `limit` (MAX_CONNECTIONS_PER_CLIENT
    when None, read when asked) at once."""

    def __init__(self, limit: int | None = None):
        self.limit = limit
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def enter(self, address: str) -> bool:
        """Count one more connection of `address`; False (nothing counted) if it has its most."""
        limit = MAX_CONNECTIONS_PER_CLIENT if self.limit is None else self.limit
        with self._lock:
            if self._open.get(address, 0) >= limit:
                return False
            self._open[address] = self._open.get(address, 0) + 1
            return True

    def leave(self, address: str) -> None:
        with self._lock:
            left = self._open.get(address, 0) - 1
            if left > 0:
                self._open[address] = left
            else:
                self._open.pop(address, None)
