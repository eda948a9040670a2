"""Property-based fuzzing of what users type and the files they hand over: game specs, player specs,
config `--set` values and TOML files, move texts in every game, SGF records and checkpoint files
(truncated, bit-flipped, another game's, a pickle with code in it). Each is either read or refused
with the project's one error kind (GameError, UserError, ConfigError); nothing else escapes.
Profiles and the long form: tests/conftest.py."""

from __future__ import annotations

import dataclasses
import os
import pickle
import tomllib
from pathlib import Path

import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import example, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import games  # noqa: E402
from azero import players  # noqa: E402
from azero.checkpoint import atomic_save, load_checkpoint, network_checkpoint, network_from_checkpoint  # noqa: E402
from azero.config import Config, ConfigError, config_from_dict, load_config, merge_toml  # noqa: E402
from azero.errors import UserError  # noqa: E402
from azero.network import NetworkConfig, PolicyValueNet  # noqa: E402
from azero.session import GameSession  # noqa: E402
from azero.sgf import game_from_sgf, read_sgf, replay  # noqa: E402
from games import GameError  # noqa: E402

REFUSALS = (GameError, UserError)  # ConfigError is a UserError
TEXT = st.text(st.characters(codec="utf-8"), max_size=30)
NUMBER_TEXT = st.one_of(st.integers(-(10**25), 10**25).map(str), st.floats().map(repr),
                        st.sampled_from(["nan", "inf", "1e400", "0x1f", "٣", "²", "", " 7 ", "1_000", "true"]))
OPTION_KEYS = st.sampled_from(["size", "k", "width", "height", "rule", "rows", "columns", "pile", "misere", "komi",
                               "sims", "c", "final", "seed", "c_init", "precision", "x"])


def spec_text(names: list[str]) -> st.SearchStrategy[str]:
    option = st.tuples(st.one_of(OPTION_KEYS, TEXT), st.one_of(NUMBER_TEXT, TEXT)).map(lambda kv: f"{kv[0]}={kv[1]}")
    structured = st.tuples(st.one_of(st.sampled_from(names), TEXT), st.lists(st.one_of(option, TEXT), max_size=4)).map(
        lambda parts: parts[0] + (":" + ",".join(parts[1]) if parts[1] else ""))
    return st.one_of(structured, TEXT)


@given(spec=spec_text(games.names()))
def test_game_specs_build_a_game_or_are_refused(spec):
    try:
        game = games.make_from_spec(spec)
    except GameError:
        return
    assert games.make_from_spec(game.spec) == game
    state = game.initial_state(1)
    assert game.legal_mask(state).shape == (1, game.num_actions)


SAFE_PLAYERS = [name for name in players.REGISTRY if name != "gtp"]  # gtp: runs a program: not fuzzed


@pytest.fixture(scope="module")
def checkpoint_files(tmp_path_factory) -> dict[str, Path]:
    """A tiny tic-tac-toe checkpoint, a gomoku one, and pickles with code in them."""
    folder = tmp_path_factory.mktemp("checkpoints")
    files = {}
    for name, game in (("tictactoe", games.make("tictactoe")), ("gomoku", games.make("gomoku", size=5, k=4))):
        net = PolicyValueNet(NetworkConfig(blocks=1, channels=8), game)
        files[name] = folder / f"{name}.pt"
        atomic_save(network_checkpoint(net, game, 1), files[name])
    files["pickle"] = folder / "code.pt"
    atomic_save({"format": "azero-checkpoint", "payload": Exploit(str(folder / "ran"))}, files["pickle"])
    files["raw-pickle"] = folder / "raw.pt"
    files["raw-pickle"].write_bytes(pickle.dumps(Exploit(str(folder / "ran"))))
    files["marker"] = folder / "ran"
    return files


