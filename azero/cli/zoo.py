"""python scripts/zoo.py (azero zoo): the networks shipped with azero, and their model cards."""

from __future__ import annotations

import argparse

from ..errors import cli_entry


@cli_entry
def main(argv=None) -> int:
    from .. import zoo

    parser = argparse.ArgumentParser(
        prog="zoo.py",
        description="The model zoo: trained networks shipped inside azero. Without a name, one line each; with a "
        "name, its whole model card (training, machine, results against yardsticks with 95% intervals and the "
        "command that reproduces each). Play one with play.py --game GAME, or anywhere as the player zoo:NAME.",
    )
    parser.add_argument("name", nargs="?", help="a zoo network's name: its whole card")
    parser.add_argument("--check", action="store_true", help="also check each network's file against its card's "
                        "checksum")
    args = parser.parse_args(argv)
    chosen = [zoo.get(args.name)] if args.name else zoo.entries()
    for entry in chosen:
        if args.check:
            zoo.verify(entry)
        print(zoo.describe(entry, full=bool(args.name)))
    if args.check:
        print(f"{len(chosen)} checked: each file matches its card")
    return 0
