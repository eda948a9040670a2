"""Tiny training runs for tests: a few seconds an iteration on two cores."""

from __future__ import annotations

import signal

# The settings every tiny run starts from (tic-tac-toe unless a test says otherwise).
TINY = {
    "selfplay.games": 16, "selfplay.positions_per_iteration": 150, "search.simulations": 8,
    "train.min_replay": 64, "train.batch_size": 32, "evaluation.every": 0, "evaluation.games": 4,
    "evaluation.ladder": "[10]", "evaluation.simulations": 4, "run.keep_every": 2,
}


def tiny_settings(changes: dict | None = None) -> list[str]:
    """The tiny run's settings with `changes`, as KEY=VALUE overrides (load_config's, --set's)."""
    return [f"{key}={value}" for key, value in {**TINY, **(changes or {})}.items()]


def tiny_sets(changes: dict | None = None) -> list[str]:
    """The tiny run's settings with `changes`, as --set arguments (train.py's, ablate.py's)."""
    return [arg for setting in tiny_settings(changes) for arg in ("--set", setting)]


def tiny_args(changes: dict | None = None, game: str = "tictactoe") -> list[str]:
    """scripts/train.py's arguments for a tiny run of `game` with `changes` to its settings."""
    return ["--game", game, "--no-progress", *tiny_sets(changes)]


def ctrl_c_default() -> None:
    """A child process's Ctrl-C as a terminal gives it (KeyboardInterrupt), for Popen's
    preexec_fn: a process started in the background of a non-interactive shell (`cmd &`,
    nohup, a CI step sent there) inherits SIGINT ignored, and Python then leaves it ignored,
    so a test's SIGINT would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
