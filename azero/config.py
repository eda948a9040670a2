"""One typed configuration per run: dataclass defaults, a TOML preset per game, `--set a.b=c`.

    config = load_config(game="gomoku", overrides=["search.simulations=128"])
    config = load_config(path="my-gomoku.toml")

Presets in configs/ (shipped inside the wheel as azero/configs/) set what each game needs over
the defaults here (some repeat a default, to show the value the game was measured with).
Unknown keys and bad values are errors (ConfigError) that name the key and what is allowed.
Every field has a one-line help text, shown by `train.py --help-config` and in the generated
configuration reference (azero/config_docs.py). The [search] section is the search's settings
(SearchSettings, azero/search/settings.py: frozen, handed whole to self-play, the ladder and
checkpoints); the other sections are defined here.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path

from games.options import field_option, invalid_value, is_whole_number, option_field, read_option

from .elo import MAX_GAMES, MAX_OPENING_PLIES
from .errors import UserError, regular_file
from .network import NetworkConfig
from .search.memory import MAX_SIMULATIONS
from .search.settings import SearchSettings


def _config_dir() -> Path:
    """The presets' folder: azero/configs/ inside an installed wheel (pyproject maps the package
    azero.configs to the checkout's configs/), else configs/ beside azero/ in a source checkout
    (an editable install, or PYTHONPATH pointing at the checkout)."""
    package = Path(__file__).resolve().parent
    installed = package / "configs"
    return installed if any(installed.glob("*.toml")) else package.parent / "configs"


CONFIG_DIR = _config_dir()
MAX_MINUTES = 1_000_000  # a run's (and an ablation arm's) budget: beyond these it is a typo, not a plan
MAX_ITERATIONS = 1_000_000_000
# Every number of the schema has both bounds (tests/test_bounds.py checks it): past them a value is
# a typo, not a plan, and some would overflow the float32 arithmetic into NaN
MAX_GAMES_AT_ONCE = 1 << 16  # self-play games of one batch
MAX_POSITIONS = 1_000_000_000  # positions of an iteration, of the replay buffer
MAX_BATCH = 1 << 20  # positions of a gradient step
MAX_LEARNING_RATE = 1e6  # far past any that trains; a rate that makes the loss NaN stops the run (loop.py)
MAX_LOSS_WEIGHT = 1000.0
MAX_GRAD_CLIP = 1e9
MAX_OPPONENTS = 1000  # ladder opponents an evaluation plays


class ConfigError(UserError):
    pass


_f = option_field  # (the schema below is a table: one line per key)


@dataclass
class GameConfig:
    spec: str = _f("gomoku:size=8,k=5", "the game and its options, e.g. gomoku:size=9,k=5 or connect4")


@dataclass
class SelfPlayConfig:
    games: int = _f(128, "self-play games played at once (one batch)", low=1, high=MAX_GAMES_AT_ONCE)
    positions_per_iteration: int = _f(4096, "positions collected per iteration (whole moves of all games)",
                                      low=1, high=MAX_POSITIONS)
    full_search_fraction: float = _f(1.0, "playout cap randomization: the share of moves searched with "
                                     "search.simulations (with root noise) and used as policy targets; the others "
                                     "get search.cheap_simulations, no noise, and train the value only "
                                     "(KataGo: 0.25; 1 = off)", low=0.01, high=1)
    opening_plies: int = _f(0, "random legal moves opening each self-play game, their number drawn for each game "
                            "uniformly from 0 to this (none ending it: a game where every move would stops "
                            "there); their positions are not training samples; an error before the run if "
                            "random openings this long end games (0 = off: the game's initial position)",
                            low=0, high=MAX_OPENING_PLIES)
    search_value_weight: float = _f(0.0, "the value target mixes in the search's value of each position: "
                                    "(1 - w) * the game's outcome + w * the root value of the search made "
                                    "there (0 = the outcome alone, as AlphaZero; 0.5 = the average of the "
                                    "two, Oracle's Connect Four lessons)", low=0, high=1)


@dataclass
class ReplayConfig:
    capacity: int = _f(100_000, "positions kept in the replay buffer", low=1, high=MAX_POSITIONS)
    augment: bool = _f(True, "apply a random board symmetry to each sampled position")


@dataclass
class TrainConfig:
    batch_size: int = _f(256, "positions per gradient step", low=1, high=MAX_BATCH)
    sample_reuse: float = _f(4.0, "gradient steps per iteration = new positions * sample_reuse / batch_size",
                             low=0, high=1000)
    min_replay: int = _f(2048, "positions the buffer must hold before training starts", low=0, high=MAX_POSITIONS)
    optimizer: str = _f("adamw", "optimizer", choices=("adamw", "sgd"))
    learning_rate: float = _f(1e-3, "learning rate (peak for schedules)", low=0, high=MAX_LEARNING_RATE)
    momentum: float = _f(0.9, "SGD momentum", low=0, high=0.999)
    weight_decay: float = _f(1e-4, "weight decay (L2 for SGD, decoupled for AdamW)", low=0, high=1)
    schedule: str = _f("constant", "learning-rate schedule", choices=("constant", "step", "cosine"))
    decay_every: int = _f(50, "step schedule: iterations between decays", low=1, high=MAX_ITERATIONS)
    decay_factor: float = _f(0.3, "step schedule: factor per decay", low=0, high=1)
    schedule_iterations: int = _f(200, "cosine schedule: iterations from peak to min_learning_rate",
                                  low=1, high=MAX_ITERATIONS)
    schedule_minutes: float = _f(0.0, "cosine schedule: minutes of the run's clock (all its sessions, evaluations "
                                 "included) from peak to min_learning_rate, instead of schedule_iterations; "
                                 "set it to a new run's --minutes to end the decay with its budget (0 = off)",
                                 low=0, high=MAX_MINUTES)
    min_learning_rate: float = _f(1e-5, "cosine schedule: final learning rate", low=0, high=MAX_LEARNING_RATE)
    grad_clip: float = _f(5.0, "clip the gradient norm to this (0 = no clipping)", low=0, high=MAX_GRAD_CLIP)
    ema_decay: float = _f(0.0, "self-play, evaluation and checkpoints use an exponential moving average of the "
                          "trained weights, this much of the old average kept per gradient step (0 = off: "
                          "the trained weights; 0.99 averages about the last 100 steps)", low=0, high=1)
    ownership_weight: float = _f(1.5, "weight of the ownership loss (network.ownership; KataGo 1.5)",
                                 low=0, high=MAX_LOSS_WEIGHT)
    score_weight: float = _f(0.02, "weight of the score distribution loss (network.score; KataGo 0.02)",
                             low=0, high=MAX_LOSS_WEIGHT)
    opponent_policy_weight: float = _f(0.15, "weight of the opponent-reply policy loss (network.opponent_policy; "
                                       "KataGo 0.15)", low=0, high=MAX_LOSS_WEIGHT)
    mixed_precision: str = _f("auto", "autocast of the training steps: auto = bfloat16 on a GPU that has it, "
                              "else float16 (with loss scaling) on a GPU, off on a CPU; bfloat16 also runs "
                              "on a CPU", choices=("auto", "off", "bfloat16", "float16"))


@dataclass
class EvaluationConfig:
    every: int = _f(4, "evaluate every this many iterations (0 = only at the end)", low=0, high=MAX_ITERATIONS)
    max_share: float = _f(0.1, "skip an evaluation that is due while the run has spent more than this share of its "
                          "time on evaluations (with Ray, on its waits for the evaluator actor); 1 = never skip, 0 = "
                          "evaluate only the last iteration of the budget, which is never skipped", low=0.0, high=1.0)
    games: int = _f(40, "games against each opponent per evaluation", low=2, high=MAX_GAMES)
    simulations: int = _f(64, "search simulations per move of the network in evaluation games (search.algorithm)",
                          low=1, high=MAX_SIMULATIONS)
    ladder: list = _f([100, 300, 1000, 3000, 10000],
                      "opponents, weakest first: UCT iterations (100 = uct:100) or player specs ('random', "
                      "'flatmc:100', 'gtp:...'); the first is Elo 0")
    opponents: int = _f(1, "ladder opponents per evaluation, chosen around the current strength",
                        low=1, high=MAX_OPPONENTS)
    previous_games: int = _f(20, "games against the previously evaluated network (connect the ladder's Elo)", low=0,
                             high=MAX_GAMES)
    opening_plies: int = _f(2, "random opening moves of every evaluation game, each opening played with both "
                           "colours (a deterministic rung would otherwise repeat two games)", low=0,
                           high=MAX_OPENING_PLIES)


@dataclass
class RunConfig:
    seed: int = _f(0, "random seed", low=0, high=2**32 - 1)
    device: str = _f("cpu", "torch device: cpu or cuda")
    threads: int = _f(0, "torch CPU threads (0 = torch's default)", low=0, high=1024)
    keep_every: int = _f(10, "keep a numbered checkpoint every this many iterations", low=1, high=MAX_ITERATIONS)


@dataclass
class Config:
    game: GameConfig = field(default_factory=GameConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    search: SearchSettings = field(default_factory=SearchSettings)
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    run: RunConfig = field(default_factory=RunConfig)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_toml(self) -> str:
        """The whole resolved config as TOML (sections of plain values)."""
        lines = []
        for section, values in self.to_dict().items():
            lines.append(f"[{section}]")
            for key, value in values.items():
                lines.append(f"{key} = {_toml_value(value)}")
            lines.append("")
        return "\n".join(lines)


def toml_text(value) -> str:
    """A config value as TOML writes it: 64, 0.25, true, "gomoku:size=8", [100, 300]."""
    return _toml_value(value)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # a TOML basic string: JSON's escapes are TOML's, and DEL, which JSON leaves, is escaped too
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


def _sections() -> dict[str, type]:
    hints = typing.get_type_hints(Config)
    return {f.name: hints[f.name] for f in dataclasses.fields(Config)}


def _ladder(value, *, from_text: bool) -> list:
    """A ladder: UCT iterations (int) or player specs (str), from TOML or from `--set` text."""
    if from_text:
        text = str(value).strip().strip("[]")
        items = [v.strip().strip("\"'") for v in text.split(";" if ";" in text else ",") if v.strip()]
        value = [int(v) if is_whole_number(v) else v for v in items]
    if not isinstance(value, list) or not value or any(
            isinstance(v, bool) or not isinstance(v, (int, str)) for v in value):
        raise ValueError
    return value


def _convert(section: str, f: dataclasses.Field, kind, value, *, from_text: bool):
    """A config value read and checked by the shared option parser (games/options.py)."""
    name = f"{section}.{f.name}"
    if kind is list:
        try:
            return _ladder(value, from_text=from_text)
        except ValueError:
            raise ConfigError(invalid_value(name, value, "list", "not a non-empty list of UCT iterations or "
                                            "player specs such as [100, 300] or random;uct:100")) from None
    return read_option(name, field_option(f, kind), value, error=ConfigError)


def _apply(config: Config, section: str, key: str, value, *, from_text: bool, origin: str) -> None:
    sections = _sections()
    if section not in sections:
        raise ConfigError(f"{origin}: unknown section [{section}]; valid sections: {', '.join(sections)}")
    target = getattr(config, section)
    fields = {f.name: f for f in dataclasses.fields(target)}
    if key not in fields:
        raise ConfigError(f"{origin}: unknown key {section}.{key}; valid keys of [{section}]: {', '.join(fields)}")
    kind = typing.get_type_hints(type(target))[key]
    value = _convert(section, fields[key], kind, value, from_text=from_text)
    if type(target).__dataclass_params__.frozen:  # ([search]: the search's settings, which nothing changes in place)
        setattr(config, section, dataclasses.replace(target, **{key: value}))
    else:
        setattr(target, key, value)


def merge_toml(config: Config, data: dict, origin: str) -> None:
    for section, values in data.items():
        if not isinstance(values, dict):
            raise ConfigError(f"{origin}: {section} must be a [section] of keys; valid sections: {', '.join(_sections())}")
        for key, value in values.items():
            _apply(config, section, key, value, from_text=False, origin=origin)


MAX_CONFIG_BYTES = 1 << 20  # a config file is a few hundred bytes; /dev/zero is not one


def read_toml(path: Path) -> dict:
    regular_file(path, "config file", ConfigError)
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_CONFIG_BYTES + 1)
        if len(text) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path} is over {MAX_CONFIG_BYTES:,} bytes: not a config file (TOML)")
        return tomllib.loads(text.decode())
    except OSError as error:  # no permission, ...
        raise ConfigError(f"cannot read the config file {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text file (a config is TOML text)") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    except RecursionError:  # tomllib reads arrays and tables within each other by recursion
        raise ConfigError(f"{path}: not valid TOML: arrays or tables nested too deeply") from None


def preset_path(game_name: str) -> Path:
    return CONFIG_DIR / f"{game_name}.toml"


def load_config(*, game: str | None = None, path: str | Path | None = None, overrides: list[str] = ()) -> Config:
    """Defaults, then the preset (configs/<game>.toml, or `path`), then `--set` overrides."""
    config = Config()
    if path is not None:
        merge_toml(config, read_toml(Path(path)), str(path))
    elif game is not None:
        known = sorted(p.stem for p in CONFIG_DIR.glob("*.toml"))  # (no file lookup of a name given)
        if game not in known:
            raise ConfigError(f"no preset for game {game!r} (configs/{game}.toml); presets: {', '.join(known)}")
        merge_toml(config, read_toml(preset_path(game)), f"configs/{game}.toml")
    for item in overrides:
        key, eq, value = item.partition("=")
        section, dot, name = key.strip().partition(".")
        if not eq or not dot:
            raise ConfigError(f"--set {item!r}: write section.key=value, e.g. search.simulations=128")
        _apply(config, section, name, value.strip(), from_text=True, origin="--set")
    check_config(config)
    return config


def check_config(config: Config) -> None:
    """ConfigError for values that are allowed one by one but not together."""
    search = config.search
    if config.train.min_replay > config.replay.capacity:
        raise ConfigError(f"train.min_replay={config.train.min_replay:,} is more than replay.capacity="
                          f"{config.replay.capacity:,}: the buffer never holds that many, so the network would never "
                          "train")
    if config.train.ema_decay >= 1:
        raise ConfigError(f"train.ema_decay={config.train.ema_decay} must be below 1 (1 would never move the "
                          "average; 0 = off)")
    if config.train.schedule_minutes > 0 and config.train.schedule != "cosine":
        raise ConfigError(f"train.schedule_minutes is the cosine schedule's length; train.schedule is "
                          f"{config.train.schedule!r}: set train.schedule=cosine or train.schedule_minutes=0")
    if config.selfplay.full_search_fraction < 1 and search.cheap_simulations >= search.simulations:
        raise ConfigError(f"search.cheap_simulations={search.cheap_simulations} must be fewer than "
                          f"search.simulations={search.simulations} when selfplay.full_search_fraction < 1")
    if search.algorithm == "gumbel" and search.forced_playouts > 0:
        raise ConfigError("search.forced_playouts is PUCT's; search.algorithm=gumbel spreads its root visits by "
                          "sequential halving: set search.forced_playouts=0")
    if config.network.ownership or config.network.score:  # heads the game must define
        import games

        try:
            game = games.make_from_spec(config.game.spec)
        except games.GameError:
            return  # a bad spec is reported where the game is made
        try:
            config.network.validate(game)
        except UserError as error:
            raise ConfigError(str(error)) from None


def differences(first: Config, second: Config) -> list[tuple[str, object, object]]:
    """(section.key, value in first, value in second) for every key where the two configs differ."""
    a, b = first.to_dict(), second.to_dict()
    return [(f"{section}.{key}", a[section][key], b[section][key])
            for section in a for key in a[section] if a[section][key] != b[section][key]]


def config_from_dict(data: dict) -> Config:
    """Rebuild a Config from `Config.to_dict()` output (checkpoints, run folders)."""
    config = Config()
    merge_toml(config, data, "saved config")
    check_config(config)
    return config


def help_text(config: "Config | None" = None) -> str:
    """Every key with its help, by section: its default, or with `config` (a preset with its
    overrides) the value that config holds, the default named where the two differ."""
    lines = [] if config is None else ["# the values of this config and its overrides; (default: ...) where they differ"]
    for section, cls in _sections().items():
        lines.append(f"[{section}]")
        for f in dataclasses.fields(cls):
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            value = default if config is None else getattr(getattr(config, section), f.name)
            text = (f.metadata or {}).get("help", "")
            choices = (f.metadata or {}).get("choices")
            extra = f" ({' | '.join(choices)})" if choices else ""
            extra += f" (default: {_toml_value(default)})" if value != default else ""
            lines.append(f"  {f.name} = {_toml_value(value)}  # {text}{extra}")
    return "\n".join(lines)

