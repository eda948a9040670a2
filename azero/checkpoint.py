"""Checkpoints: self-describing, written atomically, loaded safely.

A checkpoint is a dict of plain values and tensors (loadable with
`torch.load(..., weights_only=True)`, so a file from elsewhere cannot run code):

    format:   "azero-checkpoint"
    version:  FORMAT_VERSION
    game:     the game spec, e.g. "gomoku:size=8,k=5,rule=freestyle"
    network:  {"blocks": 4, "channels": 64, "value_hidden": 64}
    model:    the network's state_dict
    iteration, and for `latest.pt` the whole training state (optimizer, counters, random states)
    search:   the search settings of its self-play (azero/search/settings.py), as a table, or
    config:   the run's whole config (latest.pt), whose [search] they are (`search_settings` reads either)

Every file is written to a temporary name in the same folder, flushed to disk
with fsync, then renamed over the old one, so a crash leaves the old file or the
new one, never half of either (and a temporary file, which a resumed run deletes).
"""

from __future__ import annotations

import io
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import torch

import games
from games import Game

from .errors import UserError, naming_file, regular_file
from .faults import fault
from .network import NetworkConfig, PolicyValueNet, plays
from .search.settings import SearchSettings

FORMAT = "azero-checkpoint"
FORMAT_VERSION = 1
TEMPORARY_SUFFIX = ".tmp"  # an atomic write's file until it is renamed: .NAME.RANDOM.tmp


def atomic_write_bytes(path: str | Path, data: bytes, *, point: str = "file") -> None:
    """Write `data` to `path` atomically (temp file, fsync, rename, fsync of the folder).

    point: the file's name for fault injection (azero/faults.py: POINT.write, .fsync, .rename, .renamed).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMPORARY_SUFFIX, dir=path.parent)
    with naming_file(path):  # (a full disk's write and fsync name no file)
        try:
            with os.fdopen(handle, "wb") as out:
                half = len(data) // 2
                out.write(data[:half])
                out.flush()
                fault(f"{point}.write")
                out.write(data[half:])
                out.flush()
                fault(f"{point}.fsync")
                os.fsync(out.fileno())
            fault(f"{point}.rename")
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        fault(f"{point}.renamed")
    try:
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except OSError:
        pass


def atomic_write_text(path: str | Path, text: str, *, point: str = "config") -> None:
    atomic_write_bytes(path, text.encode("utf-8"), point=point)


def atomic_save(obj: Any, path: str | Path, *, point: str = "file") -> None:
    """torch.save `obj` to `path` atomically."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write_bytes(path, buffer.getvalue(), point=point)


def remove_temporary_files(folder: str | Path) -> list[Path]:
    """Delete what atomic writes left in `folder` when their process died mid-write; returns those files."""
    left = [path for path in Path(folder).glob(f".*{TEMPORARY_SUFFIX}") if path.is_file()]
    for path in left:
        path.unlink(missing_ok=True)
    return left


def safe_load(path: str | Path, what: str = "file") -> Any:
    """torch.load with weights_only=True; a missing or damaged file is a one-line UserError."""
    path = Path(path)
    regular_file(path, what)
    _check_archive(path, what)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # truncated zip, not a torch file, unsafe content, ...
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UserError(f"{path} is not a readable {what} (damaged or truncated?): {reason[:160]}") from None


def _check_archive(path: Path, what: str) -> None:
    """UserError unless `path` is a zip archive (torch.save's format) whose every member matches its
    checksum: torch.load reads damaged bytes without noticing (a flipped bit in a weight loads as it is)."""
    try:
        handle = open(path, "rb")
    except OSError as error:  # no permission, ...: not a damaged file
        raise UserError(f"cannot read the {what} {path}: {error.strerror or error}") from None
    try:
        with handle, zipfile.ZipFile(handle) as archive:
            packed = next((info for info in archive.infolist() if info.compress_type != zipfile.ZIP_STORED
                           or info.file_size != info.compress_size), None)
            if packed is not None:  # checked before anything is inflated: a few KB may inflate to gigabytes
                raise UserError(f"{path} is not a {what} torch.save wrote: its part {packed.filename} is compressed "
                                f"({packed.compress_size:,} bytes declared to hold {packed.file_size:,}); torch.save "
                                "stores every part as it is")
            damaged = archive.testzip()
    except UserError:
        raise
    except Exception as error:  # not a zip, truncated, a header that lies about sizes, ...
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UserError(f"{path} is not a readable {what} (damaged or truncated?): {reason[:160]}") from None
    if damaged is not None:
        raise UserError(f"{path} is damaged: its part {damaged} does not match its checksum")


