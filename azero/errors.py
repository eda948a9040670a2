"""User-facing errors: one readable line on the command line, never a traceback."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
import sys

from games import GameError


class UserError(ValueError):
    """A mistake in what the user asked for: a bad option, a missing file, a wrong checkpoint."""


class Stopped(KeyboardInterrupt):
    """A long command stopped cleanly by a signal (Ctrl-C's SIGINT, or SIGTERM), having said so and kept
    what it finished: the command exits with 128 + the signal's number (130, 143), as a shell reports
    a process the signal ended, so `train.py && evaluate.py` and job schedulers tell a stop from a finish."""

    def __init__(self, signal_number: int):
        super().__init__(signal_number)
        self.signal_number = signal_number

    @property
    def exit_status(self) -> int:
        return 128 + self.signal_number


USER_ERRORS = (UserError, GameError)
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)  # what Path.exists() takes for "not there"


def exists(path) -> bool:
    """Path.exists(), but a path the system cannot look up (a name over 255 bytes, a folder not
    ours to enter), which Python 3.11's exists() raises as an OSError, is a UserError with the
    system's reason."""
    try:
        os.stat(path)
    except OSError as error:
        if error.errno in _ABSENT:
            return False
        raise UserError(f"cannot look up {path}: {error.strerror or error}") from None
    return True


def regular_file(path, what: str, error: type[UserError] = UserError) -> None:
    """Raise `error` with one line unless `path` is a regular file that can be looked up: not
    there, a folder, a pipe or a device (which a reader would wait on for ever), or a path the
    system refuses (no permission, a name too long), each said as such ("checkpoint not
    found: ...", "... is a folder, not a config file")."""
    try:
        mode = os.stat(path).st_mode
    except OSError as failure:
        if failure.errno in (errno.ENOENT, errno.ENOTDIR):
            raise error(f"{what} not found: {path}") from None
        raise error(f"cannot read the {what} {path}: {failure.strerror or failure}") from None
    if stat.S_ISDIR(mode):
        raise error(f"{path} is a folder, not a {what}")
    if not stat.S_ISREG(mode):
        raise error(f"{path} is not a {what}: it is not a regular file")


@contextlib.contextmanager
def naming_file(path):
    """An OSError inside the block that names no file (write, flush and fsync give none: a full
    disk's "No space left on device") is raised again naming `path`."""
    try:
        yield
    except OSError as error:
        if error.filename is not None or error.errno is None:
            raise
        raise OSError(error.errno, error.strerror, str(path)) from None


def is_int(value) -> bool:
    """Whether a value read from JSON or TOML is a whole number: an int and not a bool (Python
    counts True as the int 1, JSON's true is no count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value) -> bool:
    """Whether a value read from JSON or TOML is a number: an int or a float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def internal_error(error: BaseException) -> str:
    """How a serving process (GTP, Piskvork, the analysis engine, the browser board) words a fault
    of ours in its answer, before it goes on serving."""
    return f"internal error: {type(error).__name__}: {error}"


def _flush_stdout() -> bool:
    """Flush stdout; False if its reader has gone (then stdout points at /dev/null, so that
    the interpreter's own flush at exit has nothing to complain about)."""
    if sys.stdout is None:  # started with stdout closed
        return True
    try:
        sys.stdout.flush()
        return True
    except BrokenPipeError:
        pass
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass
    finally:
        os.close(devnull)
    return False


def cli_entry(main):
    """Wrap a command-line `main(argv=None) -> int | None`: user errors print one line and exit 2; a reader
    of our output that goes away (`train.py --help-config | head`) ends the command quietly, with 1 where it
    would have succeeded."""

    @functools.wraps(main)
    def wrapper(argv=None):
        try:
            code = main(argv) or 0
        except SystemExit:  # argparse's --help and usage errors
            _flush_stdout()
            raise
        except BrokenPipeError:
            code = 1
        except USER_ERRORS as error:
            print(f"error: {error}", file=sys.stderr)
            code = 2
        except Stopped as stop:  # the command has said what it kept
            code = stop.exit_status
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            code = 130
        if not _flush_stdout() and code == 0:
            code = 1
        return code

    return wrapper
