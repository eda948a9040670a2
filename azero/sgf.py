"""SGF (Smart Game Format, FF[4]) records of Go, Othello and gomoku games: write, read, replay.

    text = to_sgf(game, actions, black="uct:1000", white="gtp:gnugo --mode gtp")
    paths = write_match(folder, game, match_result)      # one file per game of a match, numbered on
    record = read_sgf(text); state = replay(game, record).state

What a file holds (https://www.red-bean.com/sgf/): FF[4], GM (the game's
`sgf_game_type`: Go 1, Othello 2, gomoku 4), SZ (SZ[15] or SZ[width:height]), KM
for games with a komi (Go), PB / PW (the players),
RE (B+3.5, W+12, B+R for a resignation, B+ when a game has no score, 0 for a
draw, ? while unfinished), DT and AP, then one node per move: B[..] / W[..] with
points as two letters, column then row, 'a' the top-left (our action
row * width + col becomes letters[col] + letters[row]). A pass is B[] (B[tt]
is read too). Forced passes (`game.forced_pass`: Othello's) are not written: the
side that moves twice in a row had the other pass, as Othello programs write it;
the reader puts the passes back.

Why our own few lines and not a library: sgfmill (the usual Python choice) has
been unmaintained since 2018 and knows only Go; writing this subset of FF[4] is
a page of code, and the reader only needs the main line of our own files and
of other programs' plain game records (variations are skipped, setup stones
are refused).
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch

import games
from games import Game, GameError, State

from . import __version__
from .errors import UserError, naming_file
from .faults import fault

LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
COLOURS = ("B", "W")


def game_types() -> dict[int, type[Game]]:
    """SGF's GM number -> the registered game of that type."""
    return {cls.sgf_game_type: cls for cls in games.REGISTRY.values() if cls.sgf_game_type is not None}


def supports(game: Game) -> bool:
    """Whether SGF has a game type for `game`."""
    return game.sgf_game_type is not None


def check_supported(game: Game) -> None:
    if not supports(game):
        names = ", ".join(cls.name for cls in game_types().values())
        raise UserError(f"SGF has no game type for {game.name}; it records {names}")


def point(game: Game, action: int) -> str:
    """The SGF point of an action ('' for a pass)."""
    height, width = game.board_shape
    if action == game.pass_action:
        return ""
    row, col = divmod(int(action), width)
    return LETTERS[col] + LETTERS[row]


def parse_point(game: Game, text: str) -> int:
    """The action of an SGF point; '' (and 'tt' on boards up to 19x19) is a pass."""
    height, width = game.board_shape
    if text == "" or (text == "tt" and max(height, width) <= 19):
        if game.pass_action is None:
            raise GameError(f"{game.name} has no pass, but the record has one")
        return game.pass_action
    if len(text) != 2 or text[0] not in LETTERS[:width] or text[1] not in LETTERS[:height]:
        raise GameError(f"cannot read SGF point {text!r} on a {width}x{height} board")
    return LETTERS.index(text[1]) * width + LETTERS.index(text[0])


def _escape(text: str) -> str:
    # a name may hold bytes that are not UTF-8 (a file name, as Python decodes it: '\udcff'),
    # which the file's CA[UTF-8] cannot hold: written as their escape
    text = str(text).encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("\\", "\\\\").replace("]", "\\]")


def _number(value: float) -> str:
    return f"{value:g}"


def black_margin(game: Game, state: State) -> float:
    """Black's lead in a one-game state (`game.score`: Go's area score with komi, Othello's disc
    difference); GameError for a game without a score."""
    return float(game.score(state)[0])


def score_text(margin: float) -> str:
    """GTP / SGF score text from black's margin: 'B+3.5', 'W+2', '0'."""
    if margin == 0:
        return "0"
    return ("B+" if margin > 0 else "W+") + _number(abs(margin))