def non_finite(tensors: dict) -> str | None:
    """The name of the first floating tensor of a state_dict (nested dicts and lists too) holding
    NaN or an infinity, or None."""
    for name, value in tensors.items():
        if isinstance(value, dict):
            inner = non_finite(value)
        elif isinstance(value, (list, tuple)):
            inner = non_finite(dict(enumerate(value)))
        elif isinstance(value, torch.Tensor) and value.is_floating_point():
            inner = None if bool(torch.isfinite(value).all()) else ""
        else:
            inner = None
        if inner is not None:
            return f"{name}.{inner}" if inner else str(name)
    return None


def network_checkpoint(net: PolicyValueNet, game: Game, iteration: int, **extra) -> dict:
    """The self-describing dict of a network (extra keys: training state)."""
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "game": game.spec,
        "network": net.describe()["network"],
        "model": {k: v.detach().cpu() for k, v in net.state_dict().items()},
        "iteration": int(iteration),
        **extra,
    }


def pooled_heads(data: dict) -> bool:
    """Whether a checkpoint's network has pooled heads: it plays its game on every board size
    (`network.another_size_of`), not its own size only."""
    return isinstance(data.get("network"), dict) and data["network"].get("heads") == "pooled"


def training_stages(data: dict) -> list[dict]:
    """The boards a checkpoint's network learnt on, earliest first: a stage per run of its lineage
    (a run begun with --init-from continues its source's list), each {"game": spec, "iterations":
    n, "hours": h or None}. A checkpoint saved before stages were kept: its own run's one stage,
    from its game and iteration (hours where it recorded them)."""
    stages = data.get("trained_on")
    if isinstance(stages, list) and stages and all(isinstance(s, dict) and "game" in s for s in stages):
        return [dict(stage) for stage in stages]
    elapsed = data.get("elapsed")
    return [{"game": data["game"], "iterations": int(data["iteration"]),
             "hours": float(elapsed) / 3600 if isinstance(elapsed, (int, float)) else None}]


def stages_text(stages: list[dict]) -> str:
    """"gomoku:size=9,k=5 for 120 iterations (1.0 h), then gomoku:size=15,k=5 for 40 (0.5 h)"."""
    parts = []
    for i, stage in enumerate(stages):
        hours = f" ({stage['hours']:.1f} h)" if isinstance(stage.get("hours"), (int, float)) else ""
        parts.append(f"{stage['game']} for {stage['iterations']}{' iterations' if i == 0 else ''}{hours}")
    return ", then ".join(parts)


def load_checkpoint(path: str | Path, *, game: Game | None = None) -> dict:
    """Load and check a checkpoint; with `game`, it must be a checkpoint of that game, or, for a
    network with pooled heads, of that game on a board of another size (`another_size_of`)."""
    data = safe_load(path, "checkpoint")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UserError(f"{path} is not an azero checkpoint")
    if data.get("version") != FORMAT_VERSION:
        raise UserError(f"{path} has checkpoint format version {data.get('version')}; this azero reads {FORMAT_VERSION}")
    for key in ("game", "network", "model", "iteration"):
        if key not in data:
            raise UserError(f"{path} is an incomplete checkpoint (no {key!r})")
    if game is not None and not plays(games.make_from_spec(data["game"]), game, any_size=pooled_heads(data)):
        rule = " (its pooled heads play that game on other boards, not another game)" if pooled_heads(data) else ""
        raise UserError(f"{path} is a checkpoint of {data['game']}, not of {game.spec}{rule}")
    problem = network_problem(data)
    if problem:
        raise UserError(f"{path}: {problem}")
    trained = data.get("trainer", {}).get("model", {}) if isinstance(data.get("trainer"), dict) else {}
    for where, weights in (("", data["model"]), ("trained ", trained)):
        name = non_finite(weights) if isinstance(weights, dict) else None
        if name is not None:
            raise UserError(f"{path} holds {where}weights that are not finite numbers (NaN or infinity, first in "
                            f"{name}); it cannot be played or trained on: use an earlier checkpoint")
    return data


