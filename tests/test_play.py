"""People and programs meet the engine: the terminal UI, the JSON analysis mode, the Piskvork brain."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch

import games
from commands import run_here

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"


def run(script: str, args: list[str], stdin: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / script), *args], input=stdin, capture_output=True,
                          text=True, timeout=timeout)


def test_terminal_game_with_bad_input_hint_and_undo():
    script = "\n".join(["zz", "b2", "b2", "hint", "undo", "board", "a1", "help", "quit"]) + "\n"
    out = run("play.py", ["--game", "tictactoe", "--opponent", "uct:200"], script)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "Traceback" not in text + out.stderr
    assert "cannot read move 'zz'" in text
    assert "b2 is not a legal move here: that square is already occupied" in text
    assert "uct:200 plays" in text
    assert "hint: " in text and "win-rate for you" in text
    # after undo the board is empty again, then a1 is played
    boards = [b for b in text.split("tic-tac-toe - ")[1:]]
    assert any(b.startswith("X to move") and "X" not in b.split("\n", 1)[1].replace("X to move", "") for b in boards)
    assert "(X)" in text and "commands:" in text


def test_terminal_game_to_the_end_and_engine_first():
    # against perfect play with the engine first; a game over is announced and input ends cleanly
    moves = ["a1", "a2", "a3", "b1", "b2", "b3", "c1", "c2", "c3"]
    out = run("play.py", ["--game", "tictactoe", "--opponent", "perfect", "--ai-first"], "\n".join(moves) + "\n")
    assert out.returncode == 0 and "Traceback" not in out.stderr
    assert "perfect plays" in out.stdout.split("your move")[0]  # the engine moved first
    assert "game over:" in out.stdout


def test_two_programs_watch_each_other():
    out = run("play.py", ["--game", "connect4:rows=4,columns=5", "--opponent", "uct:50", "--versus", "random"], "")
    assert out.returncode == 0 and "game over:" in out.stdout
    assert "uct:50 plays" in out.stdout and "random plays" in out.stdout


def test_bad_options_are_one_line_errors():
    out = run_here("play.py", "--game", "gomoku:size=9", "--opponent", "uct:x")
    assert out.returncode == 2 and out.stderr.startswith("error:") and "Traceback" not in out.stderr
    out = run_here("play.py", "--checkpoint", str(REPO / "no-such.pt"))
    assert out.returncode == 2 and "not found" in out.stderr


def test_json_analysis_mode_echoes_ids_and_reports_errors_per_line():
    requests = [
        {"id": "a", "moves": ["c3"], "simulations": 200},
        "this is not json",
        {"id": 7, "moves": ["c3", "c3"]},
        {"id": 8, "moves": ["b2"], "top": 3, "seconds": 0.2},
        {"id": 9, "quit": True},
    ]
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in requests) + "\n"
    out = run("play.py", ["--game", "gomoku:size=5,k=4", "--opponent", "uct:100", "--analysis"], text)
    assert out.returncode == 0, out.stderr
    replies = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["id"] for r in replies] == ["a", None, 7, 8, 9]
    first = replies[0]
    assert first["to_play"] == "second" and first["visits"] == 200
    assert first["best_move"] == first["pv"][0] and 0 <= first["winrate"] <= 1
    assert sum(m["visits"] for m in first["moves"]) <= 200 and len(first["moves"]) == 5
    assert "error" in replies[1] and "already occupied" in replies[2]["error"]
    assert len(replies[3]["moves"]) == 3


# -- Piskvork --------------------------------------------------------------------------------------


class BrainProcess:
    def __init__(self, *args: str):
        self.process = subprocess.Popen([sys.executable, str(SCRIPTS / "pbrain.py"), *args], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)

    def send(self, line: str) -> None:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def ask(self, line: str) -> str:
        self.send(line)
        while True:
            reply = self.process.stdout.readline()
            assert reply, f"the brain stopped: {self.process.stderr.read()}"
            if not reply.startswith(("MESSAGE", "DEBUG")):
                return reply.strip()

    def end(self) -> int:
        self.send("END")
        return self.process.wait(timeout=30)


def parse_move(reply: str, size: int) -> tuple[int, int]:
    x, y = (int(v) for v in reply.split(","))
    assert 0 <= x < size and 0 <= y < size, reply
    return x, y


def test_referee_plays_complete_games_between_two_brains():
    size = 9
    game = games.make("gomoku", size=size, k=5)
    results = []
    for first_index in (0, 1):
        brains = [BrainProcess("--player", "uct:300"), BrainProcess("--player", "uct:100:seed=1")]
        for brain in brains:
            assert brain.ask(f"START {size}") == "OK"
            brain.send("INFO timeout_turn 300")
            brain.send("INFO rule 0")
        state = game.initial_state(1)
        mover = first_index
        reply = brains[mover].ask("BEGIN")
        while True:
            x, y = parse_move(reply, size)
            action = y * size + x
            assert bool(game.legal_mask(state)[0, action]), f"illegal move {reply}"
            state = game.step(state, torch.tensor([action]))
            if bool(state.done[0]):
                break
            mover = 1 - mover
            reply = brains[mover].ask(f"TURN {x},{y}")
        results.append(int(game.result(state)[0]))
        assert all(brain.end() == 0 for brain in brains)
    assert len(results) == 2


def test_malformed_lines_get_errors_and_the_brain_keeps_running():
    brain = BrainProcess("--player", "uct:50")
    assert brain.ask("TURN 3,3").startswith("ERROR")  # out of order: no START yet
    assert brain.ask("BOARD\n1,1,1\n2,2,2\nDONE") == "ERROR no game: send START first"  # one answer, at DONE
    assert brain.ask("ABOUT").startswith('name="azero"')
    assert brain.ask("BEGIN").startswith("ERROR")
    assert brain.ask("START 3").startswith("ERROR")  # unsupported size
    assert brain.ask("START 10") == "OK"
    assert brain.ask("FLY 1,2").startswith("UNKNOWN")  # not a command of the protocol
    assert brain.ask("TURN x,y").startswith("ERROR")
    assert brain.ask("TURN 10,3").startswith("ERROR")  # off the board
    reply = brain.ask("TURN 4,4")
    x, y = parse_move(reply, 10)
    assert (x, y) != (4, 4)
    assert brain.ask("TURN 4,4").startswith("ERROR")  # occupied
    assert brain.ask(f"TURN {x},{y}").startswith("ERROR")  # occupied by the brain's own stone
    assert brain.ask("INFO rule 4").startswith("ERROR")  # renju
    assert brain.ask("TAKEBACK 9,9").startswith("ERROR")  # empty square
    assert brain.ask(f"TAKEBACK {x},{y}") == "OK"
    assert brain.ask("BOARD\n1,1,1\n1,1,2\nDONE").startswith("ERROR")  # the same square twice
    assert brain.ask("BOARD\n" + "1,1,1\n" * 5000 + "DONE").startswith("ERROR more board lines than the 10x10")
    # a long line is quoted by its start; swap2's block (lines up to DONE) gets one answer, at its DONE
    answer = brain.ask("BOARD\n1,1," + "x" * 100_000 + "\nDONE")
    assert answer.startswith("ERROR cannot read board line '1,1,xxx") and "(100,004 characters)" in answer
    assert len(answer) < 200
    assert brain.ask("SWAP2BOARD\n7,7\n8,8\n9,9\nDONE") == "UNKNOWN SWAP2BOARD: this brain does not play swap2 openings"
    assert brain.ask("ABOUT").startswith('name="azero"')  # (was: the block's second line's UNKNOWN)
    brain.send("BOARD")
    brain.send("0,0,2")
    reply = brain.ask("DONE")
    parse_move(reply, 10)
    assert brain.ask("ABOUT").startswith('name="azero"')
    assert brain.end() == 0
