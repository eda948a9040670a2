"""The model zoo: every shipped network matches its card, loads for its game, beats random play, and
plays from one command (play.py --game GAME) with no checkpoint of the user's own."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from azero import zoo
from azero.arena import play_match
from azero.errors import UserError
from azero.players import make
from commands import run_here

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
ENTRIES = zoo.entries()


def test_the_zoo_is_not_empty_and_lists_every_card():
    assert ENTRIES, "the zoo ships no network"
    outcome = run_here("zoo.py", "--check")
    assert outcome.returncode == 0, outcome.stderr
    assert f"{len(ENTRIES)} checked" in outcome.stdout
    for entry in ENTRIES:
        assert entry.name in outcome.stdout


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_a_zoo_network_matches_its_card_and_beats_random(entry):
    zoo.verify(entry)
    card = entry.card
    assert card["results"], "a card reports its network's results"
    for result in card["results"]:
        assert 0 <= result["low"] <= result["score"] <= result["high"] <= 1
        wins, draws, losses = (int(n) for n in result["record"].split("-"))
        assert wins + draws + losses == result["games"]
        assert abs((wins + draws / 2) / result["games"] - result["score"]) < 0.001
        assert f"zoo:{entry.name}" in result["command"]
    game = entry.game
    player = make(f"zoo:{entry.name}", game)
    assert player.simulations == card["sims"]
    result = play_match(game, player, make("random", game), 8, seed=0, progress=False)
    assert result.a_score >= 0.75 and result.b_wins <= 1, result


def test_a_damaged_or_missing_zoo_file_is_refused_in_one_line(tmp_path, monkeypatch):
    entry = ENTRIES[0]
    for name in (entry.path.name, entry.path.with_suffix(".toml").name):
        shutil.copy(zoo.FOLDER / name, tmp_path / name)
    monkeypatch.setattr(zoo, "FOLDER", tmp_path)
    copy = zoo.get(entry.name)
    data = bytearray(copy.path.read_bytes())
    data[len(data) // 2] ^= 1
    copy.path.write_bytes(bytes(data))
    with pytest.raises(UserError, match="does not match its card's checksum"):
        zoo.verify(copy)
    copy.path.unlink()
    with pytest.raises(UserError, match="is missing"):
        make(f"zoo:{entry.name}", entry.game)
    with pytest.raises(UserError, match="no zoo network 'nonesuch'"):
        zoo.get("nonesuch")


def test_a_zoo_network_refuses_another_game():
    entry = ENTRIES[0]
    import games

    other = games.make("tictactoe") if entry.game != games.make("tictactoe") else games.make("connect4")
    with pytest.raises(UserError, match=f"zoo network {entry.name} plays"):
        make(f"zoo:{entry.name}", other)


def test_play_with_only_a_game_plays_its_zoo_network():
    entry = ENTRIES[0]
    request = json.dumps({"id": "z", "moves": [], "simulations": 16}) + "\n"
    # by the zoo network's name, as a user who read `azero zoo` types it
    out = subprocess.run([sys.executable, str(SCRIPTS / "play.py"), "--game", entry.name, "--analysis"],
                         input=request, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    reply = json.loads(out.stdout.splitlines()[0])
    assert reply["id"] == "z" and reply["visits"] == 16 and reply["best_move"]
    refused = run_here("play.py", "--game", "gomoku:size=11,k=5")
    assert refused.returncode != 0 and "no zoo network plays gomoku:size=11" in refused.stderr
    assert "Traceback" not in refused.stderr
    # a preset's name means its game, as in train.py --game (go9: 9 x 9 Go, komi 7)
    on_nine = json.dumps({"id": "g", "moves": ["J9"], "simulations": 16}) + "\n"  # a corner 7 x 7 lacks
    out = subprocess.run([sys.executable, str(SCRIPTS / "play.py"), "--game", "go9", "--opponent", "uct:30",
                          "--analysis"], input=on_nine, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    reply = json.loads(out.stdout.splitlines()[0])
    assert reply["id"] == "g" and reply["to_play"] == "second" and reply["visits"] == 16


def test_the_gomocup_brain_and_the_gtp_engine_play_the_zoo_network_when_given_no_player():
    """pbrain.py alone plays the zoo network of the board a manager starts, and refuses (one ERROR
    line, still serving) a board the zoo has none for; gtp.py --game alone does the same for GTP."""
    out = subprocess.run([sys.executable, str(SCRIPTS / "pbrain.py"), "--sims", "16"],
                         input="START 15\nSTART 8\nBEGIN\nABOUT\nEND\n", capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("ERROR no zoo network plays gomoku:size=15") and "gomoku8" in lines[0]
    assert lines[1] == "OK" and len(lines[2].split(",")) == 2  # START 8, then its move
    assert "Traceback" not in out.stderr
    refused = run_here("gtp.py", "--game", "go:size=7,komi=7.5")
    assert refused.returncode == 2 and "no zoo network plays go:size=7" in refused.stderr
    refused = run_here("gtp.py")
    assert refused.returncode == 2 and "--game SPEC alone (the model zoo's network for it)" in refused.stderr


def test_a_pooled_zoo_network_plays_every_board_of_its_game_and_says_what_it_learnt_on(tmp_path, monkeypatch):
    """A zoo network with pooled heads serves the boards of its game it was not made for (a
    Piskvork START 11 with no player given), one made for the board itself first; the card shows
    the boards it plays and the ones it learnt on (checkpoint.training_stages)."""
    import tomllib

    import games
    from azero.checkpoint import atomic_save, network_checkpoint
    from azero.network import NetworkConfig, PolicyValueNet

    nine, seven = games.make("gomoku", size=9, k=5), games.make("gomoku", size=7, k=5)
    net = PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8, heads="pooled"), nine)
    stages = [{"game": seven.spec, "iterations": 40, "hours": 0.5}, {"game": nine.spec, "iterations": 12, "hours": 0.25}]
    atomic_save(network_checkpoint(net, nine, 12, trained_on=stages), tmp_path / "pooled9.pt")
    card = tomllib.loads((zoo.FOLDER / f"{ENTRIES[0].name}.toml").read_text())
    lines = [f"{key} = {json.dumps(value)}" for key, value in card.items() if key != "results"]
    text = "\n".join(lines).replace(f'name = "{ENTRIES[0].name}"', 'name = "pooled9"')
    text = text.replace(f"game = {json.dumps(card['game'])}", f"game = {json.dumps(nine.spec)}")
    text = text.replace(card["sha256"], zoo.checksum(tmp_path / "pooled9.pt"))
    (tmp_path / "pooled9.toml").write_text(text + "\nresults = []\n")
    monkeypatch.setattr(zoo, "FOLDER", tmp_path)
    eleven = games.make("gomoku", size=11, k=5)
    assert zoo.for_game(eleven).name == "pooled9" and zoo.for_game(nine).name == "pooled9"
    assert zoo.for_game(games.make("gomoku", size=11, k=4)) is None  # another game, not another board
    assert zoo.checked("pooled9", eleven).name == "pooled9"
    with pytest.raises(UserError, match="zoo network pooled9 plays"):
        zoo.checked("pooled9", games.make("connect4"))
    described = zoo.describe(zoo.get("pooled9"), full=True)
    assert ("gomoku on every board size (pooled heads); learnt on gomoku:size=7,k=5,rule=freestyle for 40 "
            "iterations (0.5 h), then gomoku:size=9,k=5,rule=freestyle for 12 (0.2 h)") in described
    player = make("zoo:pooled9:sims=4", eleven)
    assert player.act(eleven.initial_state(1)).shape == (1,)
