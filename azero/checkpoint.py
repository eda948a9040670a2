"""Checkpoints: self-describing, written atomically, loaded safely.

A checkpoint is a dict of plain values and tensors (loadable with
`torch.load(..., weights_only=True)`, so a file from elsewhere cannot run code):

    format:   "azero-checkpoint"
    version:  FORMAT_VERSION
    game:     the game spec, e.g. "gomoku:size=8,k=5,rule=freestyle"
    network:  {"blocks": 4, "channels": 64, "value_hidden": 64}
    model:    the network's state_dict
    iteration, and for `latest.pt` the whole training state (optimizer, counters, random states)

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
from .network import NetworkConfig, PolicyValueNet

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
            damaged = archive.testzip()
    except Exception as error:  # not a zip, truncated, a header that lies about sizes, ...
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UserError(f"{path} is not a readable {what} (damaged or truncated?): {reason[:160]}") from None
    if damaged is not None:
        raise UserError(f"{path} is damaged: its part {damaged} does not match its checksum")


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


def load_checkpoint(path: str | Path, *, game: Game | None = None) -> dict:
    """Load and check a checkpoint; with `game`, it must be a checkpoint of that game."""
    data = safe_load(path, "checkpoint")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UserError(f"{path} is not an azero checkpoint")
    if data.get("version") != FORMAT_VERSION:
        raise UserError(f"{path} has checkpoint format version {data.get('version')}; this azero reads {FORMAT_VERSION}")
    for key in ("game", "network", "model", "iteration"):
        if key not in data:
            raise UserError(f"{path} is an incomplete checkpoint (no {key!r})")
    if game is not None and games.make_from_spec(data["game"]) != game:
        raise UserError(f"{path} is a checkpoint of {data['game']}, not of {game.spec}")
    return data


def network_from_checkpoint(data: dict, device="cpu") -> tuple[Game, PolicyValueNet]:
    """Rebuild (game, network in eval mode) from a loaded checkpoint."""
    game = games.make_from_spec(data["game"])
    try:
        config = NetworkConfig(**data["network"])
        net = PolicyValueNet(config, game)
        problem = weights_mismatch(net.state_dict(), data["model"])
        if problem:
            raise ValueError(problem)
        net.load_state_dict(data["model"])
    except (TypeError, ValueError, RuntimeError) as error:
        raise UserError(f"checkpoint network does not match its description: {' '.join(str(error).split())}") from None
    return game, net.to(device).eval()


def weights_mismatch(expected: dict, stored: dict, *, shown: int = 3) -> str:
    """'' if `stored` (a file's state dict) has the tensors and shapes of `expected` (a network
    made from the file's description), else one line saying which differ: the first `shown`
    of the shapes that differ, then the names missing and those not expected."""
    if not isinstance(stored, dict):
        return f"its weights are a {type(stored).__name__}, not a table of tensors"
    parts = []
    differ = [f"{name} is {_shape(stored[name])} in the file, {list(tensor.shape)} for its description"
              for name, tensor in expected.items() if name in stored and _shape(stored[name]) != list(tensor.shape)]
    if differ:
        more = f" ({len(differ) - shown} more differ)" if len(differ) > shown else ""
        parts.append("; ".join(differ[:shown]) + more)
    for what, names in (("missing", [n for n in expected if n not in stored]),
                        ("not expected", [n for n in stored if n not in expected])):
        if names:
            more = f" and {len(names) - shown} more" if len(names) > shown else ""
            parts.append(f"{what}: {', '.join(map(str, names[:shown]))}{more}")
    return "; ".join(parts)


def _shape(value) -> list | str:
    return list(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
