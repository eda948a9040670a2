"""Players by name: the registry behind every command's player specs.

    player = make("uct:1000", game)     # a Player (azero/players/base.py)
    actions = player.act(states)        # long [B]

Every command line accepts players as short specs, NAME[:ARGUMENT][:key=value,...]:

{players}

A player is one file in this package (its class, ARGUMENT, OPTIONS and a
`build(game, argument, options, *, device, seed)`) plus one line in REGISTRY
below; `make`, `SPEC_HELP`, this list and the help texts of the commands come
from the registry. The external-engine player `gtp:` lives in
azero/players/gtp_player.py: everything after "gtp:" is the engine's command
line, split like a shell would (quotes group words; no shell runs; the program
is looked up on PATH, then in /usr/games), e.g.
    gtp:gnugo --mode gtp --level 1 --chinese-rules
    gtp:"/usr/games/gtp-rhino --level 1"
The Piskvork-brain player `pbrain:` (azero/players/pbrain_player.py) reads its command line
the same way, with the brain's limits as options after a last colon, e.g.
    pbrain:pbrain-rapfi:nodes=1000,turn=0
"""

from __future__ import annotations

from games import Game
from games.options import Option

from ..errors import USER_ERRORS, UserError
from . import az, flatmc, perfect, policy, random_player, uct, zoo
from .base import Player
from .gtp_player import make_gtp_player
from .pbrain_player import make_pbrain_player
from .spec import PlayerEntry, PlayerSpec, split_spec

__all__ = ["REGISTRY", "SPEC_HELP", "PlayerEntry", "PlayerSpec", "check_spec", "make", "parse_spec", "player_list",
           "spec_help"]


def _human(game, argument, options, *, device, seed) -> Player:
    raise UserError("the human player is available in scripts/play.py, not in matches between programs")


def _gtp(game, command, options, *, device, seed) -> Player:
    return make_gtp_player(command, game)


def _pbrain(game, command, options, *, device, seed) -> Player:
    return make_pbrain_player(command, game)


REGISTRY: dict[str, PlayerEntry] = {entry.name: entry for entry in (
    PlayerEntry("random", random_player.build, "uniformly random legal moves", random_player.ARGUMENT,
                random_player.OPTIONS),
    PlayerEntry("uct", uct.build, "random-rollout UCT: UCB1 selection, random playouts", uct.ARGUMENT, uct.OPTIONS),
    PlayerEntry("flatmc", flatmc.build, "flat Monte Carlo: random rollouts shared among the legal moves",
                flatmc.ARGUMENT, flatmc.OPTIONS),
    PlayerEntry("perfect", perfect.build, "exact play: exhaustive search for tic-tac-toe, Nim and other tiny games; "
                "the BitBully solver for 6x7 Connect Four (pip install -e '.[yardsticks]')",
                perfect.ARGUMENT, perfect.OPTIONS),
    PlayerEntry("az", az.build, "a trained network with PUCT or Gumbel AlphaZero search", az.ARGUMENT, az.OPTIONS),
    PlayerEntry("policy", policy.build, "a trained network's most probable legal move, no search (the network "
                "alone)", policy.ARGUMENT, policy.OPTIONS),
    PlayerEntry("zoo", zoo.build, "a network of the model zoo shipped with azero (azero zoo lists them), searched "
                "as its card says unless options say otherwise (az's options)", zoo.ARGUMENT, az.OPTIONS),
    PlayerEntry("human", _human, "you, in play.py; not in matches between programs"),
    PlayerEntry("gtp", _gtp, 'an external GTP engine for go or othello, run as a process, e.g. '
                'gtp:"gnugo --mode gtp --level 1"; one game at a time',
                argument=Option(None, str, metavar="COMMAND"), raw=True),
    PlayerEntry("pbrain", _pbrain, 'an external Piskvork (Gomocup) brain for five-in-a-row gomoku, run as a '
                'process, e.g. pbrain:"pbrain-rapfi":nodes=1000,turn=0 (options nodes, turn, match, memory: '
                'its INFO limits; parallel: games at once, a process each, default 8)',
                argument=Option(None, str, metavar="COMMAND[:OPTIONS]"),
                raw=True),
)}


def spec_help() -> str:
    """One line naming every registered player with its usage and help (for errors and epilogs)."""
    return "players are " + "; ".join(f"{entry.usage()} ({entry.help})" for entry in REGISTRY.values())


def player_list(indent: str = "    ") -> str:
    """The registry as an aligned list: usage, help, then each option's help."""
    lines = []
    for entry in REGISTRY.values():
        lines.append(f"{indent}{entry.usage()}")
        lines.append(f"{indent}    {entry.help}")
        for key, option in entry.options.items():
            allowed = option.allowed_text()
            lines.append(f"{indent}    {key}: {option.help}" + (f"; {allowed}" if allowed else ""))
    return "\n".join(lines)


def __getattr__(name: str):
    if name == "SPEC_HELP":  # made when asked, so that it lists players registered since the import
        return spec_help()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_spec(text: str) -> PlayerSpec:
    """'uct:1000:c=1.0,final=secure' -> PlayerSpec('uct', '1000', {'c': '1.0', 'final': 'secure'})."""
    spec = split_spec(text)
    if not spec.name:
        raise UserError(f"empty player spec {text!r}; {spec_help()}")
    return spec


def make(text: str, game: Game, *, device="cpu", seed: int | None = None) -> Player:
    """Build a player from its spec for `game`; UserError explains a bad spec."""
    entry = REGISTRY.get(text.strip().partition(":")[0].strip().lower())
    if entry is not None and entry.raw:  # the rest is a command line, not key=value options
        return entry.create(text, game, device=device, seed=seed)
    spec = parse_spec(text)
    if spec.name not in REGISTRY:
        raise UserError(f"unknown player {spec.name!r}; {spec_help()}")
    return REGISTRY[spec.name].create(spec, game, device=device, seed=seed)


def check_spec(text: str, game: Game, what: str, *, device="cpu", seed: int | None = None) -> None:
    """UserError naming `what` (e.g. "yardstick") unless `text` makes a player of `game`; the
    player is made and closed, so a missing engine or checkpoint fails here, not later."""
    try:
        make(text, game, device=device, seed=seed).close()
    except USER_ERRORS as error:
        raise UserError(f"{what} {text!r}: {error}") from None


if __doc__:  # (None under python -OO)
    __doc__ = __doc__.format(players=player_list())
