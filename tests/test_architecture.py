"""The layering holds: self-play loads no player code, no module imports itself around a cycle,
a player is added by registering it, and options read the same everywhere."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import games
from azero import players
from azero.cli import evaluate, play
from azero.config import ConfigError, load_config
from azero.errors import UserError
from azero.players import PlayerEntry, make, spec_help
from azero.players.base import Player
from azero.players.spec import SEED
from games import GameError, sample_uniform_legal
from games.options import Option

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("azero", "games")


def test_training_without_ray_loads_no_ray_code():
    code = "import sys, azero.loop, azero.cli.train; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    loaded = out.stdout.split()
    assert "azero.loop" in loaded
    assert [m for m in loaded if m == "ray" or m.startswith(("ray.", "azero.distributed"))] == []


def test_self_play_loads_no_player_protocol_or_web_code():
    code = "import sys, azero.selfplay; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    loaded = out.stdout.split()
    assert "azero.selfplay" in loaded
    banned = ("azero.players", "azero.players.base", "azero.protocols", "azero.web")
    assert [m for m in loaded if m in banned or m.startswith(tuple(b + "." for b in banned))] == []


# -- the import graph ---------------------------------------------------------------------------------


def module_files() -> dict[str, Path]:
    """Module name -> file, for every module of azero/ and games/ (a package is its __init__.py)."""
    out = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The azero / games modules whose code runs when `name` imports what it imports, anywhere in
    the file (module level or inside functions): the module named, the submodule when a name is one,
    and every package above them (their __init__ runs first) except the packages above `name`
    itself, which are already being imported when `name` runs."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    above_self = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                targets.add(submodule if submodule in known else module)
    edges = set()
    for target in targets:
        if target.split(".")[0] not in PACKAGES:
            continue
        parts = target.split(".")
        edges.add(target)
        edges.update(".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) not in above_self)
    edges.discard(name)
    unknown = edges - known
    assert not unknown, f"{name} imports modules that do not exist: {sorted(unknown)}"
    return edges


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    known = set(files)
    return {name: imported_modules(name, path, known) for name, path in files.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[tuple[list[str], list[str]]]:
    """Per strongly connected component: one cycle in it (a list of modules, the first repeated at
    the end) and all its members."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(set(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    cycles = []
    for component in components:  # the shortest way from a member back to itself, inside the component
        start = min(component)
        paths = {start: [start]}
        frontier = [start]
        while frontier and start not in [n for f in frontier for n in graph[f]]:
            following = []
            for node in frontier:
                for other in sorted(graph[node] & component):
                    if other not in paths:
                        paths[other] = paths[node] + [other]
                        following.append(other)
            frontier = following
        last = next(f for f in frontier if start in graph[f])
        cycles.append((paths[last] + [start], sorted(component)))
    return cycles


def test_the_cycle_finder_names_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert find_cycles(graph) == [(["a", "b", "c", "a"], ["a", "b", "c"])]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_azero_and_games_modules():
    graph = import_graph()
    assert {"azero.search", "azero.search.tree"} <= graph["azero.selfplay"]  # (the walk sees imports)
    assert "azero.players" in graph["azero.session"] and "games.keyed_random" in graph["azero.arena"]
    cycles = find_cycles(graph)
    assert not cycles, "import cycles: " + "; ".join(
        f"{' -> '.join(cycle)} (modules that import each other: {', '.join(members)})" for cycle, members in cycles)


# Layers (docs/architecture.md): a module may import its own layer and the ones below. The first
# prefix that matches a module's name gives its layer.
LAYERS = (
    ("azero.cli", 7),
    ("azero.protocols", 6), ("azero.web", 6),
    ("azero.session", 5), ("azero.sgf", 5), ("azero.loop", 5), ("azero.throughput", 5), ("azero.throughput_mctx", 5),
    ("azero.distributed", 5), ("azero.ablation", 5),
    ("azero.players", 4), ("azero.arena", 4), ("azero.ladder", 4),
    ("azero.network_search", 3), ("azero.selfplay", 3), ("azero.replay", 3), ("azero.trainer", 3),
    ("azero.network", 2), ("azero.blocks", 2), ("azero.checkpoint", 2), ("azero.config", 2),
    ("azero.config_docs", 2), ("azero.warm_start", 2),
    ("azero.zoo", 2),
    ("azero.search", 1), ("azero.wire", 1), ("azero.quantized", 1), ("azero.elo", 1), ("azero.solver", 1),
    ("azero.reference", 1), ("azero.plot", 1), ("azero.svg", 1), ("azero.tabular", 1), ("azero.errors", 1),
    ("azero", 1),
    ("games", 0),
)


def layer(module: str) -> int:
    """The module's layer; a package whose __init__.py is empty sits at the bottom (importing one of
    its modules runs nothing else)."""
    path = module_files()[module]
    if path.name == "__init__.py" and not path.read_text().strip():
        return 0
    return next(level for prefix, level in LAYERS if module == prefix or module.startswith(prefix + "."))


def test_no_module_imports_a_higher_layer():
    graph = import_graph()
    upward = sorted(f"{name} ({layer(name)}) imports {other} ({layer(other)})"
                    for name, imports in graph.items() for other in imports
                    if layer(other) > layer(name) and not name.startswith(other + "."))
    assert not upward, "imports against docs/architecture.md's layers: " + "; ".join(upward)
    assert layer("azero.protocols.gtp") == 6 and layer("azero.search.tree") == 1  # (the table reads as meant)
    assert layer("azero.distributed.source") == 5
    assert layer("azero.tabular.dyna") == 1 and layer("azero.cli.planning") == 7


