"""User-facing errors: one readable line on the command line, never a traceback."""

from __future__ import annotations

import functools
import sys

from games import GameError


class UserError(ValueError):
    """A mistake in what the user asked for: a bad option, a missing file, a wrong checkpoint."""


USER_ERRORS = (UserError, GameError)


def cli_entry(main):
    """Wrap a command-line `main(argv=None) -> int | None`: user errors print one line and exit 2."""

    @functools.wraps(main)
    def wrapper(argv=None):
        try:
            code = main(argv)
        except USER_ERRORS as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        return code or 0

    return wrapper
