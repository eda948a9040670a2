"""Reading a line protocol without trusting the other side's line lengths.

`for line in stream` reads each line whole before anything can look at it: a controller (or an
external engine) that sends one endless line grows the process without bound. `bounded_lines`
reads at most `limit` characters of a line (its ending not counted); a longer line is handed on
as a `TooLong` holding its first characters, so that the protocol can refuse it in its own
form at once; the rest of it is read and dropped in pieces before the next line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, TextIO

PROTOCOL_LINE = 1_000_000  # characters a line to our engines may hold (a 19x19 board in any form is far less)
DRAIN_PIECE = 1 << 16  # characters read at a time while dropping the rest of a long line


@dataclass(frozen=True)
class TooLong:
    """A line over the limit: its first `limit` characters (`start`) and what the reader says of it."""

    start: str
    limit: int

    @property
    def message(self) -> str:
        return f"a line longer than {self.limit:,} characters; refused (the line was read and dropped)"


def ending(line: str) -> int:
    """The length of the line's ending: 2 for "\\r\\n", 1 for "\\n", else 0."""
    return 2 if line.endswith("\r\n") else 1 if line.endswith("\n") else 0


def bounded_lines(stream: TextIO, limit: int = PROTOCOL_LINE) -> Iterator[str | TooLong]:
    """The lines of `stream` (with their endings) up to its end; a line of more than `limit`
    characters, not counting its ending, comes as a TooLong instead as soon as it is known to
    be one, and the rest of it is read and dropped before the next line."""
    while True:
        piece = stream.readline(limit + 2)  # the limit, and room for a "\r\n" ending
        if not piece:
            return
        if piece.endswith("\n") or len(piece) < limit + 2:  # a whole line (or the last, unended one)
            if len(piece) - ending(piece) > limit:
                yield TooLong(piece[:limit], limit)
            else:
                yield piece
            continue
        yield TooLong(piece[:limit], limit)  # at once: the answer waits for no more of the line
        while True:  # then drop the rest of it, a piece at a time
            rest = stream.readline(DRAIN_PIECE)
            if not rest or rest.endswith("\n"):
                break


def serve_lines(stream: TextIO, handle: Callable[[str], bool], refuse: Callable[[TooLong], None]) -> None:
    """A protocol's loop: each line of `stream` goes to `handle` until it returns False (quit)
    or the input ends; a line too long to read goes to `refuse` (bounded_lines)."""
    for line in bounded_lines(stream):
        if isinstance(line, TooLong):
            refuse(line)
        elif not handle(line):
            return
