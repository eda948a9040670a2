"""Inputs a review of the protocol engines and the browser board found to kill them, hang them or
leave them half-changed: each now gets one readable refusal, the process keeps serving, and
what was there before a refused request is still there after it."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import torch

import games
from azero.checkpoint import atomic_save, network_checkpoint
from azero.errors import UserError
from azero.players.base import MAX_SECONDS, RESIGN, Analysis
from azero.players.flatmc import FlatMCPlayer
from azero.protocols import analysis
from azero.protocols.gtp import Clock, GTPEngine
from azero.protocols.piskvork import Brain
from azero.session import Engine, describe_analysis
from azero.web import guard
from azero.web.server import start_server
from commands import run_here
from games import GameError
from games.keyed_random import make_keys
from games.options import MAX_DIGITS, is_whole_number
from networks import small_net


def test_a_digit_string_too_long_to_be_a_number_is_not_one():
    assert is_whole_number("9" * MAX_DIGITS) and int("9" * MAX_DIGITS) > 0
    assert not is_whole_number("9" * (MAX_DIGITS + 1))  # int() of 4,301 digits raises; such text is no number


class FailingEngine:
    """An engine whose search fails as a bug of ours would."""

    def __init__(self, game):
        self.game = game

    def think(self, state, **budget):
        raise RuntimeError("a fault of ours")


def brain(make_engine=lambda game: Engine(game, "random")) -> tuple[Brain, list[str]]:
    replies: list[str] = []
    return Brain(make_engine, write=replies.append), replies


def test_the_piskvork_brain_answers_absurd_numbers_and_keeps_serving():
    player, replies = brain()
    for line in ("INFO timeout_turn 1000", "INFO timeout_turn 1" + "0" * 400, "INFO time_left " + "9" * 50,
                 "START " + "9" * 5000, "RECTSTART 8," + "9" * 5000, "START 8", "TURN 1," + "9" * 5000,
                 "FOO\rB\x85R"):
        assert player.handle(line) is True
    assert replies[:3] == ["ERROR START needs a board size, e.g. START 15", "ERROR RECTSTART needs width,height", "OK"]
    assert replies[3].startswith("ERROR cannot read coordinates")
    assert replies[4].startswith("UNKNOWN command 'FOO\\rB\\x85R'") and "\r" not in replies[4]
    assert player.timeout_turn == player.time_left == 86_400.0  # a time past a day is read as a day
    player.handle("BEGIN")
    assert len(replies) == 6 and replies[5].count(",") == 1 and not replies[5].startswith("ERROR")


def test_the_piskvork_brain_refuses_a_move_with_more_fields_than_x_and_y():
    player, replies = brain()
    player.handle("START 8")
    for line in ("TURN 3,3,3", "PLAY 4,4,1", "TURN 3,3,", "TAKEBACK 3,3,3"):
        player.handle(line)
    assert replies[1:] == ["ERROR cannot read coordinates '3,3,3'; write x,y",
                           "ERROR cannot read coordinates '4,4,1'; write x,y",
                           "ERROR cannot read coordinates '3,3,'; write x,y",
                           "ERROR cannot read coordinates '3,3,3'; write x,y"]
    assert player.board == {}  # nothing of a refused line was placed
    player.handle("BOARD")
    for line in ("3,3,2", "4,4,1", "DONE"):  # a BOARD line keeps its third field
        player.handle(line)
    assert len(replies) == 6 and not replies[5].startswith("ERROR") and len(player.board) == 3


def test_a_fault_in_the_brains_search_is_one_error_line_and_takes_the_turn_back():
    player, replies = brain(FailingEngine)
    player.handle("START 8")
    player.handle("TURN 3,3")
    assert replies == ["OK", "ERROR internal error: RuntimeError: a fault of ours"]
    assert player.board == {}  # the opponent's stone of the failed TURN is taken back
    player.handle("BOARD")
    for line in ("3,3,2", "4,4,1", "5,5,2", "DONE"):
        player.handle(line)
    assert replies[-1] == "ERROR internal error: RuntimeError: a fault of ours" and player.board == {}
    player.handle("ABOUT")
    assert replies[-1].startswith('name="azero"')


def test_a_brain_whose_engine_cannot_be_made_keeps_what_it_had():
    def make_engine(game):
        if game.exact or game.board_shape == (9, 9):  # as a checkpoint of another game refuses
            raise UserError(f"cannot play {game.spec}")
        return Engine(game, "random")

    player, replies = brain(make_engine)
    player.handle("START 8")
    player.handle("INFO rule 1")
    assert replies[-1].startswith("ERROR cannot play") and not player.exact
    player.handle("BEGIN")  # still the freestyle game of START 8
    assert replies[-1].count(",") == 1 and not replies[-1].startswith("ERROR")
    player.handle("START 9")
    assert replies[-1].startswith("ERROR cannot play")
    player.handle("BEGIN")
    assert replies[-1] == "ERROR no game: send START first"
    player.handle("START 8")
    player.handle("BEGIN")
    assert replies[-2] == "OK" and replies[-1].count(",") == 1


def test_a_brain_that_cannot_make_an_engine_for_either_rule_has_no_game():
    """A rule change whose engine fails, and then the old rule's engine fails too (memory ran
    out, say): the reason of the first failure, and no game left half-set."""
    made = []

    def make_engine(game):
        if made:
            raise UserError(f"cannot play {game.spec}")
        made.append(game)
        return Engine(game, "random")

    player, replies = brain(make_engine)
    player.handle("START 8")
    player.handle("TURN 3,3")
    assert player.board
    player.handle("INFO rule 1")
    assert replies[-1].startswith("ERROR cannot play") and "rule=standard" in replies[-1]
    assert player.board == {} and player.engine is None and not player.exact
    player.handle("TURN 4,4")
    assert replies[-1] == "ERROR no game: send START first"
    made.clear()
    player.handle("START 8")
    player.handle("BEGIN")
    assert replies[-2] == "OK" and replies[-1].count(",") == 1


def gtp(make_engine=lambda game: Engine(game, "random"), spec="go:size=5") -> tuple[GTPEngine, list[str]]:
    replies: list[str] = []
    return GTPEngine(games.make_from_spec(spec), make_engine, write=replies.append), replies


def test_gtp_a_move_after_the_same_colours_pass_ends_no_game():
    """play b pass, then play b c3: the pass put in for white counts toward no two passes in a
    row (it was refused as ending the game); the game goes on, white to move."""
    engine, replies = gtp()
    engine.handle("play b pass")
    engine.handle("play b c3")
    assert replies[-1] == "=\n\n", replies[-1]
    pass_action = engine.game.pass_action
    assert engine.session.actions == [pass_action, pass_action, engine.game.parse_action("c3")]
    assert not engine.session.over and engine.session.to_play == 1
    engine.handle("genmove w")
    assert replies[-1].startswith("= ")


def test_gtp_kgs_time_settings_are_checked_like_time_settings():
    engine, replies = gtp()
    for line in ("kgs-time_settings byoyomi inf 10 5", "kgs-time_settings canadian 10 nan 5",
                 "kgs-time_settings absolute -1", "kgs-time_settings byoyomi 1 2 x"):
        engine.handle(line)
        assert replies[-1].startswith("? syntax error"), (line, replies[-1])
    assert engine.clock == Clock()
    engine.handle("kgs-time_settings byoyomi 0 5000 3")  # long periods: a move still thinks at most MAX_SECONDS
    assert replies[-1] == "=\n\n" and engine.clock.seconds(0, 10) == MAX_SECONDS


def test_gtp_keeps_the_game_when_the_engine_for_a_new_size_or_komi_cannot_be_made():
    def make_engine(game):
        if game.komi == 6.5 or game.board_shape == (7, 7):
            raise UserError(f"cannot play {game.spec}")
        return Engine(game, "random")

    engine, replies = gtp(make_engine)
    engine.handle("play b c3")
    before = (engine.game, list(engine.session.actions))
    for line in ("komi 6.5", "boardsize 7"):
        engine.handle(line)
        assert replies[-1].startswith("? ") and "cannot play" in replies[-1], replies[-1]
        assert (engine.game, engine.session.actions) == before
    engine.handle("genmove w")
    assert replies[-1].startswith("= ") and len(engine.session.actions) == 2


class ScriptedEngine:
    """An engine that answers every think with one action (RESIGN, or a move chosen by the test),
    as an external engine behind `gtp:` may, and records the budgets it was given."""

    name = "scripted"

    def __init__(self, game, action: int, budget: dict | None = None):
        self.game, self.action, self.own_budget, self.asked = game, action, budget or {}, []

    def budget(self) -> dict:
        return dict(self.own_budget)

    def think(self, state, **budget):
        self.asked.append(budget)
        zeros = torch.zeros(1, self.game.num_actions)
        return Analysis(action=torch.tensor([self.action]), visits=zeros, q=zeros.clone(), value=torch.zeros(1),
                        pv=[[self.action]])


def test_gtp_answers_resign_for_an_engine_that_resigns_and_plays_nothing_for_it():
    engine, replies = gtp(lambda game: ScriptedEngine(game, RESIGN))
    engine.handle("play b c3")
    engine.handle("genmove w")
    assert replies[-1] == "= resign\n\n" and engine.resigned == 1
    assert engine.session.actions == [engine.game.parse_action("c3")]
    assert "RE[B+R]" in engine.gtp_printsgf([])
    engine, replies = gtp(lambda game: ScriptedEngine(game, RESIGN))
    engine.handle("play b c3")
    engine.handle("genmove b")  # white must pass first, implicitly: not when black then resigns
    assert replies[-1] == "= resign\n\n" and len(engine.session.actions) == 1


def test_gtp_refuses_an_engine_move_that_is_illegal_before_playing_the_implicit_pass():
    game = games.make_from_spec("go:size=5")
    engine, replies = gtp(lambda game: ScriptedEngine(game, game.parse_action("c3")))
    engine.handle("play b c3")
    engine.handle("genmove b")  # white passes implicitly, then black's c3 is occupied
    assert replies[-1].startswith("? scripted chose") and "not a legal move" in replies[-1]
    assert engine.session.actions == [game.parse_action("c3")] and engine.session.to_play == 1


def test_gtp_plays_on_when_its_sgf_folder_goes_away(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    engine, replies = gtp()
    engine.sgf_folder = blocker / "records"  # a folder that cannot be made: its parent is a file
    engine.handle("play b c3")
    engine.handle("clear_board")
    assert replies[-1] == "=\n\n" and engine.session.actions == []
    assert "the game's record was not saved" in capsys.readouterr().err
    engine.handle("play b c3")
    assert engine.handle("quit") is False and replies[-1] == "=\n\n"


@pytest.mark.parametrize("ending", ["controller gone", "interrupted"])
def test_gtp_writes_the_games_record_however_the_session_ends(tmp_path, ending):
    from azero.protocols.gtp import serve

    class Gone(io.StringIO):  # the controller's pipe closes while the engine thinks about genmove
        def write(self, text):
            if "genmove" in commands.getvalue()[:commands.tell()] and text.strip() not in ("", "="):
                raise BrokenPipeError(32, "Broken pipe")
            return super().write(text)

    class Interrupted(io.StringIO):  # ^C after genmove's answer
        def readline(self, *args):
            if "genmove" in self.getvalue()[:self.tell()]:
                raise KeyboardInterrupt
            return super().readline(*args)

    engine, _ = gtp()
    engine.sgf_folder = tmp_path
    commands = (Interrupted if ending == "interrupted" else io.StringIO)("play b c3\ngenmove w\nplay b d4\n")
    with pytest.raises(BrokenPipeError if ending == "controller gone" else KeyboardInterrupt):
        serve(engine, commands, Gone() if ending == "controller gone" else io.StringIO())
    records = list(tmp_path.glob("gtp-*.sgf"))  # was: none (only quit and the end of input saved it)
    assert len(records) == 1 and ";B[cc];W[" in records[0].read_text()


def test_gtp_game_records_of_two_engines_in_one_folder_do_not_replace_each_other(tmp_path, monkeypatch):
    from azero.protocols import gtp as gtp_module

    for process in (101, 102):  # two engine processes, each saving its first game in the same second
        monkeypatch.setattr(gtp_module.os, "getpid", lambda: process)
        engine, _ = gtp()
        engine.sgf_folder = tmp_path
        engine.handle("play b c3")
        engine.handle("clear_board")
    assert len(list(tmp_path.glob("gtp-*.sgf"))) == 2


def test_the_analysis_engine_names_a_resignation_and_bounds_a_search_of_simulations_in_time():
    game = games.make_from_spec("go:size=5")
    replies = ask(ScriptedEngine(game, RESIGN), '{"id": 1}')
    assert replies == [{"id": 1, "to_play": "first", "best_move": "resign"}]
    engine = ScriptedEngine(game, game.parse_action("c3"))
    replies = ask(engine, '{"id": 2, "simulations": 10000000}', '{"id": 3, "simulations": 5, "seconds": 2}',
                  '{"id": 4}')
    assert [r["best_move"] for r in replies] == ["C3"] * 3
    assert engine.asked == [{"simulations": 10_000_000, "seconds": MAX_SECONDS}, {"simulations": 5, "seconds": 2}, {}]
    clocked = ScriptedEngine(game, game.parse_action("c3"), budget={"seconds": 1.0})  # --seconds: its own clock
    ask(clocked, '{"id": 5, "simulations": 100}')
    assert clocked.asked == [{"simulations": 100}]


def test_describe_analysis_refuses_to_name_a_resignation_as_a_move():
    game = games.make_from_spec("go:size=5")
    with pytest.raises(ValueError, match="no move"):
        describe_analysis(game, ScriptedEngine(game, RESIGN).think(game.initial_state(1)))


def ask(engine: Engine, *lines: str) -> list[dict]:
    sink = io.StringIO()
    analysis.serve(engine, io.StringIO("".join(line + "\n" for line in lines)), sink)
    return [json.loads(line) for line in sink.getvalue().splitlines()]


def test_the_analysis_engine_refuses_what_json_lacks_and_quits_only_when_told_plainly():
    replies = ask(Engine(games.make("tictactoe"), "random"), '{"id": NaN}', '{"id": 1, "top": Infinity}',
                  '{"id": 2, "top": ' + "9" * 5000 + "}", '{"id": 3, "quit": "no"}', '{"id": 4, "quit": 1}',
                  '{"id": 5, "quit": true, "moves": []}', '{"id": 6, "quit": false}', '{"id": 1e400}',
                  '{"id": 7, "quit": true}', '{"id": 8}')
    # a number it refuses does not hide the id (a client matches replies by it); nothing read after the quit
    assert [r["id"] for r in replies] == [None, 1, 2, 3, 4, 5, 6, None, 7]
    assert "NaN is not a number" in replies[0]["error"] and "Infinity" in replies[1]["error"]
    assert "too many digits" in replies[2]["error"] and "1e400 is too large" in replies[7]["error"]
    assert all("true" in r["error"] for r in replies[3:6]) and "best_move" in replies[6]
    assert replies[8] == {"id": 7, "quit": True}
    assert all("internal error" not in r.get("error", "") for r in replies)
    nested = ask(Engine(games.make("tictactoe"), "random"), '{"id": "a", "moves": [1e309], "top": 2}',
                 '{"id": {"k": [NaN]}, "top": 1}', '[1e309]', '{"id": "b", "moves": ["b2"], "top": 1}')
    assert [r["id"] for r in nested] == ["a", None, None, "b"] and "1e309 is too large" in nested[0]["error"]
    assert "a request is a JSON object" in nested[2]["error"] and nested[3]["best_move"]


def test_a_refused_return_to_the_game_leaves_the_variation_and_the_board_working(board):
    for action in (24, 25):
        board.move(action)
    board.goto(1)
    for action in (10, 11, 12):
        board.move(action)
    line = [24, 10, 11, 12]
    for ply in (None, 99, 3):
        with pytest.raises(GameError, match="from 0 to 2"):
            board.goto(ply, main_line=True)
        assert board.session.actions == line and board.ply == 4 and board.main_line == [24, 25]
        assert board.snapshot()["variation_from"] == 1
    assert board.worker.is_alive()
    board.goto(2, main_line=True)
    assert board.session.actions == [24, 25] and board.ply == 2 and board.main_line is None


def test_a_move_off_the_board_is_named_as_such(board):
    for action in (10**6, 49, -1):
        with pytest.raises(GameError, match=rf"{action} is not a move of gomoku 7x7.*0 to 48"):
            board.move(action)
    assert board.session.actions == []


def test_a_new_game_keeps_the_strength_only_up_to_what_its_tree_may_hold(board):
    board.settings({"simulations": board.node_limit})
    board.new({"game": "go:size=19"})
    limit = board.node_limit  # the 19x19 board's: far below 7x7's
    assert board.engine.simulations == limit and "the most this board's tree may hold" in board.message
    with pytest.raises(GameError, match="unknown option seconds for a new game"):
        board.new({"seconds": 5})


def test_an_sgf_record_with_two_moves_in_a_row_says_it_put_a_pass_in(board):
    board.load_sgf("(;GM[1]SZ[9];B[ee];B[cc])")
    assert board.session.actions == [40, 81, 20] and "1 pass put in" in board.message


def test_no_other_page_may_frame_the_board_and_a_big_sgf_file_is_read(board):
    server = start_server(board, 0)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        for path in ("", "api/state"):
            with urllib.request.urlopen(url + path, timeout=30) as reply:
                assert reply.headers["X-Frame-Options"] == "DENY"
                assert "frame-ancestors 'none'" in reply.headers["Content-Security-Policy"]
        record = "(;GM[4]SZ[7]C[" + "a long comment " * 10_000 + "];B[dd])"  # 150 KB: over a move's 64 KB
        sent = urllib.request.Request(url + "api/sgf", data=json.dumps({"sgf": record}).encode(),
                                      headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(sent, timeout=30) as reply:
            assert reply.status == 200 and json.loads(reply.read())["moves"] == ["d4"]
    finally:
        server.shutdown()


def test_the_board_refuses_text_no_utf_8_can_hold_and_keeps_serving_its_record(board):
    server = start_server(board, 0)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        record = '{"sgf": "(;GM[4]SZ[7]PB[\\ud800]PW[x];B[dd])"}'  # JSON's escape of a lone surrogate
        sent = urllib.request.Request(url + "api/sgf", data=record.encode(), headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(sent, timeout=30)
        assert refused.value.code == 400 and "not Unicode" in json.loads(refused.value.read())["error"]
        with urllib.request.urlopen(url + "api/sgf", timeout=30) as reply:
            assert reply.status == 200
    finally:
        server.shutdown()


def test_a_board_on_port_80_answers_its_page_which_browsers_name_without_the_port():
    for host in ("127.0.0.1", "localhost", "127.0.0.1:80"):
        guard.check_host({"Host": host}, 80)
    guard.check_sender({"Origin": "http://localhost", "Content-Type": "application/json"}, 80)
    with pytest.raises(guard.Refused):
        guard.check_host({"Host": "127.0.0.1"}, 8080)
    with pytest.raises(guard.Refused):
        guard.check_sender({"Origin": "http://localhost", "Content-Type": "application/json"}, 8080)


def test_flat_monte_carlo_keeps_to_the_budget_and_the_clock_it_is_given():
    game = games.make("gomoku", size=7, k=4)
    state, keys = game.initial_state(1), make_keys(1, 1)
    player = FlatMCPlayer(game, 10**8)  # its own budget: far more than any test could wait for
    assert player.analyse(state, keys, simulations=30).visits.sum() == 30
    start = time.monotonic()
    timed = player.analyse(state, keys, seconds=0.05)
    assert time.monotonic() - start < 1.0 and timed.visits.sum() >= 49  # a round of one rollout a move at least
    rounds = []
    stopped = player.analyse(state, keys, on_progress=rounds.append, should_stop=lambda: len(rounds) == 4)
    visits = stopped.visits[0]
    assert [int(r.visits.sum()) for r in rounds] == [49, 147, 343, 735]  # rounds of 49, 98, 196 and 392
    assert visits.max() - visits.min() <= 1
    # the rounds' counts add up to those of one call with the same budget
    whole = FlatMCPlayer(game, 735).analyse(state, keys)
    assert torch.equal(whole.visits, stopped.visits)


# -- the terminal game and the smaller command lines --------------------------------------------------

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
RESIGNING_ENGINE = """
import sys
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "quit":
        print("=\\n", flush=True)
        break
    if words:
        print("= resign\\n" if words[0] == "genmove" else "=\\n", flush=True)
