"""The `azero` command: one entry point for every script (`azero train ...` = `python scripts/train.py ...`)."""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from pathlib import Path

from ..errors import cli_entry

ALIASES = {"match": "evaluate"}  # other names of a command, kept for those who use them
COMMANDS = {
    "train": "train a network by self-play",
    "play": "play against a checkpoint or any player, in the terminal or the browser",
    "evaluate": "a match between any two players, external GTP engines included, with Elo and SGF files",
    "pbrain": "a gomoku brain for Piskvork / Gomocup (protocol on stdin/stdout)",
    "gtp": "a Go / Othello engine speaking GTP (protocol on stdin/stdout)",
    "match": "another name for evaluate",
    "judge": "players judged move by move by an exact solver (Connect Four, tiny games)",
    "ablate": "training arms of equal wall time, each judged against the game's yardsticks",
    "bench": "print throughput figures as one JSON object",
    "plot_elo": "a run's Elo against training minutes as an SVG picture",
    "zoo": "the trained networks shipped with azero and their model cards",
    "planning": "the textbook's tabular planning experiments (Dyna-Q, prioritized sweeping, RTDP) as plots and tables",
}


def torch_device(text: str) -> str:
    """argparse's type for --device: a torch device that exists here (cpu, cuda, cuda:N)."""
    from ..network import device_problem

    problem = device_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def protocol_streams():
    """stdin and stdout for a protocol that reads and writes lines (Piskvork, GTP, analysis):
    input bytes that are not text in the locale's encoding become U+FFFD, so such a line is
    refused like any garbage instead of ending the process, and output the terminal cannot
    encode is escaped."""
    for stream, errors in ((sys.stdin, "replace"), (sys.stdout, "backslashreplace")):
        if hasattr(stream, "reconfigure"):  # (a test may have put a StringIO there)
            stream.reconfigure(errors=errors)
    return sys.stdin, sys.stdout


def writable_folder_problem(path: str) -> str | None:
    """Why files cannot be written into the folder `path` (made if missing), or None if they can."""
    folder = Path(path)
    try:
        if folder.exists() and not folder.is_dir():
            return "that is a file, not a folder"
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
    except OSError as error:
        return f"cannot write there ({error.strerror or error})"
    return None


def check_batch(parser: argparse.ArgumentParser, batch: int | None) -> None:
    """parser.error unless --batch (games or positions given to a player at once) is None or in
    1..MAX_GAMES_AT_ONCE."""
    from ..arena import MAX_GAMES_AT_ONCE

    if batch is not None and not 1 <= batch <= MAX_GAMES_AT_ONCE:
        parser.error(f"--batch must be in 1..{MAX_GAMES_AT_ONCE:,}")


@cli_entry
def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        width = max(map(len, COMMANDS))
        lines = ["usage: azero COMMAND [options]   (azero COMMAND --help for the options)", "", "commands:"]
        lines += [f"  {name:<{width}}  {text}" for name, text in COMMANDS.items()]
        stream = sys.stdout if not argv or argv[0] in ("-h", "--help") else sys.stderr
        if argv and argv[0] not in ("-h", "--help"):
            print(f"error: unknown command {argv[0]!r}", file=sys.stderr)
        print("\n".join(lines), file=stream)
        return 0 if not argv or argv[0] in ("-h", "--help") else 2
    module = importlib.import_module(f"azero.cli.{ALIASES.get(argv[0], argv[0])}")
    return module.main(argv[1:])