def result_text(game: Game, state: State) -> str:
    """The RE value of a one-game state: 'B+3.5', 'W+12', 'B+' (no score), '0', or '?'."""
    if not bool(state.done[0]):
        return "?"
    if game.has_score:
        return score_text(black_margin(game, state))
    winner = float(game.result(state)[0])
    return "0" if winner == 0 else ("B+" if winner > 0 else "W+")


def resignation_text(black_won: bool) -> str:
    """The RE value of a game won by resignation: 'B+R' or 'W+R'."""
    return ("B" if black_won else "W") + "+R"


def to_sgf(game: Game, actions: list[int], *, black: str = "", white: str = "", result: str | None = None,
           date: datetime.date | None = None, comment: str = "", inserted: list[bool] | None = None) -> str:
    """The SGF text of one game from the start position.

    `result` is the RE value; by default it is worked out by replaying the moves
    (see `result_text`). `inserted`: per action, whether it is a pass put in before one side's
    second move in a row (Game.inserted_pass, GTP's): the record leaves it out, giving that side
    two moves, as `replay` reads them. Raises GameError if a move is illegal.
    """
    check_supported(game)
    state = game.initial_state(1)
    height, width = game.board_shape
    size = f"{width}" if width == height else f"{width}:{height}"
    nodes = []
    for index, action in enumerate(actions):
        action = int(action)
        colour = COLOURS[int(state.to_play[0])]
        if inserted is not None and inserted[index]:
            state = game.inserted_pass(state)
            continue
        state = game.step(state, torch.tensor([action]))
        if game.forced_pass and action == game.pass_action:
            continue  # the other side simply moves again
        nodes.append(f";{colour}[{point(game, action)}]")
    if result is None:
        result = result_text(game, state)
    root = [f"FF[4]GM[{game.sgf_game_type}]SZ[{size}]CA[UTF-8]AP[azero:{__version__}]"]
    if game.komi is not None:
        root.append(f"KM[{_number(float(game.komi))}]")
    root.append(f"DT[{(date or datetime.date.today()).isoformat()}]")
    if black:
        root.append(f"PB[{_escape(black)}]")
    if white:
        root.append(f"PW[{_escape(white)}]")
    root.append(f"RE[{_escape(result)}]")
    if comment:
        root.append(f"GC[{_escape(comment)}]")
    lines = ["(;" + "".join(root)]
    for start in range(0, len(nodes), 10):  # ten moves a line
        lines.append("".join(nodes[start:start + 10]))
    return "\n".join(lines) + ")\n"


def write_sgf(path: str | Path, game: Game, actions: list[int], **info) -> Path:
    """Write one game (see `to_sgf` for `info`); the folder is created if needed."""
    from .checkpoint import atomic_write_text

    path = Path(path)
    atomic_write_text(path, to_sgf(game, actions, **info))
    return path


GAME_FILE = re.compile(r"game-(\d{4,})\.sgf")  # a match's record: game-0001.sgf, ..., game-12345.sgf


def next_game_number(folder: str | Path) -> int:
    """The file number after the highest game-NNNN.sgf in `folder` (1 if it has none or does not exist)."""
    folder = Path(folder)
    if not folder.is_dir():
        return 1
    numbers = [int(match.group(1)) for path in folder.iterdir() if (match := GAME_FILE.fullmatch(path.name))]
    return max(numbers, default=0) + 1


def file_span(paths: list[Path]) -> str:
    """The first and last of a match's files: 'game-0013.sgf .. game-0024.sgf' (one: its name)."""
    return paths[0].name if len(paths) == 1 else f"{paths[0].name} .. {paths[-1].name}"


class MatchRecordsError(UserError):
    """Writing a match's records stopped at a failure (a full disk, no permission): `written`
    holds the files written before it, `path` the file (or folder) where it failed."""

    def __init__(self, written: list[Path], total: int, path: Path, error: OSError):
        self.written, self.total, self.path = written, total, path
        done = f"{len(written)} of the {total} games' records written" if total > 1 else "the game's record not written"
        if written:
            done += f" ({file_span(written)})"
        super().__init__(f"{done}, then {path.name}: {error.strerror or error}")


