"""What an ablation runs: its arms, seeds, budget and yardsticks, read from the command line and saved.

An arm is `NAME:KEY=VALUE[,KEY=VALUE...]`, the game's preset plus `--set` overrides
(`base:` is the preset itself, `gumbel:search.algorithm=gumbel`). A yardstick is
`judge[:positions=N,min_plies=N,max_plies=N]` (moves judged by an exact solver,
azero/judge.py) or any player spec, which the final network then plays a match against
(`uct:1000`, `az:runs/gomoku-ref/latest.pt:sims=64`, `gtp:gnugo --mode gtp --level 10 ...`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from games.options import Option, read_options

from ..config import MAX_ITERATIONS, MAX_MINUTES, load_config
from ..elo import MAX_GAMES, MAX_OPENING_PLIES
from ..errors import USER_ERRORS, UserError
from ..judge import DEFAULT_MAX_PLIES, DEFAULT_MIN_PLIES, DEFAULT_POSITIONS
from ..players.base import MAX_SIMULATIONS

# --capture-all-dead: our Go scores the final position as it stands (Tromp-Taylor), so GNU Go
# must capture dead stones before it passes, or it loses games its own scoring says it won.
GNUGO = "gtp:gnugo --mode gtp --level {level} --chinese-rules --positional-superko --capture-all-dead"
GRHINO = "gtp:gtp-rhino --level {level}"

# The fixed opponents of each preset (docs/ablations.md): Connect Four by the exact solver,
# gomoku by the UCT ladder (add the frozen reference with --yardstick az:PATH:sims=64),
# Othello by GRhino levels, Go 7x7 by GNU Go levels.
DEFAULT_YARDSTICKS: dict[str, list[str]] = {
    "connect4": ["judge"],
    "gomoku": ["uct:1000", "uct:10000"],
    "othello": [GRHINO.format(level=level) for level in (1, 2, 3)],
    "go": [GNUGO.format(level=level) for level in (1, 10)],
    "tictactoe": ["judge:min_plies=0,max_plies=7", "perfect"],
}

# Random moves that open each match game against a fixed opponent (each opening played with
# both colours): GNU Go and GRhino at a fixed level, like our networks, have no randomness
# to speak of, so without them a 40-game match repeats a few games. Othello needs more
# plies than Go: its first move is one of four symmetric ones.
DEFAULT_OPENING_PLIES: dict[str, int] = {"go": 2, "othello": 4}
# A head-to-head match (and a match against an `az:` yardstick) is two deterministic networks:
# it opens with at least this many random plies.
HEAD_TO_HEAD_OPENING_PLIES = 2

JUDGE_OPTIONS = {
    "positions": Option(DEFAULT_POSITIONS, int, low=1, help="positions judged"),
    "min_plies": Option(DEFAULT_MIN_PLIES, int, low=0, help="fewest random moves before a position"),
    "max_plies": Option(DEFAULT_MAX_PLIES, int, low=0, help="most random moves before a position"),
}

def _key(override: str) -> str:
    """'run.seed' of the override 'run.seed=3'."""
    return override.partition("=")[0].strip()


ARM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
# a comma that starts the next override (section.key=), not one inside a value such as a ladder
NEXT_OVERRIDE = re.compile(r",(?=\s*[a-z_]+\.[a-z_]+\s*=)")


@dataclass(frozen=True)
class Arm:
    """One arm: a name (also its folders' prefix) and the --set overrides it adds to the preset."""

    name: str
    overrides: tuple[str, ...] = ()

    @staticmethod
    def parse(text: str) -> "Arm":
        """'gumbel:search.algorithm=gumbel,search.simulations=16' -> Arm('gumbel', (...))."""
        name, colon, rest = text.strip().partition(":")
        if not colon:
            raise UserError(f"--arm {text!r}: write NAME:KEY=VALUE[,KEY=VALUE...], e.g. base: or "
                            "gumbel:search.algorithm=gumbel")
        if not ARM_NAME.fullmatch(name):
            raise UserError(f"--arm {text!r}: an arm's name is letters, digits and _ . + - (it names folders)")
        overrides = tuple(part.strip() for part in NEXT_OVERRIDE.split(rest) if part.strip())
        return Arm(name, overrides)

    def text(self) -> str:
        return f"{self.name}:{','.join(self.overrides)}"


def judge_options(yardstick: str) -> dict | None:
    """The judge's options of a `judge[:...]` yardstick (None for a player spec)."""
    name, _, rest = yardstick.partition(":")
    if name.strip() != "judge":
        return None
    given = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq:
            raise UserError(f"yardstick {yardstick!r}: write judge:positions=300,min_plies=6,max_plies=22")
        given[key.strip()] = value.strip()
    options = read_options("judge", JUDGE_OPTIONS, given, error=UserError)
    if options["min_plies"] > options["max_plies"]:
        raise UserError(f"yardstick {yardstick!r}: min_plies is above max_plies")
    return options


def player_name(yardstick: str) -> str:
    """The player a match yardstick names, as the registry reads it: 'az' of ' AZ:ref.pt:sims=64'."""
    return yardstick.strip().partition(":")[0].strip().lower()


def check_yardstick(yardstick: str, game) -> None:
    """UserError for a yardstick that is neither the judge of a game it can solve nor a player of
    `game` (made and closed here: a bad spec, a missing engine or checkpoint fails before any training)."""
    if judge_options(yardstick) is not None:
        from ..oracle import make_oracle

        try:
            make_oracle(game)
        except USER_ERRORS as error:
            raise UserError(f"yardstick {yardstick!r}: {error}") from None
        return
    from ..players import REGISTRY, check_spec, parse_spec

    if player_name(yardstick) not in REGISTRY:
        parse_spec(yardstick)
        raise UserError(f"yardstick {yardstick!r}: neither judge[:...] nor a player spec (players: "
                        f"{', '.join(REGISTRY)})")
    check_spec(yardstick, game, "yardstick")


@dataclass
class Plan:
    """Everything that fixes an ablation's results (saved in its folder as the first thing it writes).

    preset:      the game's preset (configs/PRESET.toml) every arm starts from
    arms:        the arms, run in this order for each seed
    seeds:       run.seed of each arm's runs
    minutes / iterations: the training budget of every run (one of them)
    overrides:   --set overrides common to every arm
    yardsticks:  what each final network is measured against
    games:       games per match yardstick (alternating colours)
    simulations: the networks' search in the yardsticks
    opening_plies: random moves that open each match game (games 2k and 2k + 1 share one)
    head_to_head: games of each arm's final network against the first arm's (same seed); 0: none
    """

    preset: str
    arms: list[Arm]
    seeds: list[int]
    minutes: float | None = None
    iterations: int | None = None
    overrides: list[str] = field(default_factory=list)
    yardsticks: list[str] = field(default_factory=list)
    games: int = 40
    simulations: int = 0
    opening_plies: int = 0  # plans saved before it existed played none
    head_to_head: int = 0  # likewise

    def check(self) -> None:
        """UserError for anything wrong before anything runs: arms' configs, yardsticks, budgets."""
        if (self.minutes is None) == (self.iterations is None):
            raise UserError("give one training budget: --minutes M or --iterations N")
        if self.minutes is not None and not 0 < self.minutes <= MAX_MINUTES:
            raise UserError(f"--minutes must be above 0 and at most {MAX_MINUTES:,} (train.py's limit)")
        if self.iterations is not None and not 1 <= self.iterations <= MAX_ITERATIONS:
            raise UserError(f"--iterations must be in 1..{MAX_ITERATIONS:,} (train.py's limit)")
        if not self.arms:
            raise UserError("give at least one --arm NAME:OVERRIDES (base: for the preset itself)")
        names = [arm.name for arm in self.arms]
        if len(set(names)) != len(names):
            raise UserError(f"arm names must differ: {', '.join(names)}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise UserError("give distinct seeds, e.g. --seeds 0,1")
        if not 2 <= self.games <= MAX_GAMES:
            raise UserError(f"--games must be in 2..{MAX_GAMES:,}")
        if not 1 <= self.simulations <= MAX_SIMULATIONS:
            raise UserError(f"--sims must be in 1..{MAX_SIMULATIONS:,}")
        if not 0 <= self.opening_plies <= MAX_OPENING_PLIES:
            raise UserError(f"--opening-plies must be at least 0 and at most {MAX_OPENING_PLIES:,}")
        if self.head_to_head < 0 or self.head_to_head == 1 or self.head_to_head > MAX_GAMES:
            raise UserError(f"--head-to-head is a number of games: 0 (none) or 2..{MAX_GAMES:,}")
        if not self.yardsticks:
            raise UserError(f"no yardstick for preset {self.preset!r}: give --yardstick judge or a player spec")
        fixed = [text for text in self.overrides if _key(text) == "run.seed"]
        fixed += [text for arm in self.arms for text in arm.overrides if _key(text) in ("run.seed", "game.spec")]
        if fixed:
            raise UserError(f"{fixed[0]}: every arm plays the same game (the preset's, or --set game.spec=...) "
                            "and its runs take their seeds from --seeds")
        from ..arena import check_opening
        from ..loop import check_new_run

        for seed in self.seeds:  # (a seed out of range is a config error)
            load_config(game=self.preset, overrides=[*self.overrides, f"run.seed={seed}"])
        game = check_new_run(load_config(game=self.preset, overrides=self.overrides))  # --set's own errors
        for arm in (arm for arm in self.arms if arm.overrides):  # what train.py checks before it makes a run folder
            try:
                check_new_run(load_config(game=self.preset, overrides=[*self.overrides, *arm.overrides]))
            except USER_ERRORS as error:
                raise type(error)(f"--arm {arm.text()!r}: {error}") from None
        check_opening(game, self.opening_plies)
        if self.head_to_head:
            check_opening(game, self.head_to_head_opening_plies())
        for yardstick in self.yardsticks:
            check_yardstick(yardstick, game)
        self.check_trees(game)

    def check_trees(self, game) -> None:
        """UserError unless the networks' trees fit in memory in each measurement: the judge searches
        all its positions at once, a match its games (else it fails after the arms' training)."""
        from ..arena import MAX_GAMES_AT_ONCE
        from ..search import memory
        from ..search.tree import node_bytes

        batches = [(judge_options(y) or {}).get("positions") or min(self.games, MAX_GAMES_AT_ONCE)
                   for y in self.yardsticks] + [min(self.head_to_head, MAX_GAMES_AT_ONCE)]
        node = node_bytes(game.initial_state(1), game.num_actions, with_prior=True)
        try:
            memory.check_tree_size(max(batches), self.simulations + 1, node)
        except memory.TreeTooLarge as error:
            raise UserError(f"--sims {self.simulations}: {error}") from None

    def runs(self) -> list[tuple[Arm, int]]:
        """(arm, seed) in the order they run: every arm for the first seed, then for the next."""
        return [(arm, seed) for seed in self.seeds for arm in self.arms]

    def head_to_head_opening_plies(self) -> int:
        """Random plies that open each head-to-head game (each opening played with both colours):
        the plan's, at least HEAD_TO_HEAD_OPENING_PLIES, and more where the game has fewer
        openings than the networks' matches have pairs of games (Connect Four has 49 of two
        plies), as two deterministic networks would replay the same games."""
        start = min(max(self.opening_plies, HEAD_TO_HEAD_OPENING_PLIES), MAX_OPENING_PLIES)
        networks = any(player_name(yardstick) == "az" for yardstick in self.yardsticks)
        games = max(self.head_to_head, self.games if networks else 0)
        if games < 2:
            return start
        from ..arena import enough_opening_plies

        spec = load_config(game=self.preset, overrides=self.overrides).game.spec
        return min(enough_opening_plies(spec, start, (games + 1) // 2), MAX_OPENING_PLIES)

    def yardstick_opening_plies(self, yardstick: str) -> int:
        """Random plies that open each game against a match yardstick: a network (`az:`) is as
        deterministic as the arm's, so it opens like a head-to-head match."""
        return self.head_to_head_opening_plies() if player_name(yardstick) == "az" else self.opening_plies

    def to_dict(self) -> dict:
        out = asdict(self)
        out["arms"] = [arm.text() for arm in self.arms]
        return out

    @staticmethod
    def from_dict(data: dict) -> "Plan":
        data = dict(data)
        data["arms"] = [Arm.parse(text) for text in data["arms"]]
        return Plan(**data)

    def extends(self, saved: "Plan") -> str | None:
        """None if this plan is `saved` with arms or seeds added, or head-to-head matches where it
        had none (or the same); else what differs."""
        mine, theirs = self.to_dict(), saved.to_dict()
        for key in ("preset", "minutes", "iterations", "overrides", "yardsticks", "games", "simulations",
                    "opening_plies"):
            if mine[key] != theirs[key]:
                return f"{key} is {theirs[key]!r} there, {mine[key]!r} here"
        if saved.head_to_head and self.head_to_head != saved.head_to_head:
            return f"head_to_head is {saved.head_to_head!r} there, {self.head_to_head!r} here"
        arms = {arm.name: arm for arm in self.arms}
        for arm in saved.arms:
            if arm.name not in arms:
                return f"arm {arm.name} is missing here"
            if arms[arm.name] != arm:
                return f"arm {arm.name} is {arm.text()!r} there, {arms[arm.name].text()!r} here"
        if [arm.name for arm in self.arms[:len(saved.arms)]] != [arm.name for arm in saved.arms]:
            # (the first arm is the head-to-head matches' opponent; new arms come after the old)
            return (f"the arms are {', '.join(a.name for a in saved.arms)} there, in that order, "
                    f"{', '.join(a.name for a in self.arms)} here")
        if not set(saved.seeds) <= set(self.seeds):
            return f"seeds are {saved.seeds} there, {self.seeds} here"
        return None


def make_plan(preset: str, arms: list[str], seeds: list[int], *, minutes: float | None, iterations: int | None,
              overrides: list[str], yardsticks: list[str] | None, games: int, simulations: int | None,
              opening_plies: int | None = None, head_to_head: int = 0) -> Plan:
    """A checked plan from command-line values (yardsticks, simulations and opening plies default
    to the preset's)."""
    if yardsticks is None:
        yardsticks = list(DEFAULT_YARDSTICKS.get(preset, []))
    if simulations is None:
        simulations = load_config(game=preset, overrides=overrides).evaluation.simulations
    if opening_plies is None:
        opening_plies = DEFAULT_OPENING_PLIES.get(preset, 0)
    plan = Plan(preset, [Arm.parse(text) for text in arms], list(seeds), minutes, iterations, list(overrides),
                list(yardsticks), games, simulations, opening_plies, head_to_head)
    plan.check()
    return plan
