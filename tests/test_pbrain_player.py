"""External Piskvork brains as players (`pbrain:`): matches against them, their limits, and the
brains that break the protocol. The brain under test is our own (scripts/pbrain.py), so no
Gomocup engine needs installing; a few lines of Python stand for brains that misbehave."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

import games
from azero.errors import UserError
from azero.players import make
from azero.players.pbrain_player import split_options
from commands import run_here

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
GOMOKU8 = "gomoku:size=8,k=5"


def our_brain(*args: str) -> str:
    return "pbrain:" + shlex.quote(shlex.join([sys.executable, str(SCRIPTS / "pbrain.py"), *args]))


def fake_brain(tmp_path: Path, answer_move: str) -> str:
    """A brain that says OK to START and answers every move request with the Python expression
    `answer_move` (given `squares`, the stones it was told of as (x, y) pairs); None: no answer."""
    script = tmp_path / "brain.py"
    script.write_text(f"""
import sys
squares = []
for line in sys.stdin:
    word = line.strip().split(" ")[0].upper()
    if word in ("START", "RECTSTART"):
        print("OK", flush=True)
    elif word == "TURN":
        squares.append(tuple(int(v) for v in line.split(" ")[1].split(",")))
    if word in ("BEGIN", "TURN", "DONE"):
        move = {answer_move}
        if move is not None:
            print("MESSAGE thinking", flush=True)
            print(move, flush=True)
    elif word == "END":
        break
""")
    return "pbrain:" + shlex.quote(shlex.join([sys.executable, str(script)]))


def test_our_brain_as_a_player_beats_random_from_random_openings():
    # four random opening plies: the brain is given each position with BOARD, then TURN
    outcome = run_here("evaluate.py", "--game", GOMOKU8, "--a", our_brain("--player", "uct:300") + ":turn=5",
                       "--b", "random", "--games", "4", "--opening-plies", "4", "--json")
    assert outcome.returncode == 0, outcome.stderr
    assert '"a_wins": 4' in outcome.stdout, outcome.stdout


def test_a_brain_that_plays_an_occupied_square_stops_the_match_with_one_line(tmp_path):
    spec = fake_brain(tmp_path, "'%d,%d' % squares[-1] if squares else '3,3'")  # answers on the opponent's stone
    outcome = run_here("evaluate.py", "--game", GOMOKU8, "--a", spec, "--b", "random", "--games", "2")
    assert outcome.returncode != 0
    assert "illegal here" in outcome.stderr and "moves so far" in outcome.stderr, outcome.stderr
    assert "Traceback" not in outcome.stderr and len(outcome.stderr.strip().splitlines()) == 1


def test_a_brain_that_answers_nonsense_or_error_is_named_with_its_words(tmp_path):
    game = games.make("gomoku", size=8, k=5)
    for answer, words in (("'nonsense'", "not a move x,y"), ("'ERROR cannot think'", "ERROR cannot think"),
                          ("'9,9'", "off the 8x8 board")):
        player = make(fake_brain(tmp_path, answer), game)
        with pytest.raises(UserError, match=words):
            player.act(game.initial_state(1))
        player.close()


def test_a_brain_over_its_turn_time_is_stopped(tmp_path):
    game = games.make("gomoku", size=8, k=5)
    player = make(fake_brain(tmp_path, "None") + ":turn=0.2", game)  # never answers a move
    started = time.monotonic()
    with pytest.raises(UserError, match="did not answer 'BEGIN' within 1.2 s"):
        player.act(game.initial_state(1))
    assert time.monotonic() - started < 10
    assert player.brains[0].client.engine.process.poll() is not None  # stopped, not left running
    player.close()


def test_the_brain_is_told_its_limits_and_rule(tmp_path):
    log = tmp_path / "told.txt"
    script = tmp_path / "brain.py"
    script.write_text(f"""
import sys
with open({str(log)!r}, "a") as told:
    for line in sys.stdin:
        told.write(line)
        told.flush()
        word = line.split(" ")[0].strip().upper()
        if word == "RECTSTART":
            print("OK", flush=True)
        elif word == "BEGIN":
            print("0,0", flush=True)
        elif word == "END":
            break