# -- the player registry ------------------------------------------------------------------------------


class GreedyPlayer(Player):
    """The lowest legal action every time but one in `every` (a toy for the registry test)."""

    def __init__(self, game, every, bias, seed):
        super().__init__(game, seed)
        self.every, self.bias = every, bias
        self.spec = f"toy:{every}"

    def act(self, states, keys=None):
        mask = self.game.legal_mask(states)
        return sample_uniform_legal(mask, self._keys(states, keys)) if self._calls % self.every == 0 \
            else mask.long().argmax(dim=1)


def build_toy(game, every, options, *, device, seed):
    return GreedyPlayer(game, every, options["bias"], seed)


TOY = PlayerEntry("toy", build_toy, "a toy player registered by a test", Option(None, int, low=1, metavar="EVERY",
                  help="how often it moves at random"),
                  {"bias": Option(0.5, float, low=0, high=1, help="unused"), "seed": SEED})


def test_a_registered_player_is_built_by_make_and_listed_in_every_help(monkeypatch):
    game = games.make("tictactoe")
    with pytest.raises(UserError, match="unknown player 'toy'"):
        make("toy:3", game)
    assert "toy:EVERY" not in spec_help()
    monkeypatch.setitem(players.REGISTRY, "toy", TOY)
    player = make("toy:3:bias=0.25,seed=7", game)
    assert isinstance(player, GreedyPlayer) and (player.every, player.bias, player.seed) == (3, 0.25, 7)
    assert make("toy:2", game, seed=5).seed == 5
    assert player.act(game.initial_state(4)).shape == (4,)
    with pytest.raises(UserError, match="toy: option bias=2.0 is out of range; allowed: 0..1"):
        make("toy:3:bias=2", game)
    with pytest.raises(UserError, match="toy needs how often it moves at random; write toy:EVERY"):
        make("toy", game)
    usage = "toy:EVERY[:bias=BIAS,seed=SEED]"
    assert usage in spec_help() and usage in players.SPEC_HELP
    for parser in (play.build_parser(), evaluate.build_parser()):
        assert usage in " ".join(parser.format_help().split())


# -- one option parser --------------------------------------------------------------------------------


def test_game_options_player_options_and_config_values_read_and_fail_alike():
    cases = (
        (GameError, lambda v: games.make("connect4", rows=v), "connect4: option rows"),
        (UserError, lambda v: make(f"az:x.pt:sims={v}", games.make("tictactoe")), "az: option sims"),
        (ConfigError, lambda v: load_config(game="tictactoe", overrides=[f"selfplay.games={v}"]), "selfplay.games"),
    )
    for error, build, where in cases:
        with pytest.raises(error, match=rf"^{where}='many' is not a valid int \(not a number\); allowed: "):
            build("many")
        with pytest.raises(error, match=rf"^{where}='2.5' is not a valid int \(not a whole number\)"):
            build("2.5")
        with pytest.raises(error, match=rf"^{where}=0 is out of range; allowed: "):
            build("0")
    assert games.make_from_spec("nim:misere=YES").misere is True
    assert load_config(game="tictactoe", overrides=["replay.augment=no"]).replay.augment is False
    for read in (lambda: games.make("nim", misere="maybe"),
                 lambda: load_config(game="tictactoe", overrides=["replay.augment=maybe"])):
        with pytest.raises(ValueError, match="='maybe' is not a valid boolean \\(not true or false\\)"):
            read()


@pytest.mark.parametrize("command", ["train", "evaluate", "play", "pbrain", "gtp", "judge"])
def test_every_device_option_refuses_a_device_this_machine_lacks_in_one_line(command, capsys):
    import importlib

    main = importlib.import_module(f"azero.cli.{command}").main
    with pytest.raises(SystemExit) as stop:
        main(["--device", "tpu"])
    assert stop.value.code == 2
    assert "argument --device: 'tpu' is not a torch device; use cpu, cuda or cuda:N" in capsys.readouterr().err


# -- folders ------------------------------------------------------------------------------------------


def folder(module: str) -> str:
    """The folder (a package below azero/, or games/) a module lives in; a module directly in azero/
    is a room of its own."""
    packages = sorted((name for name, path in module_files().items() if path.name == "__init__.py" and name != "azero"),
                      key=len, reverse=True)
    return next((p for p in packages if module == p or module.startswith(p + ".")), module)


def test_every_folder_sits_in_one_layer():
    spread: dict[str, set[int]] = {}
    for name, path in module_files().items():
        if path.name == "__init__.py" and not path.read_text().strip():
            continue
        spread.setdefault(folder(name), set()).add(layer(name))
    straddling = sorted(f"{name}: layers {sorted(levels)}" for name, levels in spread.items() if len(levels) > 1)
    assert not straddling, "folders spanning layers (move the odd module to a folder of its layer): " + "; ".join(
        straddling)
    assert spread["azero.search"] == {1} and spread["azero.protocols"] == {6}  # (the walk reads as meant)


def test_no_folder_is_both_below_and_above_another():
    graph: dict[str, set[str]] = {}
    for name, imports in import_graph().items():
        graph.setdefault(folder(name), set()).update(folder(other) for other in imports if folder(other) != folder(name))
    cycles = find_cycles(graph)
    assert not cycles, "folders importing each other: " + "; ".join(" -> ".join(cycle) for cycle, _ in cycles)