def write_match(folder: str | Path, game: Game, match) -> list[Path]:
    """One SGF file per game of a match played with `record_moves=True`, numbered on after the
    game-NNNN.sgf files already in `folder` (game-0001.sgf, ... in an empty one), so that a second
    match into the folder replaces nothing (one writing there at the same time included: a
    number the other took first is skipped). Each file's GC names the game within its own match
    ("A vs B, game 1 of 12"). MatchRecordsError (with the files written) if a write fails."""
    return list(match_files(folder, game, match))


def match_files(folder: str | Path, game: Game, match) -> Iterator[Path]:
    """write_match's files, each yielded once written: a caller stopped by any failure (a bug,
    a ^C) still knows which records are on disk."""
    if match.records is None:
        raise ValueError("the match kept no moves: play it with record_moves=True")
    total = len(match.records)
    try:
        first = next_game_number(folder)
    except OSError as error:  # a folder that cannot be listed: numbering from 1 could replace files
        raise MatchRecordsError([], total, Path(folder), error) from error
    paths: list[Path] = []
    for number, record in enumerate(match.records, start=1):
        re_value = resignation_text(record.result > 0) if record.resigned else None  # else to_sgf scores the end
        path, claimed = Path(folder) / f"game-{first:04d}.sgf", False
        try:
            path, first = _claim_game_file(Path(folder), first)
            claimed = True
            with naming_file(path):
                fault("sgf")
                write_sgf(path, game, record.actions, black=record.first, white=record.second, result=re_value,
                          comment=f"{match.a} vs {match.b}, game {number} of {total}")
        except BaseException as error:  # (a ^C or a bug too: no empty record left behind)
            if claimed:  # the empty file that held the number
                path.unlink(missing_ok=True)
            if isinstance(error, OSError):
                raise MatchRecordsError(paths, total, path, error) from error
            raise
        paths.append(path)
        first += 1
        yield path


def _claim_game_file(folder: Path, number: int) -> tuple[Path, int]:
    """The first game-NNNN.sgf from `number` on that no file holds, and its number, created
    empty with an exclusive create: two matches writing into one folder at once each take
    numbers of their own (the listing both made may be the same), so neither replaces the
    other's records."""
    folder.mkdir(parents=True, exist_ok=True)
    while True:
        path = folder / f"game-{number:04d}.sgf"
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            return path, number
        except FileExistsError:
            number += 1


# -- reading ----------------------------------------------------------------------------------


@dataclass
class SGFRecord:
    """The main line of an SGF game: root properties and moves (colour 0 black / 1 white, point text)."""

    properties: dict[str, list[str]] = field(default_factory=dict)
    moves: list[tuple[int, str]] = field(default_factory=list)


def read_sgf(text: str) -> SGFRecord:
    """Parse the first game of an SGF text, following the first variation at every branch."""
    nodes: list[dict[str, list[str]]] = []
    stack: list[list[bool]] = []  # per open tree: [on the main line, has had a sub-tree]
    current: dict[str, list[str]] | None = None
    i, n, started = 0, len(text), False
    while i < n:
        char = text[i]
        if char == "(":
            if stack:
                parent = stack[-1]
                stack.append([parent[0] and not parent[1], False])
                parent[1] = True
            elif started:
                break  # a second game in the collection
            else:
                stack.append([True, False])
                started = True
            current = None
            i += 1
        elif char == ")":
            if not stack:
                raise GameError("SGF: ')' without '('")
            stack.pop()
            current = None
            i += 1
            if not stack:
                break
        elif char == ";":
            if not stack:
                raise GameError("SGF: a node outside a game tree")
            current = {} if stack[-1][0] else None
            if current is not None:
                nodes.append(current)
            i += 1
        elif char.isalpha():
            start = i
            while i < n and text[i].isalpha():
                i += 1
            name = "".join(c for c in text[start:i] if c.isupper())
            values = []
            while True:
                while i < n and text[i].isspace():
                    i += 1
                if i >= n or text[i] != "[":
                    break
                value, i = _read_value(text, i + 1)
                values.append(value)
            if not values:
                raise GameError(f"SGF: property {name} has no value")
            if current is not None:
                current.setdefault(name, []).extend(values)
        elif char.isspace():
            i += 1
        else:
            raise GameError(f"SGF: unexpected {char!r} at character {i}")
    if not nodes:
        raise GameError("SGF: no game found")
    record = SGFRecord(properties=nodes[0])
    for node in nodes:
        if "AB" in node or "AW" in node or "AE" in node:
            raise GameError("SGF: setup stones (AB, AW, AE) are not supported, only games from the start")
        for colour, name in enumerate(COLOURS):
            for value in node.get(name, []):
                record.moves.append((colour, value.strip()))
    return record


