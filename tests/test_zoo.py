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
