"""A JSON-lines analysis engine (in the manner of KataGo's analysis engine).

One request per line on stdin, one answer per line on stdout, each echoing the id:

    {"id": "a1", "moves": ["h8", "h9"], "simulations": 400}
    -> {"id": "a1", "to_play": "first", "best_move": "g8", "winrate": 0.61, "visits": 400,
        "moves": [{"move": "g8", "visits": 180, "winrate": 0.63}, ...], "pv": ["g8", "j10", ...]}

Keys of a request: id (any JSON value, echoed), moves (the game so far, as move text;
default empty), simulations or seconds (default: the engine's budget), top (how many
moves to list, default 5). Budgets are limited (azero/player.py: simulations
1..100,000,000, seconds up to 3600) and a search's tree by the tree memory limit
(azero/search/memory.py). A bad request gets {"id": ..., "error": "..."}, naming the
limit where it is one, and the engine keeps reading. {"id": ..., "quit": true} or the end of input stops it.
"""

from __future__ import annotations

import json
import math
from typing import TextIO

from games import GameError

from ..errors import UserError, internal_error
from ..session import Engine, GameSession, check_budget, describe_analysis

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
    top = request.get("top", 5)
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise UserError("top must be a positive integer")
    session = GameSession(engine.game)
    session.set_moves(moves)
    if session.over:
        raise UserError(f"the game is over after these moves ({session.result_text()})")
    info = describe_analysis(engine.game, engine.think(session.state, **budget), top=top)
    return {"to_play": "first" if session.to_play == 0 else "second", **info}


def _no_constant(name: str):
    raise UserError(f"{name} is not a number a request may hold (JSON has no {name})")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise UserError(f"{text} is too large a number for a request")
    return value


def read_request(line: str) -> dict:
    """One request line as a dict; UserError saying why it cannot be one."""
    try:
        request = json.loads(line, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as error:
        raise UserError(f"cannot read request as JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:
        raise UserError("cannot read request as JSON: nested too deeply") from None
    except UserError:  # (_no_constant's)
        raise
    except ValueError:  # json reads integers with int(), which refuses over 4,300 digits
        raise UserError("cannot read request as JSON: a number with too many digits") from None
    if not isinstance(request, dict):
        raise UserError("a request is a JSON object, e.g. {\"id\": 1, \"moves\": []}")
    return request


def serve(engine: Engine, source: TextIO, sink: TextIO) -> int:
    for line in source:
        if not line.strip():
            continue
        request_id = None
        try:
            request = read_request(line)
            request_id = request.get("id")
            if not isinstance(request.get("quit", False), bool):
                raise UserError("quit takes true (stop the engine) or false")
            if request.get("quit"):
                if set(request) - {"id", "quit"}:
                    raise UserError('a request that quits has no key but id: {"id": ..., "quit": true}')
                sink.write(json.dumps({"id": request_id, "quit": True}) + "\n")
                sink.flush()
                return 0
            reply = {"id": request_id, **answer(engine, request)}
        except (UserError, GameError) as error:
            reply = {"id": request_id, "error": str(error)}
        except Exception as error:  # a bug must not end the engine either
            reply = {"id": request_id, "error": internal_error(error)}
        sink.write(json.dumps(reply) + "\n")
        sink.flush()
    return 0