def _read_value(text: str, i: int) -> tuple[str, int]:
    """The value starting at `i` (after '['), unescaped, and the index after its ']'."""
    out = []
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":  # an escaped newline is a soft line break
                out.append(text[i + 1])
            i += 2
        elif char == "]":
            return "".join(out), i + 1
        else:
            out.append(char)
            i += 1
    raise GameError("SGF: a value without its closing ']'")


def game_from_sgf(record: SGFRecord) -> Game:
    """The game of a record from GM, SZ and KM (`Game.from_sgf`; gomoku: five in a row)."""
    props = record.properties
    text = props.get("GM", ["1"])[0]
    try:
        number = int(text)
    except ValueError:
        raise GameError(f"SGF: cannot read the game type GM[{text}]") from None
    types = game_types()
    if number not in types:
        names = ", ".join(f"{cls.name} GM[{value}]" for value, cls in sorted(types.items()))
        raise GameError(f"SGF game type GM[{number}] is not one azero plays ({names})")
    cls = types[number]
    size = props.get("SZ", [str(cls.sgf_default_size)])[0]
    width, _, height = size.partition(":")
    try:
        width, height = int(width), int(height or width)
    except ValueError:
        raise GameError(f"SGF: cannot read the board size SZ[{size}]") from None
    try:
        komi = float(props["KM"][0]) if "KM" in props else None
    except ValueError:
        raise GameError(f"SGF: cannot read the komi KM[{props['KM'][0]}]") from None
    return cls.from_sgf(width, height, komi)


@dataclass
class Replay:
    """The moves of a record as actions (passes put back) and the position they reach;
    `passes_put_in`: how many of the actions are passes the record left out."""

    actions: list[int]
    state: State
    passes_put_in: int = 0
    inserted: list[bool] = field(default_factory=list)  # per action: a pass put in (Game.inserted_pass)


def play_actions(game: Game, actions: list[int]) -> State:
    """The one-game state after `actions` from the start."""
    state = game.initial_state(1)
    for action in actions:
        state = game.step(state, torch.tensor([int(action)]))
    return state


def replay(game: Game, record: SGFRecord) -> Replay:
    """Play a record's moves from the start; GameError names the first bad move.

    A move by the side not to move is taken as a pass of the other side first,
    allowed only where that pass is legal: Othello's forced passes, and in Go, where a pass
    is always legal, a record that gives one side two moves in a row (counted in
    `passes_put_in`, so that a caller can say the record was read with passes added).
    """
    state = game.initial_state(1)
    played: list[int] = []
    put_in: list[bool] = []
    pass_action = game.pass_action
    for number, (colour, move) in enumerate(record.moves, start=1):
        action = parse_point(game, move)
        if colour != int(state.to_play[0]):
            if pass_action is None or pass_action not in game.legal_actions(state):
                raise GameError(f"SGF move {number}: {COLOURS[colour]} moves twice in a row but the other side "
                                "cannot pass")
            state = game.inserted_pass(state)
            played.append(pass_action)
            put_in.append(True)
        try:
            state = game.step(state, torch.tensor([action]))
        except GameError as error:
            raise GameError(f"SGF move {number} ({COLOURS[colour]}[{move}]): {error}") from None
        played.append(action)
        put_in.append(False)
    return Replay(played, state, sum(put_in), put_in)
