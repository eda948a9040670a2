"""A JSON-lines analysis engine (in the manner of KataGo's analysis engine).

One request per line on stdin, one answer per line on stdout, each echoing the id:

    {"id": "a1", "moves": ["h8", "h9"], "simulations": 400}
    -> {"id": "a1", "to_play": "first", "best_move": "g8", "winrate": 0.61, "visits": 400,
        "moves": [{"move": "g8", "visits": 180, "winrate": 0.63}, ...], "pv": ["g8", "j10", ...]}

Keys of a request: id (any JSON value, echoed), moves (the game so far, as move text;
default empty), simulations or seconds (default: the engine's budget), top (how many
moves to list, default 5). Budgets are limited (azero/players/base.py: simulations
1..100,000,000, seconds up to 3600; a search given simulations alone also stops after
3600 seconds) and a search's tree by the tree memory limit (azero/search/memory.py).
A move the search proved (search.solver) carries "proof": "wins in 3" ("loses in N", "draws in
N": plies to the end, the move included), and so does the answer when its best move is
proven (session.describe_analysis). An engine that resigns (an external one, `gtp:...`)
answers "best_move": "resign". A bad
request gets {"id": ..., "error": "..."}, naming the limit where it is one, and the engine
keeps reading. {"id": ..., "quit": true} or the end of input stops it.
"""

from __future__ import annotations

import json
import math
from typing import TextIO

from games import GameError

from ..errors import UserError, internal_error, is_int
from ..players.base import MAX_SECONDS, RESIGN
from ..session import Engine, GameSession, check_budget, describe_analysis
from ..wire.line_reader import serve_lines

KNOWN = {"id", "moves", "simulations", "seconds", "top", "quit"}


def answer(engine: Engine, request: dict) -> dict:
    unknown = sorted(set(request) - KNOWN)
    if unknown:
        raise UserError(f"unknown key {', '.join(unknown)}; known keys: {', '.join(sorted(KNOWN))}")
    moves = request.get("moves", [])
    if not isinstance(moves, list) or not all(isinstance(m, str) for m in moves):
        raise UserError("moves must be a list of move texts, e.g. [\"h8\", \"h9\"]")
    budget = {key: request[key] for key in ("simulations", "seconds") if key in request}
    if isinstance(budget.get("simulations"), float) and budget["simulations"].is_integer():
        budget["simulations"] = int(budget["simulations"])  # JSON's 1e3
    check_budget(**budget)
    if "simulations" in budget and "seconds" not in budget and "seconds" not in engine.budget():
        budget["seconds"] = MAX_SECONDS  # a search of simulations alone ends within the hour too
    top = request.get("top", 5)
    if not is_int(top) or top < 1:
        raise UserError("top must be a positive integer")
    session = GameSession(engine.game)
    session.set_moves(moves)
    if session.over:
        raise UserError(f"the game is over after these moves ({session.result_text()})")
    analysis = engine.think(session.state, **budget)
    to_play = "first" if session.to_play == 0 else "second"
    if int(analysis.action[0]) == RESIGN:  # an external engine behind `gtp:` gives the game up here
        return {"to_play": to_play, "best_move": "resign"}
    return {"to_play": to_play, **describe_analysis(engine.game, analysis, top=top)}


MAX_DIGITS = 4300  # Python's own limit for int() of a text; no request needs a longer number


class _Refused:
    """A number JSON may write but a request may not hold (NaN, Infinity, 1e400, 5,000
    digits), kept where it stood while the request's id is read, then refused: the error
    reply carries the id like any other."""

    __slots__ = ("message",)

    def __init__(self, message: str):
        self.message = message


def _constant(name: str) -> _Refused:
    return _Refused(f"{name} is not a number a request may hold (JSON has no {name})")


def _float(text: str) -> float | _Refused:
    value = float(text)
    return value if math.isfinite(value) else _Refused(f"{text} is too large a number for a request")


def _int(text: str) -> int | _Refused:
    if len(text) > MAX_DIGITS:
        return _Refused("cannot read request as JSON: a number with too many digits")
    return int(text)


def _first_refused(value) -> _Refused | None:
    """The first refused number anywhere in a parsed JSON value (None: none), without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Refused):
            return item
        if isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return None


class RequestError(UserError):
    """A request refused after its id was read: the reply echoes `request_id`."""

    def __init__(self, message: str, request_id=None):
        super().__init__(message)
        self.request_id = request_id


def read_request(line: str) -> dict:
    """One request line as a dict; UserError saying why it cannot be one (a RequestError
    carrying the id where the line is an object with a readable id)."""
    try:
        request = json.loads(line, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except json.JSONDecodeError as error:
        raise UserError(f"cannot read request as JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:
        raise UserError("cannot read request as JSON: nested too deeply") from None
    if not isinstance(request, dict):
        raise UserError("a request is a JSON object, e.g. {\"id\": 1, \"moves\": []}")
    refused = _first_refused(request)
    if refused is not None:
        request_id = request.get("id")
        raise RequestError(refused.message, None if _first_refused(request_id) else request_id)
    return request


def serve(engine: Engine, source: TextIO, sink: TextIO) -> int:
    def reply(message: dict) -> None:
        try:  # JSON has no NaN or Infinity: a value that is not finite (a network's overflow) is an error
            text = json.dumps(message, allow_nan=False)
        except ValueError:
            text = json.dumps({"id": message.get("id"), "error": "internal error: the analysis holds a value that "
                               "is not a finite number (the network's output overflowed?)"})
        sink.write(text + "\n")
        sink.flush()

    def handle(line: str) -> bool:
        if not line.strip():
            return True
        request_id = None
        try:
            request = read_request(line)
            request_id = request.get("id")
            if not isinstance(request.get("quit", False), bool):
                raise UserError("quit takes true (stop the engine) or false")
            if request.get("quit"):
                if set(request) - {"id", "quit"}:
                    raise UserError('a request that quits has no key but id: {"id": ..., "quit": true}')
                reply({"id": request_id, "quit": True})
                return False
            message = {"id": request_id, **answer(engine, request)}
        except (UserError, GameError) as error:
            message = {"id": getattr(error, "request_id", request_id), "error": str(error)}
        except Exception as error:  # a bug must not end the engine either
            message = {"id": request_id, "error": internal_error(error)}
        reply(message)
        return True

    # a line too long to read: its id, if any, is not read, so the reply's id is null
    serve_lines(source, handle, lambda line: reply({"id": None, "error": line.message}))
    return 0
