"""GTP both ways, SGF records and the match runner: our engine as a subprocess, GRhino and GNU Go as opponents.

External-engine tests skip only when the program is missing and the CI
environment variable is unset; in CI they run and fail loudly.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import games
from azero import sgf
from azero.arena import play_match
from azero.checkpoint import atomic_save, network_checkpoint
from azero.errors import UserError
from azero.network import NetworkConfig, PolicyValueNet
from azero.players import make
from azero.players.gtp_player import GTPClient
from azero.protocols.gtp import Clock
from commands import run_here

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
RHINO = "/usr/games/gtp-rhino"
GNUGO = "/usr/games/gnugo"
GNUGO_COMMAND = f"{GNUGO} --mode gtp --level 1 --chinese-rules --positional-superko"  # our Go's rules
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}  # modest CPU use for the engine subprocesses
HAS_GO = "go" in games.names()
go_only = pytest.mark.skipif(not HAS_GO, reason="games.make('go') is not registered yet")


def need(program: str) -> None:
    if not os.path.exists(program) and not os.environ.get("CI"):
        pytest.skip(f"{program} is not installed")


def our_engine(*args: str) -> str:
    """The command line of our GTP engine, for a gtp: player spec."""
    return " ".join([sys.executable, str(SCRIPTS / "gtp.py"), *args])


class GTP:
    """A GTP engine subprocess: `ask` returns (ok, id, answer)."""

    def __init__(self, argv: list[str]):
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, bufsize=1, env=ENV)

    @classmethod
    def ours(cls, *args: str) -> "GTP":
        return cls([sys.executable, str(SCRIPTS / "gtp.py"), *args])

    def ask(self, command: str) -> tuple[bool, str, str]:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        lines = []
        while True:
            line = self.process.stdout.readline()
            assert line, f"the engine stopped: {self.process.stderr.read()}"
            if not line.strip():
                if lines:
                    break
                continue
            lines.append(line.rstrip("\n"))
        head = lines[0]
        assert head[0] in "=?", lines
        number = head[1:].split(" ", 1)[0] if len(head) > 1 and head[1].isdigit() else ""
        first = head[1 + len(number):].strip()
        return head[0] == "=", number, "\n".join([first, *lines[1:]]).strip()

    def ok(self, command: str) -> str:
        ok, _, answer = self.ask(command)
        assert ok, f"{command!r} failed: {answer}"
        return answer

    def fails(self, command: str) -> str:
        ok, _, answer = self.ask(command)
        assert not ok, f"{command!r} should fail, got {answer!r}"
        return answer

    def quit(self) -> int:
        self.ask("quit")
        return self.process.wait(timeout=30)


# -- our engine, command by command -----------------------------------------------------------------


def test_every_command_with_ids_and_errors_that_keep_the_engine_running(tmp_path):
    engine = GTP.ours("--game", "othello", "--player", "uct:20", "--sgf", str(tmp_path))
    assert engine.ask("1 protocol_version") == (True, "1", "2")
    assert engine.ask("2 name") == (True, "2", "azero")
    assert engine.ok("version").endswith("uct:20")
    listed = engine.ok("list_commands").split("\n")
    required = ["protocol_version", "name", "version", "known_command", "list_commands", "quit", "boardsize",
                "clear_board", "komi", "play", "genmove", "undo", "showboard", "final_score", "time_settings",
                "time_left", "reg_genmove"]
    assert set(required) <= set(listed)
    assert all(engine.ok(f"known_command {name}") == "true" for name in required)
    assert engine.ok("known_command fly") == "false"
    assert engine.ask("3 fly away")[:2] == (False, "3")  # unknown command, id echoed
    assert engine.fails("boardsize 9").startswith("unacceptable size")
    assert engine.fails("boardsize x").startswith("syntax error")
    engine.ok("boardsize 8")
    engine.ok("clear_board")
    engine.ok("komi 6.5")  # Othello has none: accepted and ignored, as GRhino does
    board = engine.ok("showboard")
    assert "X 2, O 2" in board and "X to move" in board
    assert engine.fails("play black").startswith("syntax error")
    assert "invalid color" in engine.fails("play x d3")
    assert "invalid vertex" in engine.fails("play b z9")
    assert engine.fails("play b d4").startswith("illegal move")  # occupied
    assert engine.fails("play w c5").startswith("illegal move")  # black is to move and has moves
    engine.ok("play B D3")  # either case
    ok, number, move = engine.ask("4 genmove w")
    assert ok and number == "4" and move in {"C3", "E3", "C5"}
    before = engine.ok("showboard")
    othello = games.make("othello")
    state = sgf.play_actions(othello, [othello.parse_action("d3"), othello.parse_action(move)])
    assert othello.parse_action(engine.ok("reg_genmove b")) in othello.legal_actions(state)
    assert engine.ok("showboard") == before  # reg_genmove plays nothing
    engine.ok("undo")
    engine.ok("undo")
    assert "X 2, O 2" in engine.ok("showboard")
    assert engine.fails("undo").startswith("cannot undo")
    engine.ok("time_settings 30 0 0")
    engine.ok("time_left b 2 0")
    assert engine.fails("time_left x 2 0").startswith("syntax error")
    assert engine.ok("genmove black") in {"D3", "C4", "F5", "E6"}
    assert engine.ok("final_score") == "B+3"
    assert engine.ok("printsgf").startswith("(;FF[4]GM[2]SZ[8]")
    engine.ok("clear_board")  # writes the game so far
    assert engine.quit() == 0
    files = list(tmp_path.glob("*.sgf"))
    assert len(files) == 1
    record = sgf.read_sgf(files[0].read_text())
    assert record.properties["PB"] == ["azero uct:20"] and len(record.moves) == 1


def test_passes_follow_grhinos_conventions():
    """c4 c3 f5 b4 a4 a5 b2 a3 leaves black without a move: black passes implicitly."""
    engine = GTP.ours("--game", "othello", "--player", "uct:10")
    for number, move in enumerate("c4 c3 f5 b4 a4 a5 b2 a3".split()):
        engine.ok(f"play {'bw'[number % 2]} {move}")
    assert engine.fails("play b d2").startswith("illegal move")
    assert engine.ok("reg_genmove b") == "pass"
    engine.ok("play w c1")  # white moves again: black's pass is put in
    game = games.make("othello")
    line = [game.parse_action(m) for m in "c4 c3 f5 b4 a4 a5 b2 a3 pass c1".split()]
    assert engine.ok("showboard") == game.render(sgf.play_actions(game, line))
    engine.ok("undo")  # takes back c1 and the pass put in for it
    assert "X to move (must pass)" in engine.ok("showboard")
    assert engine.ok("genmove b") == "pass"
    assert "O to move" in engine.ok("showboard")
    assert engine.fails("play b pass").startswith("illegal move")  # white is to move and has moves
    assert engine.ok("genmove w") != "pass"
    assert engine.quit() == 0


def test_a_clock_bounds_the_search_and_resignation():
    engine = GTP.ours("--game", "othello", "--player", "uct:20000", "--resign-threshold", "0.99")
    engine.ok("time_settings 20 0 0")
    engine.ok("time_left b 1 0")  # one second for the rest of the game
    start = time.monotonic()
    answer = engine.ok("genmove b")
    assert time.monotonic() - start < 5
    assert answer == "resign"  # nobody is 99% sure of winning at the start
    assert "X 2, O 2" in engine.ok("showboard")  # resigning plays nothing
    assert engine.quit() == 0
    clock = Clock(main_time=60, byo_yomi_time=10, byo_yomi_stones=5)
    assert clock.seconds(0, 30) == pytest.approx((60 / 30 + 2) * 0.85 - 0.1)
    clock.left[0] = (10.0, 5)  # in byo-yomi: 10 s for 5 stones
    assert clock.seconds(0, 30) == pytest.approx(2 * 0.85 - 0.1)
    assert Clock(main_time=0, byo_yomi_time=1, byo_yomi_stones=0).seconds(0, 30) is None  # no time limit
    assert Clock().seconds(1, 30) is None


def test_a_checkpoint_plays_its_own_board_size_only(tmp_path):
    game = games.make("othello", size=6)
    net = PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), game).eval()
    path = tmp_path / "net.pt"
    atomic_save(network_checkpoint(net, game, 1), path)
    engine = GTP.ours("--checkpoint", str(path), "--sims", "8")
    assert "othello:size=6 only" in engine.fails("boardsize 8")
    engine.ok("boardsize 6")
    engine.ok("clear_board")
    move = game.parse_action(engine.ok("genmove b"))
    assert move in game.legal_actions(game.initial_state(1))
    assert engine.quit() == 0


def test_command_line_errors_are_one_line(monkeypatch):
    for args in (["--game", "gomoku", "--player", "uct:10"], ["--player", "uct:10"], ["--game", "othello",
                                                                                      "--player", "uct:x"]):
        out = run_here("gtp.py", *args)
        assert out.returncode == 2 and "error: " in out.stderr and "Traceback" not in out.stderr, out.stderr
    out = run_here("match.py", "--game", "othello", "--a", "random", "--b", "gtp:no-such-engine --mode gtp")
    assert out.returncode == 2 and "cannot find the program 'no-such-engine'" in out.stderr
    import shutil

    monkeypatch.setattr(shutil, "which", lambda *args, **options: None)  # as without GNU Go installed
    with pytest.raises(UserError, match="GTP plays go and othello"):  # the game is said first
        make("gtp:gnugo", games.make("connect4"))
    with pytest.raises(UserError, match="needs the engine's command line"):
        make("gtp:", games.make("othello"))
    for spec in ("gtp:gnugo 'unclosed", """gtp:'gnugo "--mode gtp'"""):  # the second: quoted as one word
        with pytest.raises(UserError, match="cannot read the command .*No closing quotation"):
            make(spec, games.make("othello"))


# -- SGF ----------------------------------------------------------------------------------------------


def test_sgf_records_replay_to_the_same_position_passes_included():
    game = games.make("othello", size=4)  # passes are common on 4 x 4
    result = play_match(game, make("random", game), make("random", game, seed=1), 8, record_moves=True,
                        progress=False)
    passes = 0
    for record in result.records:
        text = sgf.to_sgf(game, record.actions, black=record.first, white=record.second)
        assert "B[]" not in text and "W[]" not in text  # Othello passes are left out
        parsed = sgf.read_sgf(text)
        again = sgf.replay(sgf.game_from_sgf(parsed), parsed)
        assert again.actions == record.actions
        assert again.state.equal(sgf.play_actions(game, record.actions)) and bool(again.state.done[0])
        discs = int(again.state.board.sum())
        assert parsed.properties["RE"] == [sgf.result_text(game, again.state)]
        assert parsed.properties["RE"][0] == ("0" if discs == 0 else f"{'B' if discs > 0 else 'W'}+{abs(discs)}")
        passes += record.actions.count(game.num_actions - 1)
    assert passes > 0


def test_sgf_reader_takes_the_main_line_and_unescapes():
    text = "(;GM[4]FF[4]SZ[7:5]PB[a \\] b]C[x]\n;B[aa](;W[bb];B[cc])(;W[dd]))(;GM[4];B[ee])"
    record = sgf.read_sgf(text)
    assert record.properties["PB"] == ["a ] b"]
    assert record.moves == [(0, "aa"), (1, "bb"), (0, "cc")]
    game = sgf.game_from_sgf(record)
    assert game.board_shape == (5, 7)
    assert sgf.replay(game, record).actions == [0, 8, 16]
    with pytest.raises(games.GameError, match="setup stones"):
        sgf.read_sgf("(;GM[1]AB[aa];B[bb])")
    with pytest.raises(UserError, match="no game type for connect4"):
        sgf.to_sgf(games.make("connect4"), [])


def test_our_engine_as_an_external_player_keeps_in_step_through_many_passes():
    game = games.make("othello", size=4)  # passes are common on 4 x 4: neither side sends them
    ours = make(f"gtp:{our_engine('--game', 'othello', '--player', 'random')}", game)
    try:
        result = play_match(game, ours, make("random", game, seed=1), 6, record_moves=True, progress=False)
    finally:
        ours.close()
    assert result.a_wins + result.b_wins + result.draws == 6
    assert sum(record.actions.count(16) for record in result.records) > 0


# -- against GRhino -------------------------------------------------------------------------------------


def test_gtp_players_keep_in_step_with_grhino_through_passes():
    need(RHINO)
    game = games.make("othello")
    rhino = make(f"gtp:{RHINO} --level 1", game)
    # GRhino varies its play from run to run, and a game against random play has a pass only
    # about every other time: play pairs of games until one has a pass (each pair ~3 s).
    records = []
    try:
        for seed in range(8):
            result = play_match(game, make("random", game, seed=seed), rhino, 2, record_moves=True,
                                progress=False)
            assert result.b_wins == 2  # GRhino beats random play
            records += result.records
            if any(64 in record.actions for record in records):
                break
    finally:
        rhino.close()
    assert any(64 in record.actions for record in records)  # passes were played (16 games: all but certain)
    assert all(record.result == (1 if record.first == rhino.spec else -1) for record in records)


def rhino_board(moves: list[str]) -> str:
    """GRhino's showboard after `moves` (passes left out, as GRhino wants)."""
    engine = GTP([RHINO])
    engine.ok("boardsize 8")
    engine.ok("clear_board")
    for colour, move in moves:
        engine.ok(f"play {colour} {move}")
    board = engine.ok("showboard")
    engine.quit()
    return board


