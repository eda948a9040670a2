"""A command's `main` run in the test's own process, for answers that need no process of their own
(refused options above all): a script's process spends seconds importing torch, and the script is
`sys.exit(main())` around the same `cli_entry`-wrapped function, so the exit code, the one-line
message and the missing traceback are the same either way. Tests that need a real process (signals,
pipes, stdin protocols, the installed scripts) still start one."""

from __future__ import annotations

import contextlib
import importlib
import io
import signal
from dataclasses import dataclass
from pathlib import Path

from azero.cli import ALIASES


@dataclass
class Outcome:
    """What subprocess.run would have captured."""
    returncode: int
    stdout: str
    stderr: str


class RanOver(BaseException):
    """A command run here outlived its timeout (a BaseException: no `except Exception` in the
    command catches it, as nothing in a command catches the subprocess's kill)."""


def run_here(script: str, *args: str, timeout: int = 300) -> Outcome:
    """`python scripts/SCRIPT ARGS...` run in this process (script as "evaluate.py" or "evaluate";
    "match.py" is evaluate's other name). An exception that escapes `main` fails the test, as a
    traceback would; so does a command still running after `timeout` seconds (subprocess.run's
    timeout; SIGALRM, so from the main thread only)."""
    name = Path(script).stem
    module = importlib.import_module(f"azero.cli.{ALIASES.get(name, name)}")
    out, err = io.StringIO(), io.StringIO()

    def ran_over(signum, frame):
        raise RanOver(f"{script} {' '.join(args)} still ran after {timeout} s")

    previous = signal.signal(signal.SIGALRM, ran_over)
    signal.alarm(timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = module.main(list(args))
            except SystemExit as stop:  # argparse's usage errors (2) and --help (0)
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return Outcome(code, out.getvalue(), err.getvalue())
