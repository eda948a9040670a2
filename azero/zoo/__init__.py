"""The model zoo: trained networks shipped inside the package, each with its model card.

    entry = zoo.get("gomoku8")          # a ZooEntry: name, path, card
    zoo.verify(entry)                   # UserError unless the file matches the card's checksum
    zoo.for_game(game)                  # the zoo network of a game, or None

Each network is two files in this folder: NAME.pt (an ordinary checkpoint, loaded like any other)
and NAME.toml, its card: the game, the search its figures were measured with, how and where it
was trained, its SHA-256, and its results against yardsticks with 95% intervals and the
command that reproduces each. Players use a zoo network as `zoo:NAME[:options]`, the options of
`az:` (players/zoo.py); `azero zoo` lists the cards.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path

import games
from games import Game

from ..errors import UserError

FOLDER = Path(__file__).resolve().parent
CARD_KEYS = {"name", "title", "game", "sha256", "sims", "algorithm", "preset", "training", "machine", "date",
             "commit", "command", "results"}
RESULT_KEYS = {"opponent", "games", "record", "score", "low", "high", "machine", "date", "command"}


@dataclass(frozen=True)
class ZooEntry:
    """One zoo network: `path` to its checkpoint and `card`, its model card as read from NAME.toml."""

    name: str
    path: Path
    card: dict

    @property
    def game(self) -> Game:
        return games.make_from_spec(self.card["game"])


def _read_card(path: Path) -> dict:
    try:
        card = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise UserError(f"zoo card {path.name} cannot be read: {error}") from None
    missing = CARD_KEYS - set(card)
    if missing:
        raise UserError(f"zoo card {path.name} lacks {', '.join(sorted(missing))}")
    for result in card["results"]:
        if RESULT_KEYS - set(result):
            raise UserError(f"zoo card {path.name}: a result lacks {', '.join(sorted(RESULT_KEYS - set(result)))}")
    if card["name"] != path.stem:
        raise UserError(f"zoo card {path.name} names itself {card['name']!r}")
    return card


def entries() -> list[ZooEntry]:
    """Every zoo network, by name."""
    return [ZooEntry(card_path.stem, card_path.with_suffix(".pt"), _read_card(card_path))
            for card_path in sorted(FOLDER.glob("*.toml"))]


def names() -> list[str]:
    return [card_path.stem for card_path in sorted(FOLDER.glob("*.toml"))]


def get(name: str) -> ZooEntry:
    """The zoo network `name`; UserError naming the ones there are."""
    card_path = FOLDER / f"{name}.toml"
    if name not in names():
        raise UserError(f"no zoo network {name!r}; the zoo has {', '.join(names()) or 'none'}")
    return ZooEntry(name, card_path.with_suffix(".pt"), _read_card(card_path))


def plays(entry: ZooEntry, game: Game) -> bool:
    """Whether the zoo network plays `game`: its own game, or, with pooled heads, that game on
    a board of another size (network.plays' rule; the checkpoint is read only then)."""
    from ..checkpoint import load_checkpoint, pooled_heads
    from ..network import another_size_of

    if entry.game == game:
        return True
    return entry.path.is_file() and another_size_of(entry.game, game) and pooled_heads(load_checkpoint(entry.path))


def for_game(game: Game) -> ZooEntry | None:
    """The zoo network that plays `game`, if there is one: one made for it, else one with pooled
    heads made for another size of it."""
    candidates = entries()
    exact = next((entry for entry in candidates if entry.game == game), None)
    return exact or next((entry for entry in candidates if plays(entry, game)), None)


def checksum(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(entry: ZooEntry) -> None:
    """UserError unless the network's file is there and matches its card's SHA-256."""
    if not entry.path.is_file():
        raise UserError(f"zoo network {entry.name}: its file {entry.path.name} is missing from the installation")
    if checksum(entry.path) != entry.card["sha256"]:
        raise UserError(f"zoo network {entry.name}: {entry.path.name} does not match its card's checksum "
                        "(damaged or replaced)")


def checked(name: str, game: Game | None = None) -> ZooEntry:
    """The zoo network `name`, its file verified against its card; UserError if it does not play
    `game` (when given) or is damaged."""
    entry = get(name)
    verify(entry)
    if game is not None and not plays(entry, game):
        raise UserError(f"zoo network {name} plays {entry.card['game']}, not {game.spec}")
    return entry


def checkpoint_path(argument: str, game: Game | None = None) -> Path:
    """The checkpoint a command's argument names: a path, or else a zoo network's name (its
    verified file, of `game` when given); a path that is neither is returned for the loader to
    report."""
    path = Path(argument).expanduser()
    if path.exists() or argument not in names():
        return path
    return checked(argument, game).path


def describe(entry: ZooEntry, *, full: bool = False) -> str:
    """The card as text: one line, or (full) every field and result."""
    card = entry.card
    best = max(card["results"], key=lambda r: r["score"], default=None)
    line = f"{entry.name:10} {card['title']} ({card['game']}), {card['training']}"
    if not full:
        if best is not None:
            line += (f"; {best['score']:.1%} [{best['low']:.1%}, {best['high']:.1%}] against "
                     f"{best['opponent']} at {card['sims']} simulations")
        return line
    lines = [f"{entry.name}: {card['title']}", f"  game      {card['game']}",
             f"  search    {card['algorithm']}, {card['sims']} simulations a move (zoo:{entry.name}:sims=N to change)",
             f"  preset    {card['preset']}", f"  training  {card['training']}", f"  machine   {card['machine']}",
             f"  date      {card['date']}", f"  commit    {card['commit']}", f"  command   {card['command']}",
             f"  sha256    {card['sha256']}", f"  boards    {_boards(entry)}", "  results"]
    for result in card["results"]:
        lines.append(f"    against {result['opponent']}: {result['record']} (wins-draws-losses) in {result['games']} "
                     f"games, {result['score']:.1%} [{result['low']:.1%}, {result['high']:.1%}]; "
                     f"{result['machine']}, {result['date']}")
        lines.append(f"      {result['command']}")
    return "\n".join(lines)


def _boards(entry: ZooEntry) -> str:
    """The boards the network plays and those it learnt on (its checkpoint's stages)."""
    from ..checkpoint import load_checkpoint, pooled_heads, stages_text, training_stages

    if not entry.path.is_file():
        return "(its file is missing)"
    data = load_checkpoint(entry.path)
    kind = entry.card["game"].split(":")[0]
    sizes = f"{kind} on every board size (pooled heads)" if pooled_heads(data) else f"{entry.card['game']} only"
    return f"{sizes}; learnt on {stages_text(training_stages(data))}"