def network_from_checkpoint(data: dict, device="cpu") -> tuple[Game, PolicyValueNet]:
    """Rebuild (game, network in eval mode) from a checkpoint load_checkpoint returned (which checked
    that the network it describes is within bounds and that its weights have the shapes it needs)."""
    game = games.make_from_spec(data["game"])
    try:
        net = PolicyValueNet(NetworkConfig(**data["network"]), game)
        net.load_state_dict(data["model"])
    except (TypeError, ValueError, RuntimeError) as error:
        raise UserError(f"checkpoint network does not match its description: {' '.join(str(error).split())}") from None
    return game, net.to(device).eval()


def search_settings(data: dict) -> SearchSettings:
    """The search settings a checkpoint records (its config's [search], or its `search` entry),
    the defaults for those it does not name (a checkpoint older than them: PUCT for those older
    than Gumbel); UserError for a value out of bounds."""
    config = data.get("config")
    section = (config.get("search") if isinstance(config, dict) else None) or data.get("search") or {}
    return SearchSettings.from_dict(section, "checkpoint's saved search settings")


def network_problem(data: dict) -> str | None:
    """Why the network a checkpoint describes cannot be built from it, in one line, or None: a
    description out of the config's bounds, or weights not of the shapes it needs. Checked on the
    meta device, before any network is allocated: a file of a few KB cannot make a loader
    allocate gigabytes for a network it does not hold."""
    try:
        game = games.make_from_spec(data["game"])
        config = NetworkConfig(**data["network"])
        config.validate(game)
        with torch.device("meta"):  # shapes without memory
            needed = PolicyValueNet(config, game).state_dict()
    except (TypeError, ValueError) as error:  # (UserError and GameError are ValueErrors)
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return f"its network description {data['network']!r:.120} is not one azero builds ({reason})"
    problem = weights_problem(needed, data["model"])
    return f"its weights do not match the network it describes: {problem}" if problem else None


def weights_problem(needed: dict, weights) -> str | None:
    """What keeps `weights` (a loaded state_dict) from loading into a network whose state_dict is
    `needed` (its shapes, on the meta device), in one line, or None: missing or unknown names, other
    shapes or kinds, and a tensor declaring more values than its storage holds (a view of a few
    bytes may claim gigabytes, which loading would then allocate)."""
    if not isinstance(weights, dict):
        return f"its weights are a {type(weights).__name__}, not a table of tensors"
    missing = [name for name in needed if name not in weights]
    unknown = [str(name) for name in weights if name not in needed]
    parts = [f"{len(names)} weights {what} ({', '.join(names[:3])[:200]}{', ...' if len(names) > 3 else ''})"
             for names, what in ((missing, "it needs are missing"), (unknown, "are not its")) if names]
    if parts:
        return "; ".join(parts)
    differ = []
    for name, shape in needed.items():
        value = weights[name]
        if not isinstance(value, torch.Tensor) or value.is_floating_point() != shape.is_floating_point():
            return f"{name} is not a tensor of {shape.dtype}"
        if value.shape != shape.shape:
            differ.append(f"{name} is {list(value.shape)} there, the description needs {list(shape.shape)}")
        elif value.numel() * value.element_size() > value.untyped_storage().nbytes():
            return (f"{name} declares {value.numel():,} values over a storage of "
                    f"{value.untyped_storage().nbytes():,} bytes")
    if differ:
        return "; ".join(differ[:3]) + (f"; and {len(differ) - 3} more shapes differ" if len(differ) > 3 else "")
    return None