"""


def run(script: str, args: list[str], stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / script), *args], input=stdin, capture_output=True,
                          text=True, timeout=300)


def test_the_terminal_game_against_a_gtp_engine_survives_undo_hint_and_new():
    engine = f"gtp:{sys.executable} {SCRIPTS / 'gtp.py'} --game go:size=5 --player uct:20"
    out = run("play.py", ["--game", "go:size=5", "--opponent", engine],
              "\n".join(["c3", "undo", "b2", "hint", "d4", "new", "c3", "quit"]) + "\n")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    # the output between prompts: [k] follows the k-th input line (c3, undo, b2, hint, d4, new, c3)
    parts = out.stdout.split("your move >")
    assert len(parts) == 9 and "cannot move" not in out.stdout
    assert " plays " in parts[1] and " plays " in parts[3] and "hint: " in parts[4] and " plays " in parts[7]


def test_an_engine_that_resigns_in_the_terminal_ends_the_game_and_undo_plays_on(tmp_path):
    script = tmp_path / "resigner.py"
    script.write_text(RESIGNING_ENGINE)
    out = run("play.py", ["--game", "go:size=5", "--opponent", f"gtp:{sys.executable} {script}"],
              "\n".join(["c3", "d4", "hint", "undo", "b2", "quit"]) + "\n")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "resigns: you win" in out.stdout.split("your move >")[-1]  # asked again after the undo, and resigned
    assert "the game is over: type 'new', 'undo' or 'quit'" in out.stdout and "the game is over\n" in out.stdout


def test_the_terminal_game_refuses_an_endless_line_and_plays_on():
    # piped input is read a bounded line at a time (input() read a line whole, however long)
    out = run("play.py", ["--game", "tictactoe", "--opponent", "perfect"], "b" * 5_000_000 + "\nb2\nquit\n")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "a line longer than 10,000 characters; refused" in out.stdout and out.stdout.count("perfect plays") == 1


def test_undo_before_your_first_move_is_nothing_to_undo():
    out = run("play.py", ["--game", "tictactoe", "--opponent", "perfect", "--ai-first"], "undo\nquit\n")
    assert out.returncode == 0 and "nothing to undo" in out.stdout and out.stdout.count("perfect plays") == 1


def test_a_checkpoint_path_with_an_equals_sign_plays(tmp_path):
    game = games.make("tictactoe")
    folder = tmp_path / "lr=0.1"
    folder.mkdir()
    atomic_save(network_checkpoint(small_net(game).eval(), game, 1), folder / "latest.pt")
    out = run("play.py", ["--checkpoint", str(folder / "latest.pt")], "b2\nquit\n")
    assert out.returncode == 0 and " plays " in out.stdout, out.stderr


@pytest.mark.parametrize("script, args, words", [
    ("play.py", ["--game", "tictactoe", "--opponent", "random", "--gui", "--port", "70000"], "--port must be in"),
    ("bench.py", ["--only", "games", "--seconds", "nan"], "--seconds must be above 0"),
    ("bench.py", ["--only", "games", "--repeats", "0"], "--repeats must be in"),
    ("bench.py", ["--only", "games", "--threads", "-1"], "--threads must be in"),
    ("bench.py", ["--only", "games", "--plot", "scaling.svg"], "add --only ray_scaling"),  # drew nothing before
    ("bench.py", ["--only", "ray_scaling", "--plot", "/proc/nowhere/scaling.svg"], "--plot /proc/nowhere/scaling.svg"),
    ("ablate.py", ["--game", "tictactoe", "--arm", "base:", "--iterations", "1", "--out", "/proc/nowhere"],
     "--out /proc/nowhere: cannot write there"),
    ("evaluate.py", ["--game", "tictactoe", "--a", "random", "--b", "random", "--opening-plies", "10" * 10],
     "--opening-plies must be at least 0 and at most 1,000"),
    ("judge.py", ["--game", "tictactoe", "--player", "random", "--max-plies", "10" * 10], "--max-plies <="),
    ("evaluate.py", ["--game", "tictactoe", "--a", "uct:10:parallel=1000000000000", "--b", "random"], "parallel"),
    ("evaluate.py", ["--game", "gomoku:size=9,size=15", "--a", "random", "--b", "random"], "given twice"),
    # options that did nothing in the mode asked for, silently: the user meant something else
    ("play.py", ["--game", "tictactoe", "--opponent", "random", "--gui", "--analysis"], "give one of them"),
    ("play.py", ["--game", "tictactoe", "--opponent", "random", "--versus", "random", "--gui"], "give one of them"),
    ("play.py", ["--game", "tictactoe", "--opponent", "random", "--analysis", "--ai-first"], "not with --analysis"),
    ("play.py", ["--game", "tictactoe", "--opponent", "random", "--versus", "random", "--ai-first"],
     "the --opponent moves first"),
    ("play.py", ["--game", "tictactoe", "--opponent", "random", "--no-browser"], "--no-browser goes with --gui"),
    ("play.py", ["--game", "tictactoe", "--opponent", "random", "--port", "8080"], "--port goes with --gui"),
    # the brain makes its first engine before serving: a bad spec or budget is not an ERROR at every START
    ("pbrain.py", ["--player", "bogus"], "unknown player"),
    ("pbrain.py", ["--player", "random", "--sims", "0"], "--sims must be positive"),
    ("pbrain.py", ["--player", "uct:10", "--sims", "999999999999"], "out of range"),
    # paths the system cannot look up (a name over 255 bytes): said, not a traceback from stat
    ("evaluate.py", ["--game", "tictactoe", "--a", f"az:/tmp/{'x' * 300}.pt", "--b", "random"],
     f"cannot read the checkpoint /tmp/{'x' * 300}.pt: File name too long"),
    ("play.py", ["--checkpoint", f"/tmp/{'x' * 300}.pt"], "File name too long"),
    ("train.py", ["--game", "tictactoe", "--run-dir", f"/tmp/{'x' * 300}"], "--run-dir /tmp/xxx"),
    ("train.py", ["--game", "x" * 300, "--help-config"], "no preset for game 'xxx"),
    ("ablate.py", ["--out", f"/tmp/{'x' * 300}", "--dry-run"], "File name too long"),
    ("ablate.py", ["--game", "tictactoe", "--arm", "base:", "--iterations", "1", "--out", f"/tmp/{'x' * 300}"],
     "File name too long"),
    ("gtp.py", ["--game", "go:size=5", "--player", "random", "--sgf", f"/tmp/{'x' * 300}"], "File name too long"),
    ("evaluate.py", ["--game", "gomoku:size=5,k=4", "--a", "random", "--b", "random", "--sgf", f"/tmp/{'x' * 300}"],
     "File name too long"),
    ("plot_elo.py", [f"/tmp/{'x' * 300}"], "File name too long"),
    ("play.py", ["--game", "othello", "--opponent", "gtp:'gnugo \"--mode gtp'"], "No closing quotation"),
])
def test_absurd_command_line_values_are_one_line_errors(script, args, words):
    out = run_here(script, *args)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_evaluate_refuses_an_sgf_folder_it_cannot_write_before_playing(tmp_path):
    taken = tmp_path / "a-file"
    taken.write_text("")
    out = run("evaluate.py", ["--game", "gomoku:size=7,k=4", "--a", "random", "--b", "random", "--sgf", str(taken)])
    assert out.returncode == 2 and "is a file, not a folder" in out.stderr and "Traceback" not in out.stderr


def test_the_gtp_engine_refuses_an_sgf_folder_it_cannot_write_before_serving(tmp_path):
    taken = tmp_path / "a-file"
    taken.write_text("")
    out = run("gtp.py", ["--game", "go:size=5", "--player", "random", "--sgf", str(taken / "sub")], "name\n")
    assert out.returncode == 2 and "--sgf" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert out.stdout == ""


MATCH = ("--game", "gomoku:size=5,k=4", "--a", "random", "--b", "uct:8", "--games", "3")


def test_a_second_match_into_an_sgf_folder_numbers_on_and_leaves_the_first_matchs_files(tmp_path):
    first = run_here("evaluate.py", *MATCH, "--seed", "1", "--sgf", str(tmp_path))
    assert first.returncode == 0 and "SGF: 3 games in" in first.stdout, first.stderr
    before = {path.name: path.read_bytes() for path in tmp_path.glob("game-*.sgf")}
    assert sorted(before) == ["game-0001.sgf", "game-0002.sgf", "game-0003.sgf"]
    second = run_here("evaluate.py", *MATCH, "--seed", "2", "--sgf", str(tmp_path), "--json")
    assert second.returncode == 0, second.stderr
    assert [Path(path).name for path in json.loads(second.stdout)["sgf"]] == [
        "game-0004.sgf", "game-0005.sgf", "game-0006.sgf"]
    after = {path.name: path.read_bytes() for path in tmp_path.glob("game-*.sgf")}
    assert len(after) == 6 and all(after[name] == data for name, data in before.items())
    assert "GC[random vs uct:8, game 1 of 3]" in (tmp_path / "game-0004.sgf").read_text()  # its game in its match


@pytest.mark.parametrize("form", ["text", "json"])
def test_a_full_disk_while_writing_a_matchs_sgf_files_keeps_the_result(tmp_path, monkeypatch, form):
    from azero import faults

    monkeypatch.setattr(faults, "_reached", {})
    monkeypatch.setenv("AZERO_FAULT", "sgf@2:enospc")  # the second game's file
    out = run_here("evaluate.py", *MATCH, "--sgf", str(tmp_path), *(["--json"] if form == "json" else []))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    if form == "json":
        report = json.loads(out.stdout)
        assert report["games"] == 3 and report["a_wins"] + report["b_wins"] + report["draws"] == 3
        assert [Path(path).name for path in report["sgf"]] == ["game-0001.sgf"]
    else:
        assert "Elo of A over B:" in out.stdout and "SGF:" not in out.stdout
    assert out.stderr.splitlines() == [
        f"error: --sgf {tmp_path}: 1 of the 3 games' records written (game-0001.sgf), then game-0002.sgf: "
        "No space left on device; the result above stands"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["game-0001.sgf"]  # no temporary file left


def test_two_matches_writing_into_one_sgf_folder_at_once_take_numbers_of_their_own(tmp_path, monkeypatch):
    from azero import sgf
    from azero.arena import play_match
    from azero.players import make

    game = games.make_from_spec("gomoku:size=5,k=4")
    match = play_match(game, make("random", game), make("uct:8", game), 3, progress=False, record_moves=True)
    other = sgf.write_match(tmp_path, game, match)  # the other match's game-0001 .. game-0003
    before = {path.name: path.read_bytes() for path in other}
    # this match listed the folder before the other wrote there: it saw no game-NNNN.sgf
    monkeypatch.setattr(sgf, "next_game_number", lambda folder: 1)
    ours = sgf.write_match(tmp_path, game, match)
    assert [path.name for path in ours] == ["game-0004.sgf", "game-0005.sgf", "game-0006.sgf"]
    assert all((tmp_path / name).read_bytes() == data for name, data in before.items())
    assert all(sgf.read_sgf(path.read_text()).moves for path in ours)


def test_a_failure_other_than_the_disk_while_writing_sgf_prints_the_result_first(tmp_path, monkeypatch, capsys):
    from azero import sgf
    from azero.cli import evaluate

    written = sgf.match_files

    def broken(folder, game, match):  # the first record, then a bug
        files = written(folder, game, match)
        yield next(files)
        files.close()
        raise RuntimeError("a bug while writing")

    monkeypatch.setattr(sgf, "match_files", broken)
    with pytest.raises(RuntimeError, match="a bug while writing"):  # a bug is a traceback ...
        evaluate.main([*MATCH, "--sgf", str(tmp_path)])
    assert "Elo of A over B:" in capsys.readouterr().out  # ... after the match it played
    with pytest.raises(RuntimeError, match="a bug while writing"):
        evaluate.main([*MATCH, "--sgf", str(tmp_path), "--json"])
    report = json.loads(capsys.readouterr().out)  # and its JSON names the record written before the bug
    assert [Path(path).name for path in report["sgf"]] == ["game-0002.sgf"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["game-0001.sgf", "game-0002.sgf"]


def test_an_engine_whose_file_name_is_not_utf8_plays_and_is_named_in_its_sgf_records(tmp_path, monkeypatch):
    python = tmp_path / os.fsdecode(b"python-\xff")  # a name Linux allows: Python reads it as '\udcff'
    try:
        python.symlink_to(sys.executable)
    except (OSError, UnicodeError, NotImplementedError):
        pytest.skip("this file system takes no such name")
    # the interpreter under another name, outside a virtual environment, does not see that
    # environment's packages (nor an editable azero): the engine is given this checkout and this
    # interpreter's import path
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), *(entry for entry in sys.path if entry)]))
    engine = f"gtp:{python} {SCRIPTS / 'gtp.py'} --game go:size=5 --player random"
    out = run_here("evaluate.py", "--game", "go:size=5", "--a", engine, "--b", "random", "--games", "2",
                   "--sgf", str(tmp_path / "sgf"))
    assert out.returncode == 0 and "SGF: 2 games in" in out.stdout, out.stderr  # was: UnicodeEncodeError
    names = {value for path in (tmp_path / "sgf").glob("game-*.sgf")
             for key in ("PB", "PW") for value in sgf_properties(path).get(key, [])}
    assert any("/python-\\udcff" in name for name in names), names  # the byte as its escape, in UTF-8


def sgf_properties(path: Path) -> dict:
    from azero.sgf import read_sgf

    return read_sgf(path.read_text(encoding="utf-8")).properties


def test_a_network_that_does_not_fit_its_description_says_which_shapes_differ_in_one_line(tmp_path):
    """A checkpoint whose weights are another network's than its config says (channels 16
    declared, 8 stored): one line naming the first tensors whose shapes differ, not torch's
    cut-off "Error(s) in loading state_dict for PolicyValueNet:"."""
    from azero.checkpoint import load_checkpoint, network_from_checkpoint

    game = games.make("tictactoe")
    data = network_checkpoint(small_net(game), game, 1)
    data["network"]["channels"] = 8
    path = tmp_path / "other.pt"
    atomic_save(data, path)
    with pytest.raises(UserError) as refused:
        network_from_checkpoint(load_checkpoint(path))
    message = str(refused.value)
    assert "\n" not in message and "Error(s) in loading" not in message, message
    assert re.search(r"stem\.0\.weight is \[16, \d+, 3, 3\] there, the description needs \[8, \d+, 3, 3\]",
                     message), message
    assert "more shapes differ" in message


def test_an_sgf_record_giving_one_side_two_moves_then_a_pass_loads_whole(board):
    """B[ee];B[cc];B[];W[dd]: the passes put in for white count toward no two passes in a row,
    so the record's last move is played too (the load stopped half-way with a traceback's words);
    the board's own record reads back to the same moves."""
    board.load_sgf("(;GM[1]SZ[9];B[ee];B[cc];B[];W[dd])")
    pass_action = board.game.pass_action
    assert board.session.actions == [40, pass_action, 20, pass_action, pass_action, 30]
    assert not board.session.over and "2 passes put in" in board.message
    from azero.sgf import read_sgf, replay

    again = replay(board.game, read_sgf(board.sgf()))
    assert again.actions == board.session.actions and again.inserted == board.session.inserted
