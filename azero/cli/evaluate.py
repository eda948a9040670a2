"""python scripts/evaluate.py: a match between two players, with Elo and its 95% interval."""

from __future__ import annotations

import argparse
import json

from ..errors import cli_entry


@cli_entry
def main(argv=None) -> int:
    import games

    from ..arena import play_match
    from ..players import SPEC_HELP, make

    parser = argparse.ArgumentParser(
        prog="evaluate.py",
        description="Play GAMES games between players A and B (alternating who starts), all at once, "
        "and report wins, draws, score and the Elo difference with its 95% interval.",
        epilog=f"Game specs carry options: gomoku:size=8,k=5, connect4, othello:size=6, nim:pile=21. {SPEC_HELP}.",
    )
    parser.add_argument("--game", required=True, help="game spec, e.g. gomoku:size=8,k=5")
    parser.add_argument("--a", required=True, metavar="SPEC", help="player A, e.g. uct:400")
    parser.add_argument("--b", required=True, metavar="SPEC", help="player B, e.g. uct:100")
    parser.add_argument("--games", type=int, default=100, help="number of games (default 100)")
    parser.add_argument("--batch", type=int, default=None, help="games played at once (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the match (default 0)")
    parser.add_argument("--device", default="cpu", help="torch device for networks (default cpu)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error("--games must be at least 1")
    game = games.make_from_spec(args.game)
    a = make(args.a, game, device=args.device, seed=args.seed)
    b = make(args.b, game, device=args.device, seed=args.seed + 1)
    result = play_match(game, a, b, args.games, seed=args.seed, batch=args.batch, device="cpu", progress=not args.json)
    print(json.dumps(result.to_dict()) if args.json else result.table())
    return 0
