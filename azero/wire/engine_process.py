"""An external engine as a process that speaks a line protocol: what the gtp: and pbrain: players share.

`EngineProcess(argv, label)` starts the program with pipes; `send(line)` writes a command;
`readline(command, deadline)` returns its next output line, or raises UserError naming the
engine when it says nothing before the deadline (monotonic seconds), prints a line of more
than MAX_LINE characters, or has stopped (with the exit code and the last lines of its
stderr). A reader thread hands the lines over, so that a silent engine meets its deadline;
at most QUEUED_LINES lines wait to be read, and beyond that the engine's pipe fills and it
waits for us, so an engine that talks endlessly costs no memory. `stop()` ends the process:
its stdin is closed, then it is terminated, then killed.
"""

from __future__ import annotations

import queue
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
import weakref

from ..errors import UserError
from .line_reader import TooLong, bounded_lines

MAX_LINE = 100_000  # characters a line of an engine's output may hold (its ending not counted)
QUEUED_LINES = 100  # lines read ahead of the client
STDERR_TAIL = 1 << 16  # bytes of a dead engine's stderr read for its last words


def engine_command(command: str, player: str, example: str,
                   folders: tuple[str, ...] = ()) -> tuple[list[str], str]:
    """An external engine's command line, the text after `player:` in its spec, split like a shell
    would (quotes group words; no shell runs; a command quoted whole as one word, gtp:"prog --opt",
    is split again): (its words as given, the program's path, found on PATH, then in `folders`).
    UserError naming the player if it cannot be read or the program found."""
    try:
        argv = shlex.split(command)
        if len(argv) == 1 and any(c.isspace() for c in argv[0]):
            argv = shlex.split(argv[0])
    except ValueError as error:
        raise UserError(f"{player}: cannot read the command {command!r}: {error}") from None
    if not argv:
        raise UserError(f"{player} needs the engine's command line, e.g. {example}")
    program = shutil.which(argv[0]) or (shutil.which(argv[0], path=":".join(folders)) if folders else None)
    if program is None:
        looked = "PATH" + "".join(f" and {folder}" for folder in folders)
        raise UserError(f"{player}: cannot find the program {argv[0]!r} (looked on {looked})")
    return argv, program


class EngineProcess:
    """An external engine's process; `label` names it in every error (e.g. its player spec)."""

    def __init__(self, argv: list[str], label: str):
        self.label = label
        self.errors = tempfile.TemporaryFile()  # the engine's stderr, quoted if it dies
        try:
            # bytes that are not UTF-8 become U+FFFD: an unreadable answer, not the end of the output
            self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors,
                                            text=True, bufsize=1, encoding="utf-8", errors="replace")
        except OSError as error:
            self.errors.close()
            raise UserError(f"{label}: cannot start {argv[0]}: {error.strerror}") from None
        stopped = threading.Event()  # set when the engine is stopped: the reader thread then ends too
        self._finalizer = weakref.finalize(self, _stop, self.process, stopped)
        self._lines: queue.Queue[str | TooLong] = queue.Queue(maxsize=QUEUED_LINES)
        threading.Thread(target=_pump, args=(self.process.stdout, self._lines, stopped), daemon=True).start()

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def send(self, line: str, command: str | None = None) -> None:
        """Write one line to the engine; `command` names what is being asked if it has died."""
        try:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            self.died(command or line)

    def readline(self, command: str, deadline: float, timeout: float) -> str:
        """The engine's next line (with its ending) answering `command`; "" once its output has
        ended. `timeout` (seconds) is what the error says was allowed."""
        try:
            line = self._lines.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            self.stop()
            raise UserError(f"{self.label} did not answer {command!r} within {timeout:g} s; stopped it") from None
        if isinstance(line, TooLong):
            self.stop()
            raise UserError(f"{self.label} printed a line longer than {line.limit:,} characters answering "
                            f"{command!r}; stopped it")
        if not line:
            self._lines.put(line)  # the end of the output stays the end for later reads (the pump has ended)
        return line

    def died(self, command: str):
        """Raise the UserError for an engine that stopped while answering `command`."""
        try:
            code = self.process.wait(timeout=3)
        except subprocess.TimeoutExpired:
            code = None
        self.errors.seek(0, 2)
        self.errors.seek(max(self.errors.tell() - STDERR_TAIL, 0))
        tail = self.errors.read().decode(errors="replace").strip().splitlines()[-3:]
        raise UserError(f"{self.label} stopped (exit code {code}) while answering {command!r}"
                        + (f": {' / '.join(tail)}" if tail else ""))

    def stop(self) -> None:
        """End the process (at once if it has quit; else terminate, then kill)."""
        self._finalizer()

    def close(self) -> None:
        self.stop()
        self.errors.close()


def _pump(stream, lines: queue.Queue, stopped: threading.Event) -> None:
    """Copy an engine's output lines (TooLong for a line over MAX_LINE) into a queue, waiting
    while it is full; an empty string marks its end. Ends when the engine is stopped."""

    def hand_over(line) -> bool:
        while not stopped.is_set():
            try:
                lines.put(line, timeout=0.5)
                return True
            except queue.Full:
                continue
        return False

    try:
        for line in bounded_lines(stream, MAX_LINE):
            if not hand_over(line):
                return
    except (OSError, ValueError):
        pass
    hand_over("")


def _stop(process: subprocess.Popen, stopped: threading.Event) -> None:
    """End an engine process: it should have quit, or quit at the end of its input; else terminate, then kill."""
    stopped.set()
    try:
        process.stdin.close()
    except OSError:
        pass
    for stop in (None, process.terminate, process.kill):
        if stop is not None:
            stop()
        try:
            process.wait(timeout=3)
            return
        except subprocess.TimeoutExpired:
            continue