class Exploit:
    """Unpickling this runs code: it creates the marker file."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@given(data=st.data())
def test_player_specs_build_a_player_or_are_refused(checkpoint_files, data):
    paths = [str(p) for p in checkpoint_files.values()] + ["/dev/null", "/", "/dev/zero", "no-such.pt", ""]
    argument = st.one_of(NUMBER_TEXT, st.sampled_from(paths), TEXT)
    option = st.tuples(OPTION_KEYS, st.one_of(NUMBER_TEXT, TEXT, st.sampled_from(["robust", "max", "secure",
                                                                                  "float32", "int8"])))
    name = data.draw(st.one_of(st.sampled_from(SAFE_PLAYERS), TEXT.filter(lambda t: not t.strip().lower()
                                                                          .startswith("gtp"))))
    arguments = data.draw(st.lists(argument, max_size=1))
    options = data.draw(st.lists(option, max_size=3))
    spec = ":".join([name, *arguments] + ([",".join(f"{k}={v}" for k, v in options)] if options else []))
    if spec.strip().lower().startswith("gtp"):
        return
    game = games.make("tictactoe")
    try:
        player = players.make(spec, game)
    except REFUSALS:
        return
    finally:
        assert not checkpoint_files["marker"].exists()
    if getattr(player, "iterations", 0) <= 64 and getattr(player, "simulations", 0) <= 64 \
            and getattr(player, "rollouts", 0) <= 256:
        action = int(player.act(game.initial_state(1))[0])
        assert 0 <= action < game.num_actions


CONFIG_KEYS = [f"{section}.{f.name}" for section, values in Config().to_dict().items()
               for f in dataclasses.fields(getattr(Config(), section))]


@given(items=st.lists(st.tuples(st.one_of(st.sampled_from(CONFIG_KEYS), TEXT),
                                st.one_of(NUMBER_TEXT, TEXT, st.sampled_from(["[100, 300]", "random;uct:10", "[]",
                                                                              "adamw", "cosine", "cuda", "int8"]))),
                      max_size=4))
@example(items=[("game.spec", "\x1b")])  # found by the long form: written to config.toml unescaped, unreadable
def test_config_set_values_are_read_or_refused_and_survive_the_run_folder(items):
    try:
        config = load_config(game="tictactoe", overrides=[f"{key}={value}" for key, value in items])
    except ConfigError:
        return
    assert config_from_dict(tomllib.loads(config.to_toml())).to_dict() == config.to_dict()


TOML_VALUES = st.recursive(
    st.one_of(st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)), max_leaves=6)


@given(document=st.dictionaries(st.one_of(st.sampled_from(list(Config().to_dict())), TEXT),
                                st.one_of(st.dictionaries(st.one_of(st.sampled_from([k.split(".")[1]
                                                                                     for k in CONFIG_KEYS]), TEXT),
                                                          TOML_VALUES, max_size=4), TOML_VALUES), max_size=3),
       text=st.one_of(st.none(), TEXT, st.sampled_from(["[search]\nsimulations = 1e3", "[x\n", "a = [1, 'b']",
                                                        "[search]\nsimulations = 99999999999999999999"])))
def test_config_toml_files_are_read_or_refused(tmp_path_factory, document, text):
    config = Config()
    try:
        merge_toml(config, document, "fuzz.toml")
        assert config_from_dict(tomllib.loads(config.to_toml())).to_dict() == config.to_dict()
    except ConfigError:
        pass
    if text is not None:
        path = tmp_path_factory.mktemp("toml") / "config.toml"
        path.write_text(text, errors="surrogatepass")
        try:
            load_config(path=path)
        except ConfigError:
            pass


MOVE_GAMES = ["gomoku:size=9", "tictactoe", "connect4", "othello", "othello:size=6", "nim", "go:size=9"]


@pytest.mark.parametrize("spec", MOVE_GAMES)
@given(text=st.one_of(TEXT, st.tuples(st.sampled_from(list("abcdefghjklmnopqrstz")),
                                      st.integers(-2, 30)).map(lambda t: f"{t[0]}{t[1]}"),
                      st.integers(-5, 400).map(str), st.sampled_from(["pass", "PASS", " e5 ", "j10", "resign", "take 3"])))
@example(text="A¹")  # found by the long form: '¹' is a digit to str.isdigit, and int() refused it
@example(text="²")
def test_move_texts_are_read_or_refused_in_every_game(spec, text):
    game = games.make_from_spec(spec)
    session = GameSession(game)
    try:
        action = session.parse(text)
    except GameError:
        return
    assert action in session.legal()
    session.play(action)
    assert session.actions == [action]


def sgf_text() -> st.SearchStrategy[str]:
    value = st.one_of(st.sampled_from(["1", "2", "4", "9", "19", "5:7", "0", "-3", "7.5", "nan", "", "aa", "ee",
                                       "tt", "zz", "abc", "\\]", "99999999999999999999"]), TEXT)
    prop = st.tuples(st.sampled_from(["GM", "SZ", "KM", "B", "W", "AB", "AW", "PB", "RE", "C", "FF", "x"]),
                     st.lists(value, min_size=0, max_size=2)).map(
        lambda p: p[0] + "".join(f"[{v}]" for v in p[1]))
    node = st.lists(prop, max_size=4).map(lambda props: ";" + "".join(props))
    tree = st.recursive(node.map(lambda n: f"({n})"),
                        lambda inner: st.tuples(st.lists(node, max_size=5), st.lists(inner, max_size=2)).map(
                            lambda t: "(" + "".join(t[0]) + "".join(t[1]) + ")"), max_leaves=5)
    return st.one_of(tree, TEXT, st.tuples(tree, TEXT).map("".join))


@given(text=sgf_text())
@example(text="(;GM[7.5])")  # found by this test: a ValueError, not GameError
def test_sgf_records_are_read_or_refused(text):
    try:
        record = read_sgf(text)
        game = game_from_sgf(record)
        replay(game, record)
    except GameError:
        pass


@given(data=st.data())
def test_checkpoint_files_damaged_foreign_or_with_code_are_refused(checkpoint_files, data, tmp_path_factory):
    original = checkpoint_files["tictactoe"].read_bytes()
    kind = data.draw(st.sampled_from(["truncated", "bit-flipped", "another game's", "pickle with code"]))
    path = tmp_path_factory.mktemp("damaged") / "latest.pt"
    if kind == "truncated":
        path.write_bytes(original[: data.draw(st.integers(0, len(original) - 1))])
    elif kind == "bit-flipped":
        damaged = bytearray(original)
        for position in data.draw(st.lists(st.integers(0, len(original) * 8 - 1), min_size=1, max_size=8)):
            damaged[position // 8] ^= 1 << (position % 8)
        path.write_bytes(bytes(damaged))
    elif kind == "another game's":
        path.write_bytes(checkpoint_files["gomoku"].read_bytes())
    else:
        path.write_bytes(checkpoint_files[data.draw(st.sampled_from(["pickle", "raw-pickle"]))].read_bytes())
    game = games.make("tictactoe")
    try:
        loaded = load_checkpoint(path, game=game)
        network_from_checkpoint(loaded)
        players.make(f"az:{path}:sims=2", game).act(game.initial_state(1))
    except UserError:
        loaded = None
    assert not checkpoint_files["marker"].exists()
    if kind != "bit-flipped":
        assert loaded is None
    elif loaded is not None:  # a flip outside what the checksums cover: the weights are the saved ones
        saved = load_checkpoint(checkpoint_files["tictactoe"])["model"]
        assert all(torch.equal(saved[key], loaded["model"][key]) for key in saved)


def test_a_flipped_bit_in_a_weight_is_refused_not_loaded(checkpoint_files, tmp_path):
    import zipfile

    data = bytearray(checkpoint_files["tictactoe"].read_bytes())
    with zipfile.ZipFile(checkpoint_files["tictactoe"]) as archive:
        member = max(archive.infolist(), key=lambda info: info.file_size)  # the largest weight
    name_length = int.from_bytes(data[member.header_offset + 26: member.header_offset + 28], "little")
    extra_length = int.from_bytes(data[member.header_offset + 28: member.header_offset + 30], "little")
    start = member.header_offset + 30 + name_length + extra_length
    data[start + member.file_size // 2] ^= 0x10
    damaged = tmp_path / "latest.pt"
    damaged.write_bytes(bytes(data))
    with pytest.raises(UserError, match="is damaged: its part .* does not match its checksum"):
        load_checkpoint(damaged)


def test_a_checkpoint_path_that_is_no_file_is_refused_at_once(tmp_path):
    import threading

    fifo = tmp_path / "pipe.pt"
    os.mkfifo(fifo)
    outcome = []

    def load():
        try:
            load_checkpoint(fifo)
        except UserError as error:
            outcome.append(str(error))

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(timeout=20)
    assert outcome and "pipe.pt is not a checkpoint: it is not a regular file" in outcome[0]
    with pytest.raises(UserError, match="is a folder, not a checkpoint"):
        load_checkpoint(tmp_path)
