"""python scripts/evaluate.py: a match between two players, with Elo and its 95% interval (see match.py)."""

from __future__ import annotations

from ..errors import cli_entry
from .match import run


@cli_entry
def main(argv=None) -> int:
    return run(argv, prog="evaluate.py", default_games=100)