def test_our_engine_against_grhino_through_the_match_runner(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the engines' processes (the runner is this one)
    need(RHINO)
    ours = f"gtp:{our_engine('--game', 'othello', '--player', 'uct:10')}"
    out = run_here(
        "match.py", "--game", "othello", "--a", ours, "--b", f"gtp:{RHINO} --level 1",
        "--games", "2", "--sgf", str(tmp_path), "--json",
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["games"] == 2 and report["a_wins"] + report["b_wins"] + report["draws"] == 2
    assert len(report["sgf"]) == 2
    game = games.make("othello")
    for path in report["sgf"]:
        record = sgf.read_sgf(Path(path).read_text())
        played = sgf.replay(sgf.game_from_sgf(record), record)
        assert bool(played.state.done[0])  # the game ended, every move legal in our rules
        assert record.properties["RE"] == [sgf.result_text(game, played.state)]
        # GRhino, given the same moves, reaches the same final position
        board = rhino_board([("bw"[colour], move) for colour, move in
                             ((c, game.format_action(sgf.parse_point(game, m))) for c, m in record.moves)])
        grid = [line.split()[1:] for line in board.splitlines()[2:10]]
        ours = [["X" if v == 1 else "O" if v == -1 else "." for v in row] for row in played.state.board[0].tolist()]
        assert grid == ours


# -- external engines that misbehave ------------------------------------------------------------------

FAKE_ENGINE = """
import sys
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "genmove":
        print("= " + ANSWER + "\\n", flush=True)
    elif words[0] == "quit":
        print("=\\n", flush=True)
        break
    else:
        print("=\\n", flush=True)
"""


def fake_engine(tmp_path: Path, answer: str) -> str:
    path = tmp_path / f"fake_{answer}.py"
    path.write_text(f"ANSWER = {answer!r}\n" + FAKE_ENGINE)
    return f"gtp:{sys.executable} {path}"


def test_an_illegal_external_move_stops_the_match_with_a_clear_error(tmp_path):
    out = run_here("match.py", "--game", "othello", "--a", "random", "--b", fake_engine(tmp_path, "A1"),
                   "--games", "1")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "played A1 as white, which is illegal here" in out.stderr


def test_an_external_resignation_is_a_loss(tmp_path):
    game = games.make("othello")
    quitter = make(fake_engine(tmp_path, "resign"), game)
    try:
        result = play_match(game, make("random", game), quitter, 2, record_moves=True, progress=False)
    finally:
        quitter.close()
    assert result.a_wins == 2
    paths = sgf.write_match(tmp_path / "sgf", game, result)
    results = [sgf.read_sgf(p.read_text()).properties["RE"][0] for p in paths]
    assert results == ["B+R", "W+R"]  # game 1: random is black and the engine resigns as white; then the reverse


# -- Go against GNU Go (once games.make("go") exists) --------------------------------------------------


@go_only
def test_go_vertices_and_passes_over_gtp():
    engine = GTP.ours("--game", "go:size=9", "--player", "uct:10")
    engine.ok("boardsize 7")
    engine.ok("clear_board")
    engine.ok("komi 5.5")
    engine.ok("play b D4")
    engine.ok("play b c3")  # white passes in between
    assert engine.fails("play w D4").startswith("illegal move")
    engine.ok("play w pass")
    assert engine.fails("play b j1").startswith("syntax error")  # no column I in GTP, J is off a 7x7 board
    move = engine.ok("genmove b")
    assert move == "pass" or move[0] in "ABCDEFG"
    assert engine.ok("final_score").startswith(("B+", "W+", "0"))
    assert engine.fails("boardsize 25").startswith("unacceptable size")
    assert engine.quit() == 0


@go_only
def test_our_engine_against_gnugo_through_the_match_runner(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the engines' processes (the runner is this one)
    need(GNUGO)
    ours = f"gtp:{our_engine('--game', 'go:size=7,komi=7.5', '--player', 'uct:20:parallel=20')}"
    out = run_here(
        "match.py", "--game", "go:size=7,komi=7.5", "--a", ours, "--b",
        f"gtp:{GNUGO_COMMAND}", "--games", "2", "--sgf", str(tmp_path), "--json",
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["a_wins"] + report["b_wins"] + report["draws"] == 2
    for path in report["sgf"]:
        text = Path(path).read_text()
        assert "GM[1]" in text and "KM[7.5]" in text and "SZ[7]" in text
        record = sgf.read_sgf(text)
        played = sgf.replay(sgf.game_from_sgf(record), record)
        assert bool(played.state.done[0]) or record.properties["RE"][0].endswith("+R")


def test_an_engine_is_told_a_matchs_random_opening_and_each_opening_is_played_with_both_colours(
        tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the engines' processes (the runner is this one)
    need(GNUGO)
    out = run_here(
        "match.py", "--game", "go:size=7,komi=7.5", "--a", "random", "--b",
        f"gtp:{GNUGO_COMMAND}", "--games", "4", "--opening-plies", "2", "--sgf", str(tmp_path), "--json",
    )
    assert out.returncode == 0, out.stderr
    openings = []
    for path in json.loads(out.stdout)["sgf"]:
        record = sgf.read_sgf(Path(path).read_text())
        played = sgf.replay(sgf.game_from_sgf(record), record)  # every move legal, GNU Go's included
        assert bool(played.state.done[0]) or record.properties["RE"][0].endswith("+R")
        openings.append(re.findall(r";([BW])\[(\w*)\]", Path(path).read_text())[:2])
    # games 1 and 2 open alike, as do 3 and 4: (B, W) moves the same, the players' colours swapped
    assert openings[0] == openings[1] and openings[2] == openings[3] and openings[0] != openings[2], openings


def test_an_engine_moving_second_catches_up_on_four_opening_plies_and_its_opponents_reply(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the engines' processes (the runner is this one)
    need(RHINO)
    out = run_here(
        "match.py", "--game", "othello", "--a", "random", "--b",
        f"gtp:{RHINO} --level 1", "--games", "2", "--opening-plies", "4", "--json",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["games"] == 2


# Finished 7x7 positions where every stone is alive, as moves in GTP (black first, then alternating;
# "pass" keeps the turn order). GNU Go's Chinese-rules final_score must agree with our area score.
# Neutral points (dame) count for nobody in both, but GNU Go fills them in turn before it counts, so
# an odd number of dame gives the side to move one point more than Tromp-Taylor does: the dame
# position below has an even number.
SCORED_POSITIONS = [
    "D1 E1 D2 E2 D3 E3 D4 E4 D5 E5 D6 E6 D7 E7",  # walls: black owns columns A-D (28), white E-G (21): W+0.5
    "C1 D1 C2 D2 C3 D3 C4 D4 C5 D5 C6 D6 C7 D7",  # black A-C (21), white D-G (28): W+14.5
    "C1 E1 C2 E2 C3 E3 C4 E4 C5 E5 C6 E6 C7 E7 D7",  # D1-D6 between the walls are nobody's: W+6.5
    "A4 A5 B4 B5 C4 C5 D4 D5 E4 E5 F4 F5 G4 G5",  # rows: black owns rows 1-4 (28), white 5-7 (21): W+0.5
]


@go_only
@pytest.mark.parametrize("moves", SCORED_POSITIONS)
def test_tromp_taylor_score_agrees_with_gnugo(moves):
    need(GNUGO)
    game = games.make("go", size=7, komi=7.5)
    gnugo = GTP(GNUGO_COMMAND.split())
    gnugo.ok("boardsize 7")
    gnugo.ok("clear_board")
    gnugo.ok("komi 7.5")
    state = game.initial_state(1)
    for number, move in enumerate(moves.split()):
        gnugo.ok(f"play {'bw'[number % 2]} {move}")
        state = game.step(state, torch.tensor([game.parse_action(move)]))
    ours = float(torch.as_tensor(game.score(state)).reshape(-1)[0])
    theirs = gnugo.ok("final_score")
    gnugo.quit()
    expected = "0" if ours == 0 else f"{'B' if ours > 0 else 'W'}+{abs(ours):.1f}"
    assert theirs == expected


def _random_finished_game(game, generator: torch.Generator) -> list[str]:
    """Moves (GTP text) of a random 7x7 game played out to the end: each side plays a uniformly
    random legal move that does not fill one of its own eyes, and passes when it has none, so
    the final position holds only living groups and points surrounded by one colour."""
    size = game.size
    state, moves, passes = game.initial_state(1), [], 0
    while passes < 2 and not bool(state.done[0]):
        colour = 1 if int(state.to_play[0]) == 0 else -1
        board = state.board[0]
        legal = game.legal_mask(state)[0, :-1].nonzero().flatten().tolist()
        candidates = [a for a in legal if not _is_eye(board, divmod(a, size), colour)]
        if candidates:
            action = candidates[int(torch.randint(len(candidates), (1,), generator=generator))]
            passes = 0
        else:
            action, passes = game.pass_action, passes + 1
        moves.append(game.format_action(action))
        state = game.step(state, torch.tensor([action]))
    return moves


def _is_eye(board: torch.Tensor, point: tuple[int, int], colour: int) -> bool:
    """A real eye of `colour`: every neighbour is its stone, and of the diagonal points at most one
    is the opponent's in the middle of the board, none on the edge."""
    size = board.shape[0]
    row, col = point
    for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        r, c = row + dr, col + dc
        if 0 <= r < size and 0 <= c < size and int(board[r, c]) != colour:
            return False
    diagonals = [(row + dr, col + dc) for dr in (1, -1) for dc in (1, -1)]
    on_board = [(r, c) for r, c in diagonals if 0 <= r < size and 0 <= c < size]
    hostile = sum(int(board[r, c]) == -colour for r, c in on_board)
    return hostile == 0 if len(on_board) < 4 else hostile <= 1


@go_only
def test_tromp_taylor_score_of_random_finished_games_agrees_with_gnugo():
    need(GNUGO)
    game = games.make("go", size=7, komi=7.5)
    generator = torch.Generator().manual_seed(2026)
    gnugo = GTP(GNUGO_COMMAND.split())
    for _ in range(20):
        moves = _random_finished_game(game, generator)
        gnugo.ok("boardsize 7")
        gnugo.ok("clear_board")
        gnugo.ok("komi 7.5")
        state = game.initial_state(1)
        for number, move in enumerate(moves):
            gnugo.ok(f"play {'bw'[number % 2]} {move}")
            state = game.step(state, torch.tensor([game.parse_action(move)]))
        ours = float(game.score(state)[0])
        expected = "0" if ours == 0 else f"{'B' if ours > 0 else 'W'}+{abs(ours):.1f}"
        assert gnugo.ok("final_score") == expected, game.render(state)
    gnugo.quit()


def test_an_external_engine_that_stops_answering_is_stopped_with_a_clear_error():
    silent_on_genmove = ("import sys, time\n"
                         "for line in sys.stdin:\n"
                         "    time.sleep(60) if 'genmove' in line else print('= ok\\n', flush=True)")
    client = GTPClient([sys.executable, "-c", silent_on_genmove], "gtp:sleepy", timeout=1)
    assert client.ask("name") == "ok"
    started = time.monotonic()
    with pytest.raises(UserError, match=r"gtp:sleepy did not answer 'genmove b' within 1 s"):
        client.ask("genmove b")
    assert time.monotonic() - started < 30
    assert client.process.poll() is not None  # stopped, not left running
    client.close()


@pytest.mark.parametrize("engine, timeout, words", [
    # a line every 0.3 s, none an answer: each line came within the timeout, the answer never did
    ("import sys, time\nfor line in sys.stdin:\n    while True: print('thinking', flush=True); time.sleep(0.3)",
     1, "did not answer 'genmove b' within 1 s"),
    # lines without end, as fast as it can (`yes`): an answer that never starts, then one that never ends
    ("import sys\nfor line in sys.stdin:\n    while True: print('y')", 20, "printed over 10,000 lines"),
    ("import sys\nfor line in sys.stdin:\n    print('= ok')\n    while True: print('y')", 20,
     "printed over 10,000 lines"),
    # one line without end (an answer, then garbage), or one merely too long: refused at the limit
    ("import sys\nfor line in sys.stdin:\n    sys.stdout.write('= ')\n    while True: sys.stdout.write('y' * 4096)",
     20, "printed a line longer than 100,000 characters answering 'genmove b'; stopped it"),
    ("import sys\nfor line in sys.stdin:\n    print('= ' + 'y' * 100_001, flush=True)", 20,
     "printed a line longer than 100,000 characters"),
])
def test_an_external_engine_that_talks_without_answering_is_stopped_with_a_clear_error(engine, timeout, words):
    client = GTPClient([sys.executable, "-c", engine], "gtp:chatty", timeout=timeout)
    started = time.monotonic()
    with pytest.raises(UserError, match=f"gtp:chatty {words}"):
        client.ask("genmove b")
    assert time.monotonic() - started < 30
    assert client.process.poll() is not None
    client.close()


def test_bytes_of_an_external_engine_that_are_not_utf8_are_an_unreadable_answer_not_its_end():
    engine = ("import sys\nfor line in sys.stdin:\n"
              "    sys.stdout.buffer.write(b'= \\xff\\xfe\\n\\n'); sys.stdout.flush()")
    client = GTPClient([sys.executable, "-c", engine], "gtp:latin", timeout=5)
    assert client.ask("genmove b") == "\ufffd\ufffd"  # the player then refuses it as no vertex
    assert client.process.poll() is None
    client.close()


@go_only
def test_one_colour_moving_twice_then_passing_does_not_end_the_game():
    """`play b d4`, `play b d5`, `play b pass`: the passes the engine puts in for white do not
    count toward two passes in a row (two moves by one colour are legal GTP: a controller
    setting up a position), so the game goes on, and its record reads back the same."""
    from azero.protocols.gtp import GTPEngine
    from azero.session import Engine

    replies = []
    engine = GTPEngine(games.make("go", size=9), lambda game: Engine(game, "random"), write=replies.append)
    for line in ["play b d4", "play b d5", "play b pass", "play w e5", "play b e6", "play w pass", "printsgf"]:
        replies.clear()
        engine.handle(line)
        assert replies and replies[0].startswith("="), (line, replies)
    record = sgf.read_sgf(replies[0][1:].strip())
    game = games.make("go", size=9)
    assert not bool(sgf.replay(game, record).state.done[0])
    replies.clear()
    engine.handle("play b pass")  # now two passes in a row: white's own, then black's
    assert replies[0].startswith("=")
    replies.clear()
    engine.handle("play w e7")
    assert replies[0].startswith("?") and "over" in replies[0]
