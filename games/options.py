"""One option schema and parser: game options, player specs and config values.

    PILE, MISERE = Option(15, int, low=1, high=100), Option(False, bool)
    read_option("nim: option pile", PILE, "7")                  # -> 7
    read_options("nim", {"pile": PILE, "misere": MISERE}, {})   # -> {"pile": 15, "misere": False}

A value is text (from a spec, `--set`, a command line) or a Python value (keyword
arguments, TOML); text is parsed by the option's kind, a Python value must
already be of that kind (an int for a float, an integral float for an int and
0 / 1 for a boolean are accepted). Then the allowed values are checked:
`choices`, then `low` / `high`, then `check`. Every error has one wording:

    <where>=<value> is not a valid <kind> (<reason>); allowed: <allowed>
    <where>=<value> is not a valid <noun>; choose one of: <choices>
    <where>=<value> is out of range; allowed: <allowed>
    <owner>: unknown option <keys>; valid options: <key (allowed)>, ...

raised as the caller's error class (GameError, UserError, ConfigError, ValueError).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

TRUE_WORDS = ("true", "1", "yes")
FALSE_WORDS = ("false", "0", "no")
KIND_NAMES = {int: "int", float: "float", bool: "boolean", str: "string"}


@dataclass(frozen=True)
class Option:
    """One option: its default, kind and allowed values (for validation, messages and help).

    default: the value when the option is not given (None: not set unless given)
    kind:    int, float, bool or str
    check:   a test of the parsed value, described by `allowed`
    allowed: the allowed values in words, e.g. "5..19"; made from choices / low / high when empty
    low, high, choices: the allowed values, checked in this order before `check`
    help:    one line for help texts
    noun:    what a value is called in messages, e.g. "final-move criterion"
    metavar: the placeholder in usage lines, e.g. "ITERATIONS" (default: the key in capitals)
    """

    default: Any = None
    kind: type = str
    check: Callable[[Any], bool] | None = None
    allowed: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple | None = None
    help: str = ""
    noun: str = ""
    metavar: str = ""

    def allowed_text(self) -> str:
        """The allowed values in words: '5..19', 'at least 1', 'one of robust, max', or ''."""
        if self.allowed:
            return self.allowed
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        if self.low is not None and self.high is not None:
            return f"{_number(self.low)}..{_number(self.high)}"
        if self.low is not None:
            return f"at least {_number(self.low)}"
        if self.high is not None:
            return f"at most {_number(self.high)}"
        return ""

    def usage(self, key: str) -> str:
        """The placeholder of a value in usage lines: 'robust|max' for choices, else the metavar."""
        if self.choices:
            return "|".join(map(str, self.choices))
        return self.metavar or key.upper()


def _number(value: float) -> str:
    """A bound as text: whole numbers in full (4294967295), others short (0.001)."""
    return str(value) if isinstance(value, int) else f"{value:g}"


MAX_DIGITS = 100  # longer digit strings are no number a user means (and int() refuses over 4,300 digits)


def is_whole_number(text: str) -> bool:
    """Digits 0-9 only, at most MAX_DIGITS of them: '¹' and '٣' are digits to str.isdigit, not
    numbers to a user or a protocol, and `int(text)` is safe to call (its range is the caller's to check)."""
    return len(text) <= MAX_DIGITS and text.isascii() and text.isdigit()


class _NotOfKind(Exception):
    """A value that cannot be read as the option's kind; args[0] says why."""


def _parse(kind: type, value: Any) -> Any:
    """`value` (text or a Python value) as `kind`; _NotOfKind(reason) if it is not one."""
    if isinstance(value, str):
        text = value.strip()
        if kind is str:
            return text
        if kind is bool:
            if text.lower() in TRUE_WORDS + FALSE_WORDS:
                return text.lower() in TRUE_WORDS
            raise _NotOfKind("not true or false")
        if kind is int:
            try:
                return int(text)
            except ValueError:
                pass
            try:
                float(text)
            except ValueError:
                raise _NotOfKind("not a number") from None
            raise _NotOfKind("not a whole number")
        if kind is float:
            try:
                number = float(text)
            except ValueError:
                raise _NotOfKind("not a number") from None
            if not math.isfinite(number):
                raise _NotOfKind("not a finite number")
            return number
    elif kind is bool:
        if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
            return bool(value)
        raise _NotOfKind("not true or false")
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise _NotOfKind("not a whole number" if isinstance(value, float) else f"a {type(value).__name__}")
    elif kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise _NotOfKind("not a finite number")
            return float(value)
        raise _NotOfKind(f"a {type(value).__name__}")
    elif kind is str:
        raise _NotOfKind(f"a {type(value).__name__}, not text")
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise _NotOfKind(f"cannot be read as {kind.__name__}") from None


def invalid_value(where: str, value: Any, kind_name: str, reason: str, allowed: str = "") -> str:
    """The wording of a value that is not of its option's kind."""
    return f"{where}={value!r} is not a valid {kind_name} ({reason})" + (f"; allowed: {allowed}" if allowed else "")


def read_option(where: str, option: Option, value: Any, *, error: type[Exception] = ValueError) -> Any:
    """`value` read as `option` says and checked; `error(message)` naming `where` if it is not allowed.

    where: how the option is named in messages, e.g. "gomoku: option size" or "search.simulations".
    """
    try:
        parsed = _parse(option.kind, value)
    except _NotOfKind as reason:
        allowed = "" if option.kind is bool else option.allowed_text()
        kind_name = KIND_NAMES.get(option.kind, option.kind.__name__)
        raise error(invalid_value(where, value, kind_name, reason.args[0], allowed)) from None
    if option.choices and parsed not in option.choices:
        raise error(f"{where}={parsed!r} is not a valid {option.noun or 'choice'}; "
                    f"choose one of: {', '.join(map(str, option.choices))}")
    in_range = (option.low is None or parsed >= option.low) and (option.high is None or parsed <= option.high)
    if not in_range or (option.check is not None and not option.check(parsed)):
        raise error(f"{where}={parsed!r} is out of range; allowed: {option.allowed_text()}")
    return parsed


def read_options(owner: str, schema: Mapping[str, Option], given: Mapping[str, Any], *,
                 error: type[Exception] = ValueError) -> dict[str, Any]:
    """Every option of `schema`, from `given` or its default, read and checked; unknown keys are errors.

    owner: who has the options, e.g. "gomoku" or "uct" (messages say "gomoku: option size=...").
    An option whose default is None stays None unless given.
    """
    unknown = sorted(set(given) - set(schema))
    if unknown:
        valid = ", ".join(f"{key} ({o.allowed_text()})" if o.allowed_text() else key for key, o in schema.items())
        raise error(f"{owner}: unknown option {', '.join(unknown)}; valid options: {valid or 'none'}")
    values = {}
    for key, option in schema.items():
        value = given.get(key, option.default)
        values[key] = None if value is None else read_option(f"{owner}: option {key}", option, value, error=error)
    return values


def option_field(default, help: str, choices: tuple | None = None, low: float | None = None,
                 high: float | None = None) -> dataclasses.Field:
    """A dataclass field declaring its option in its metadata (a config section's or the search
    settings' schema; `field_option` reads it back): its default, help text and allowed values."""
    meta = {"help": help, "choices": choices, "low": low, "high": high}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def field_option(field: dataclasses.Field, kind: type) -> Option:
    """The Option a dataclass field declares in its metadata ({"help", "choices", "low", "high"})."""
    meta = field.metadata or {}
    default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
    return Option(default, kind, low=meta.get("low"), high=meta.get("high"), choices=meta.get("choices"),
                  help=meta.get("help", ""))
