"""The configuration reference (docs/configuration.md), written from the config schema.

The page is generated from the same dataclass fields and help texts as `train.py --help-config`
and from the presets in configs/, so it cannot drift from them; tests/test_docs.py fails when
the committed page differs from `configuration_page()`.

    python scripts/gen_docs.py          # rewrites docs/configuration.md
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .config import CONFIG_DIR, Config, _sections, read_toml, toml_text

PAGE = Path("docs") / "configuration.md"
COMMAND = "python scripts/gen_docs.py"

_INTRO = """\
A run's configuration is one typed config: the defaults below, then a preset (a TOML file
in `configs/` holding only what differs from the defaults), then `--set section.key=value`
overrides on the command line. A wrong key or value is an error naming what is allowed.

```
python scripts/train.py --help-config                  # every key, its default and meaning
python scripts/train.py --game connect4 --help-config  # ... with the values of a preset
python scripts/train.py --game gomoku --set search.simulations=128 --set network.blocks=6
python scripts/train.py --config my-gomoku.toml        # a TOML file of your own (same sections)
```

A run saves the config it resolved in its folder (`config.toml`); typing the command that
started a run again continues it, and a key that differs from the run's config is refused.
"""


def _escape(text: str) -> str:
    """Text safe inside a Markdown table cell: no emphasis, no cell breaks, no HTML."""
    for character in "\\`*_[]<>|":
        text = text.replace(character, "\\" + character)
    return text


def _code(value) -> str:
    """A config value as TOML writes it, in a code span (a `|` in a table cell escaped)."""
    return "`" + toml_text(value).replace("|", "\\|") + "`"


def _default(f: dataclasses.Field):
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def _allowed(f: dataclasses.Field) -> str:
    """The field's choices or bounds, as --set checks them."""
    meta = f.metadata or {}
    if meta.get("choices"):
        return ", ".join(f"`{choice}`" for choice in meta["choices"])
    low, high = meta.get("low"), meta.get("high")
    if low is not None and high is not None:
        return f"{_number(low)} to {_number(high)}"
    if low is not None:
        return f"≥ {_number(low)}"
    if high is not None:
        return f"≤ {_number(high)}"
    return ""


def _preset_rows() -> list[str]:
    """One row per preset: its name, its game and every key it sets."""
    rows = ["| preset | game | what it sets over the defaults |", "|---|---|---|"]
    for path in sorted(CONFIG_DIR.glob("*.toml")):
        data = read_toml(path)
        spec = data.get("game", {}).get("spec", Config().game.spec)
        settings = [f"`{section}.{key} = {toml_text(value)}`".replace("|", "\\|")
                    for section, values in data.items() if section != "game" for key, value in values.items()]
        rows.append(f"| `{path.stem}` | `{spec}` | {', '.join(settings)} |")
    return rows


def configuration_page() -> str:
    """The whole Markdown page: how to set keys, the presets, then one table per config section."""
    lines = ["# Configuration reference", "",
             f"<!-- generated from azero/config.py and configs/ by `{COMMAND}`: do not edit by hand -->", "",
             _INTRO, "## Presets", "",
             "`--game NAME` trains with `configs/NAME.toml`; `python scripts/train.py --game NAME --help-config` "
             "shows every value it resolves to.", ""]
    lines += _preset_rows()
    for section, cls in _sections().items():
        lines += ["", f"## [{section}]", "", "| key | default | allowed | meaning |", "|---|---|---|---|"]
        for f in dataclasses.fields(cls):
            meaning = _escape((f.metadata or {}).get("help", ""))
            lines.append(f"| `{section}.{f.name}` | {_code(_default(f))} | {_allowed(f)} | {meaning} |")
    return "\n".join(lines) + "\n"


def write_configuration_page(root: Path) -> Path:
    """Write the page under the checkout `root`; returns its path."""
    path = root / PAGE
    path.write_text(configuration_page(), encoding="utf-8")
    return path