""")
    game = games.make("gomoku", width=9, height=7, k=5, rule="standard")
    spec = "pbrain:" + shlex.quote(shlex.join([sys.executable, str(script)])) + ":nodes=1000,turn=0,memory=64,match=30"
    player = make(spec, game)
    assert int(player.act(game.initial_state(1))[0]) == 0
    player.close()
    told = log.read_text().splitlines()
    assert told[0] == "RECTSTART 9,7"
    assert {"INFO timeout_turn 0", "INFO timeout_match 30000", "INFO max_node 1000", f"INFO max_memory {64 << 20}",
            "INFO rule 1"} <= set(told)
    assert told[-3].startswith("INFO time_left ") and told[-2:] == ["BEGIN", "END"]


def test_pbrain_specs_are_checked():
    assert split_options("prog --x:nodes=1000, turn=0") == ("prog --x", {"nodes": "1000", "turn": "0"})
    assert split_options('"prog a:b" --y') == ('"prog a:b" --y', {})
    go = games.make("go", size=7)
    gomoku = games.make("gomoku", size=8, k=5)
    for spec, words, game in ((f"pbrain:{sys.executable}:depth=3", "unknown", gomoku),
                              (f"pbrain:{sys.executable}:turn=-1", "out of range", gomoku),
                              ("pbrain:no-such-brain-program", "cannot find the program", gomoku),
                              (f"pbrain:{sys.executable}", "five-in-a-row gomoku", go),
                              (f"pbrain:{sys.executable}", "five-in-a-row gomoku", games.make("gomoku", size=8, k=4))):
        with pytest.raises(UserError, match=words):
            make(spec, game)


def test_a_brains_stated_budget_holds_under_a_long_turn():
    # uct:2000 states its budget: a 60-second turn bounds it and does not become its budget
    brain = subprocess.Popen([sys.executable, str(SCRIPTS / "pbrain.py"), "--player", "uct:2000"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        for line in ("START 15", "INFO timeout_turn 60000"):
            brain.stdin.write(line + "\n")
        brain.stdin.flush()
        assert brain.stdout.readline().strip() == "OK"
        started = time.monotonic()
        brain.stdin.write("BEGIN\n")
        brain.stdin.flush()
        reply = brain.stdout.readline().strip()
        seconds = time.monotonic() - started
        assert "," in reply and seconds < 20, (reply, seconds)
        brain.stdin.write("END\n")
        brain.stdin.flush()
        assert brain.wait(timeout=30) == 0
    finally:
        brain.kill()


def test_a_brain_plays_several_games_at_once_a_process_each(tmp_path):
    # the network facing the brains moves in all of a batch's games at once; each brain process
    # sees one game only: its opening as BOARD, then the opponent's replies as TURN
    from azero.arena import play_match
    from azero.players.random_player import RandomPlayer

    logs = tmp_path / "logs"
    logs.mkdir()
    script = tmp_path / "brain.py"
    script.write_text(f"""
import os, sys
taken = set()
with open(os.path.join({str(logs)!r}, str(os.getpid())), "w") as told:
    for line in sys.stdin:
        told.write(line)
        told.flush()
        words = line.strip().split(" ")
        word = words[0].upper()
        if word == "START":
            print("OK", flush=True)
        elif word == "TURN":
            taken.add(tuple(int(v) for v in words[1].split(",")))
        elif word not in ("BEGIN", "BOARD", "DONE", "INFO", "END") and "," in line:
            taken.add(tuple(int(v) for v in line.strip().split(",")[:2]))
        if word in ("BEGIN", "TURN", "DONE"):
            x, y = next((x, y) for y in range(8) for x in range(8) if (x, y) not in taken)
            taken.add((x, y))
            print(f"{{x}},{{y}}", flush=True)
        elif word == "END":
            break
""")
    game = games.make("gomoku", size=8, k=5)
    brains = make("pbrain:" + shlex.quote(shlex.join([sys.executable, str(script)])) + ":turn=5,parallel=4", game)
    batches = []

    class Watched(RandomPlayer):
        def act(self, states, keys=None):
            batches.append(states.batch_size)
            return super().act(states, keys)

    result = play_match(game, brains, Watched(game, seed=3), 8, opening_plies=2, progress=False, record_moves=True)
    brains.close()
    assert result.games == 8 and max(batches) == 2  # its turn in half of each batch of four games
    told = [path.read_text().splitlines() for path in sorted(logs.iterdir())]
    assert len(told) == 8 and all(lines.count("START 8") == 1 and lines[-1] == "END" for lines in told)
    for lines in told:
        requests = [line for line in lines if line.split(" ")[0] in ("BEGIN", "TURN", "BOARD")]
        assert requests[0] == "BOARD" and all(line.startswith("TURN ") for line in requests[1:])
    # the brains' own moves are the first free squares of the one game each was told of
    for record in result.records:
        brain_first = record.first == brains.spec
        board = set()
        for ply, action in enumerate(record.actions):
            square = (action % 8, action // 8)
            if ply >= 2 and (ply % 2 == 0) == brain_first:
                assert square == next((x, y) for y in range(8) for x in range(8) if (x, y) not in board)
            board.add(square)
