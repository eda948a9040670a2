"""python scripts/evaluate.py (also `match.py`, `azero evaluate`, `azero match`): a match between any two
players, external GTP engines included, with Elo and its 95% interval, and SGF files."""

from __future__ import annotations

import argparse
import json
import sys

from ..elo import MAX_GAMES, MAX_OPENING_PLIES
from ..errors import UserError, cli_entry
from . import check_batch, torch_device, writable_folder_problem

DEFAULT_GAMES = 100


def build_parser() -> argparse.ArgumentParser:
    from ..players import spec_help

    parser = argparse.ArgumentParser(
        prog="evaluate.py",
        description="Play GAMES games between players A and B (alternating who starts) and report wins, draws, "
        "score and the Elo difference with its 95% interval. Players may be external GTP engines "
        "(gtp:COMMAND, for go and othello); their games are played one at a time, every move checked. "
        "`match` is another name for this command.",
        epilog=f"{spec_help()}. Example: --game othello --a uct:1000 --b gtp:\"gtp-rhino --level 1\" --games 10 "
        "--sgf games/",
    )
    parser.add_argument("--game", required=True, help="game spec, e.g. othello, go:size=9,komi=7.5, gomoku:size=9")
    parser.add_argument("--a", required=True, metavar="SPEC", help="player A, e.g. uct:1000")
    parser.add_argument("--b", required=True, metavar="SPEC", help='player B, e.g. gtp:"gnugo --mode gtp --level 1"')
    parser.add_argument("--games", type=int, default=DEFAULT_GAMES,
                        help=f"number of games (default {DEFAULT_GAMES}, at most {MAX_GAMES:,})")
    parser.add_argument("--batch", type=int, default=None,
                        help="games played at once (default: all, up to 1024; one at a time with a gtp player)")
    parser.add_argument("--opening-plies", type=int, default=0, metavar="N",
                        help="N uniformly random moves start every game, so that players without randomness "
                        "(az:, GNU Go) do not repeat games; games 1 and 2 share their opening with colours "
                        "swapped, as do 3 and 4, ...; no two pairs share an opening while the game has enough, and the "
                        "result says when it has not (Connect Four has 49 of 2 plies) (default 0)")
    parser.add_argument("--sgf", metavar="DIR", help="write every game as SGF into DIR, numbered on after the "
                        "game-NNNN.sgf files already there (game-0001.sgf, ... in an empty folder)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the match (default 0)")
    parser.add_argument("--device", default="cpu", type=torch_device, help="torch device for networks (default cpu)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    return parser


@cli_entry
def main(argv=None) -> int:
    import games

    from ..arena import play_match
    from ..players import make

    parser = build_parser()
    args = parser.parse_args(argv)
    if not 1 <= args.games <= MAX_GAMES:
        parser.error(f"--games must be in 1..{MAX_GAMES:,}")
    if not 0 <= args.opening_plies <= MAX_OPENING_PLIES:
        parser.error(f"--opening-plies must be at least 0 and at most {MAX_OPENING_PLIES:,}")
    check_batch(parser, args.batch)
    game = games.make_from_spec(args.game)
    if args.sgf:
        from ..sgf import check_supported

        check_supported(game)
        problem = writable_folder_problem(args.sgf)  # now, not after the whole match has been played
        if problem:
            parser.error(f"--sgf {args.sgf}: {problem}")
    players = []
    try:
        players.append(make(args.a, game, device=args.device, seed=args.seed))
        players.append(make(args.b, game, device=args.device, seed=args.seed + 1))
        for player in players:  # compiling and network modules before the first move (players with a clock)
            player.prepare(game.initial_state(1, args.device))
        result = play_match(game, *players, args.games, seed=args.seed, batch=args.batch,
                            progress=not args.json and sys.stderr.isatty(), record_moves=bool(args.sgf),
                            opening_plies=args.opening_plies)
    finally:
        for player in players:
            player.close()
    paths, failure = [], None
    if args.sgf:
        from ..sgf import MatchRecordsError, file_span, match_files

        try:
            for path in match_files(args.sgf, game, result):
                paths.append(path)
        except MatchRecordsError as error:  # the match stands: print it, then say what was not written
            paths, failure = error.written, f"--sgf {args.sgf}: {error}; the result above stands"
        except BaseException:  # anything else that stops the writes (a bug, ^C): the result and the
            _print_result(args, result, paths)  # records written before it, then it
            raise
    _print_result(args, result, paths)
    if args.sgf and failure is None and not args.json:
        print(f"SGF: {len(paths)} games in {args.sgf} ({file_span(paths)})")
    if failure:
        raise UserError(failure)
    return 0


def _print_result(args, result, paths: list) -> None:
    """The match's table (or its JSON, with the SGF files written when --sgf is given)."""
    record = result.to_dict()
    if args.sgf:
        record["sgf"] = [str(path) for path in paths]
    if args.json:
        print(json.dumps(record), flush=True)
        if result.repeat_note():  # the table carries it otherwise
            print("note: " + result.repeat_note().removeprefix("; "), file=sys.stderr)
    else:
        print(result.table(), flush=True)
