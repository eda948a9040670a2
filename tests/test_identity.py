"""Game identity: two specs of one game compare equal everywhere, by canonical options, and every
entry point that checks a checkpoint's game accepts a checkpoint of each preset game with its own
board (pbrain, the GTP engine, play.py's game_from_args, the az: player, the GUI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import games
from azero.checkpoint import atomic_save, load_checkpoint, network_checkpoint
from azero.config import CONFIG_DIR, load_config
from azero.errors import UserError
from azero.network import NetworkConfig, PolicyValueNet
from azero.players import make
from azero.protocols.gtp import GTPEngine
from azero.protocols.piskvork import Brain, brain_game, check_brain_game
from azero.session import Engine, game_from_args
from azero.web.server import Gui

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
SUBPROCESS_ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # this tree's azero, whatever is installed
PRESETS = sorted(path.stem for path in CONFIG_DIR.glob("*.toml"))
PRESET_GAMES = {preset: games.make_from_spec(load_config(game=preset).game.spec) for preset in PRESETS}


def test_specs_of_one_game_compare_equal_and_have_one_text():
    same = [
        ("gomoku:size=8,k=5", "gomoku:size=15,width=8,height=8,k=5"),  # what a Piskvork brain built for START 8
        ("gomoku:size=8", "gomoku:width=8,height=8,rule=freestyle"),
        ("gomoku:width=9,height=7", "gomoku:size=12,width=9,height=7,k=5"),
        ("gomoku:width=9,size=7", "gomoku:width=9,height=7"),
        ("go:size=7,komi=7.5", "go:komi=7.50,size=7"),
        ("go:komi=0", "go:komi=-0"),
        ("nim:misere=no", "nim:pile=15,misere=false"),
        ("connect4", "connect4:columns=7,rows=6,k=4"),
    ]
    for first, second in same:
        a, b = games.make_from_spec(first), games.make_from_spec(second)
        assert a == b and hash(a) == hash(b) and a.spec == b.spec, (first, second)
        assert games.make_from_spec(a.spec) == a
    assert games.make_from_spec("gomoku:size=15,width=8,height=8,k=5").spec == "gomoku:size=8,k=5,rule=freestyle"
    assert games.make_from_spec("gomoku:width=9,height=7").spec == "gomoku:width=9,height=7,k=5,rule=freestyle"
    different = [("gomoku:size=8", "gomoku:size=9"), ("gomoku:width=9,height=7", "gomoku:width=7,height=9"),
                 ("gomoku:size=8", "gomoku:size=8,rule=standard"), ("go:komi=7.5", "go:komi=6.5")]
    for first, second in different:
        assert games.make_from_spec(first) != games.make_from_spec(second)


def test_a_checkpoint_written_with_the_old_spec_text_loads(tmp_path):
    game = games.make("gomoku", width=8, height=6, k=4)
    net = PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), game).eval()
    data = network_checkpoint(net, game, 1)
    data["game"] = "gomoku:size=15,width=8,height=6,k=4,rule=freestyle"  # how earlier versions wrote it
    path = tmp_path / "old.pt"
    atomic_save(data, path)
    assert load_checkpoint(path, game=games.make_from_spec("gomoku:width=8,height=6,k=4"))["game"] == data["game"]
    assert game_from_args("gomoku:height=6,width=8,k=4", str(path)) == game
    player = make(f"az:{path}:sims=4", game)
    assert int(player.act(game.initial_state(1))[0]) in range(game.num_actions)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, tuple[games.Game, str]]:
    """preset name -> (its game, a tiny untrained checkpoint of it)."""
    folder = tmp_path_factory.mktemp("checkpoints")
    out = {}
    for preset, game in PRESET_GAMES.items():
        torch.manual_seed(0)
        net = PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), game).eval()
        path = folder / f"{preset}.pt"
        atomic_save(network_checkpoint(net, game, 1), path)
        out[preset] = game, str(path)
    return out


def other_text(game: games.Game) -> str:
    """The game's spec written another way: its options in reverse order with spaces, and a square
    gomoku board as width and height with a different size (as a Piskvork brain builds it)."""
    options = {key: value for key, value in game.config.items() if value is not None}
    if "width" in game.options and "size" in options:
        options = {"size": 15 if options["size"] != 15 else 9, "width": options["size"], "height": options["size"],
                   **{key: value for key, value in options.items() if key != "size"}}
    return f"{game.name}:" + ", ".join(f"{key} = {value}" for key, value in reversed(options.items()))


@pytest.mark.parametrize("preset", PRESETS)
def test_play_session_and_az_player_accept_a_checkpoint_of_each_preset(checkpoints, preset):
    game, path = checkpoints[preset]
    text = other_text(game)
    assert text != game.spec and games.make_from_spec(text) == game
    assert game_from_args(None, path) == game and game_from_args(text, path) == game
    assert load_checkpoint(path, game=games.make_from_spec(text))["game"] == game.spec
    engine = Engine(games.make_from_spec(text), checkpoint=path, simulations=4)
    assert int(engine.think(game.initial_state(1)).action[0]) in game.legal_actions(game.initial_state(1))
    with pytest.raises(UserError, match="is a checkpoint of"):
        game_from_args("gomoku:size=6,k=4", path)


@pytest.mark.parametrize("preset", [preset for preset, game in PRESET_GAMES.items() if game.has_board])
def test_the_gui_accepts_a_checkpoint_of_each_board_preset(checkpoints, preset):
    game, path = checkpoints[preset]
    gui = Gui(games.make_from_spec(other_text(game)), Engine(game, checkpoint=path, simulations=4),
              checkpoint=path)
    try:
        engine = gui.engine
        gui.new({"game": other_text(game), "human": 1})  # the same game written another way: no refusal
        assert gui.game == game and gui.snapshot()["game"] == game.spec
        gui.new({"simulations": 6})  # a new strength: the network loaded is kept, not read again
        assert gui.engine is engine and gui.snapshot()["simulations"] == 6
        with pytest.raises(games.GameError, match="this network plays"):
            gui.new({"game": "gomoku:size=6,k=4"})
    finally:
        gui.close()


@pytest.mark.parametrize("preset", [preset for preset, game in PRESET_GAMES.items() if game.gtp_playable])
def test_the_gtp_engine_plays_a_checkpoint_of_each_gtp_preset_at_its_own_size(checkpoints, preset):
    game, path = checkpoints[preset]
    replies: list[str] = []
    engine = GTPEngine(game_from_args(None, path), lambda g: Engine(g, checkpoint=path, simulations=4), fixed=True,
                       write=replies.append)
    size = game.board_shape[0]
    komi = f"komi {game.komi:g}" if game.komi is not None else "komi 6.5"  # a game without komi ignores it
    for line in (f"boardsize {size}", "clear_board", komi, "genmove b", f"boardsize {size + 2}"):
        engine.handle(line)
    assert [reply[0] for reply in replies] == ["=", "=", "=", "=", "?"], replies
    assert game.parse_action(replies[3].split()[1]) in game.legal_actions(game.initial_state(1))
    assert f"this network plays {game.spec} only" in replies[4]


def test_only_five_in_a_row_gomoku_checkpoints_are_piskvork_brains(checkpoints):
    for preset, (game, _) in checkpoints.items():
        if preset.startswith("gomoku"):
            check_brain_game(game)
            height, width = game.board_shape
            assert brain_game(width, height, exact=False) == game
        else:
            with pytest.raises(UserError, match="not five-in-a-row gomoku"):
                check_brain_game(game)
    with pytest.raises(UserError):
        check_brain_game(games.make("gomoku", size=9, k=4))


def test_a_brain_with_a_fixed_game_plays_its_size_and_rule_only(checkpoints):
    game, path = checkpoints["gomoku15"]
    replies: list[str] = []
    brain = Brain(lambda g: Engine(g, checkpoint=path, simulations=4), fixed=game, write=replies.append)
    for line in ("START 8", "START 15", "INFO rule 1", "INFO rule 0", "BEGIN"):
        brain.handle(line)
    assert replies[0] == "ERROR this network plays 15x15 only" and replies[1] == "OK"
    assert replies[2].startswith("ERROR this network plays gomoku 15x15")
    x, y = (int(v) for v in replies[3].split(","))
    assert 0 <= x < 15 and 0 <= y < 15


@pytest.fixture(scope="module")
def pooled_checkpoints(tmp_path_factory) -> dict[str, tuple[games.Game, str]]:
    """Tiny untrained networks with pooled heads: 15x15 gomoku and 9x9 Go."""
    folder = tmp_path_factory.mktemp("pooled")
    out = {}
    for name, game in (("gomoku", games.make("gomoku", size=15, k=5)), ("go", games.make("go", size=9, komi=7))):
        torch.manual_seed(0)
        net = PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8, heads="pooled"), game).eval()
        path = folder / f"{name}.pt"
        atomic_save(network_checkpoint(net, game, 1), path)
        out[name] = game, str(path)
    return out


def test_a_brain_with_a_pooled_network_plays_every_size_in_its_own_rule(pooled_checkpoints):
    game, path = pooled_checkpoints["gomoku"]
    replies: list[str] = []
    brain = Brain(lambda g: Engine(g, checkpoint=path, simulations=4), fixed=game, any_size=True, write=replies.append)
    for line in ("START 9", "BEGIN", "START 19", "INFO rule 1"):
        brain.handle(line)
    assert replies[0] == "OK" and replies[2] == "OK", replies
    x, y = (int(v) for v in replies[1].split(","))
    assert 0 <= x < 9 and 0 <= y < 9  # a move on the 9x9 board from the 15x15 network
    assert replies[3] == "ERROR this network plays five or more in a row (freestyle) only"


def test_gtp_and_play_take_a_pooled_network_on_another_board(pooled_checkpoints):
    game, path = pooled_checkpoints["go"]
    assert game_from_args("go:size=7,komi=7", path) == games.make("go", size=7, komi=7)
    with pytest.raises(UserError, match="not of go:size=7,komi=7.5"):  # another komi is another game
        game_from_args("go:size=7,komi=7.5", path)
    replies: list[str] = []
    engine = GTPEngine(game, lambda g: Engine(g, checkpoint=path, simulations=4), fixed=True, any_size=True,
                       write=replies.append)
    for line in ("boardsize 7", "clear_board", "genmove b", "komi 6.5"):
        engine.handle(line)
    assert [reply[0] for reply in replies] == ["=", "=", "=", "?"], replies
    assert games.make("go", size=7, komi=7).parse_action(replies[2].split()[1]) is not None
    assert "on boards of any size only" in replies[3]


def test_pbrain_on_an_8x8_gomoku_checkpoint_answers_start_8_and_begin(checkpoints):
    game, path = checkpoints["gomoku"]
    assert game.board_shape == (8, 8)
    process = subprocess.run([sys.executable, str(SCRIPTS / "pbrain.py"), "--checkpoint", path, "--sims", "8"],
                             input="START 8\nINFO timeout_turn 2000\nBEGIN\nEND\n", capture_output=True, text=True,
                             timeout=120, env=SUBPROCESS_ENV)
    lines = [line for line in process.stdout.splitlines() if not line.startswith(("MESSAGE", "DEBUG"))]
    assert process.returncode == 0 and lines[0] == "OK", (process.stdout, process.stderr)
    x, y = (int(v) for v in lines[1].split(","))
    assert 0 <= x < 8 and 0 <= y < 8
    refused = subprocess.run([sys.executable, str(SCRIPTS / "pbrain.py"), "--checkpoint",
                              checkpoints["tictactoe"][1]], input="END\n", capture_output=True, text=True, timeout=120,
                             env=SUBPROCESS_ENV)
    assert refused.returncode == 2 and "not of five-in-a-row gomoku" in refused.stderr
