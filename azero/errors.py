"""User-facing errors: one readable line on the command line, never a traceback."""

from __future__ import annotations

import functools
import os
import sys

from games import GameError


class UserError(ValueError):
    """A mistake in what the user asked for: a bad option, a missing file, a wrong checkpoint."""


USER_ERRORS = (UserError, GameError)


def cli_entry(main):
    """Wrap a command-line `main(argv=None) -> int | None`: user errors print one line and exit 2; a reader
    of our output that goes away (`train.py --help-config | head`) ends the command quietly with 1."""

    @functools.wraps(main)
    def wrapper(argv=None):
        try:
            try:
                code = main(argv)
            except SystemExit:  # argparse's --help and usage errors
                sys.stdout.flush()
                raise
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's flush at exit
        except BrokenPipeError:
            # Nothing more can be shown; point stdout at /dev/null so that the flush at exit is quiet too.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        except USER_ERRORS as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        return code or 0

    return wrapper
