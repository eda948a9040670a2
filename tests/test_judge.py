"""The exact yardsticks: Connect Four's solver (BitBully) checked against published and exhaustive values, the
judge's positions and arithmetic, the `perfect` player, and scripts/judge.py.

The Connect Four tests need the optional `bitbully` package (pip install -e '.[yardsticks]'); they skip
without it, except in CI (the CI variable set), where .ci/run installs it and a missing package fails.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import games
from azero.errors import UserError
from azero.judge import judge, judge_positions
from azero.oracle import ConnectFourOracle, ExhaustiveOracle, make_oracle
from azero.players import make
from azero.players.base import Player
from azero.solver import Solver
from commands import run_here

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
CONNECT4 = games.make("connect4")
TICTACTOE = games.make("tictactoe")

try:
    import bitbully  # noqa: F401
    HAVE_BITBULLY = True
except ImportError:
    HAVE_BITBULLY = False
needs_bitbully = pytest.mark.skipif(not HAVE_BITBULLY and not os.environ.get("CI"),
                                    reason="bitbully is not installed (pip install -e '.[yardsticks]')")

# Pascal Pons' solver test sets (blog.gamesolver.org, "Part 2 - Test protocol"): moves as 1-based columns
# and the score of the player to move (positive: a win, the sooner the larger; 0: a draw; negative: a loss).
# Two or more lines of each set: end (L3), middle (L2) and beginning (L1) of the game, easy to hard (R1-R3).
PONS = [
    ("2252576253462244111563365343671351441", -1), ("23163416124767223154467471272416755633", 0),  # L3 R1
    ("5554224333234511764415115", 4), ("2737772244262123677516643354", 0),  # L2 R1
    ("274552224131661", 0), ("555317266147361", -1),  # L2 R2
    ("32164625", 11), ("25144", 18), ("4737", 18), ("43745416472735", -13), ("427631264721", 10),
    ("265756512", -12),  # L1 R1
    ("32751571231557", -3), ("75734233473735", 0), ("335662333565", -2), ("157564142155", -5),  # L1 R2
    ("13712", 3), ("527376", 0),  # L1 R3
]


def play(game, moves: str):
    state = game.initial_state(1)
    for column in moves:
        state = game.step(state, torch.tensor([int(column) - 1]))
    return state


@pytest.fixture(scope="module")
def oracle():
    return ConnectFourOracle()


@needs_bitbully
def test_connect_four_solver_scores_pons_test_positions_exactly(oracle):
    for moves, score in PONS:
        state = play(CONNECT4, moves)
        assert oracle.move_scores(state).nan_to_num(nan=-99).max().item() == score, moves
        assert oracle.values(state).item() == (score > 0) - (score < 0), moves


@needs_bitbully
def test_values_are_for_the_player_to_move(oracle):
    # X (first player) holds a1 b1 c1, O holds a2 b2: O to move, and every column but d loses at once
    o_to_move = play(CONNECT4, "11223")
    assert int(o_to_move.to_play) == 1
    values = oracle.move_values(o_to_move)[0]
    assert values[[0, 1, 2, 4, 5, 6]].eq(-1).all() and values[3] > -1
    # X a1 b1 c1, O a2 b2 c2: X to move wins in d with its fourth disc
    x_to_move = play(CONNECT4, "112233")
    assert oracle.move_values(x_to_move)[0, 3] == 1 and oracle.values(x_to_move).item() == 1
    assert oracle.move_scores(x_to_move)[0, 3] == 18  # Pons' score of a win at move 7: (43 - 7) / 2


@needs_bitbully
def test_connect_four_solver_agrees_with_exhaustive_search_on_late_positions(oracle):
    # every unfinished position below three late roots, solved by our own enumeration
    roots = judge_positions(CONNECT4, 3, min_plies=31, max_plies=33, seed=5)
    compared = 0
    for index in range(roots.batch_size):
        solver = Solver(CONNECT4, root=roots[torch.tensor([index])])
        positions = solver.positions()
        exhaustive = ExhaustiveOracle.__new__(ExhaustiveOracle)
        exhaustive.game, exhaustive.solver = CONNECT4, solver
        mine, theirs = exhaustive.move_values(positions), oracle.move_values(positions)
        assert torch.equal(mine.isnan(), theirs.isnan())
        assert torch.equal(mine.nan_to_num(nan=9), theirs.nan_to_num(nan=9))
        compared += positions.batch_size
    assert compared > 100


def test_exhaustive_oracle_and_the_players_view_on_tictactoe():
    oracle = make_oracle(TICTACTOE)
    assert isinstance(oracle, ExhaustiveOracle)
    start = TICTACTOE.initial_state(1)
    assert oracle.values(start).item() == 0 and oracle.move_values(start).eq(0).all()  # every first move draws
    state = play_cells(TICTACTOE, ["b2", "a1", "a3"])  # X b2 a3, O a1: O to move blocks c1 and draws
    values = oracle.move_values(state)[0]
    block = TICTACTOE.parse_action("c1")
    others = [a for a in range(9) if a != block and not math.isnan(values[a])]
    assert len(others) == 5 and all(values[a] == -1 for a in others) and values[block] == 0
    assert oracle.best_actions(state)[0].nonzero().flatten().tolist() == [block]
    finished = play_cells(TICTACTOE, ["a1", "a2", "b2", "b1", "c3"])
    assert oracle.values(finished).isnan().all() and oracle.move_values(finished).isnan().all()


def play_cells(game, cells):
    state = game.initial_state(1)
    for cell in cells:
        state = game.step(state, torch.tensor([game.parse_action(cell)]))
    return state


def test_judge_positions_are_fixed_distinct_unfinished_and_in_range():
    first = judge_positions(CONNECT4, 40, min_plies=6, max_plies=22, seed=3)
    again = judge_positions(CONNECT4, 40, min_plies=6, max_plies=22, seed=3)
    more = judge_positions(CONNECT4, 60, min_plies=6, max_plies=22, seed=3)
    other = judge_positions(CONNECT4, 40, min_plies=6, max_plies=22, seed=4)
    assert torch.equal(first.board, again.board) and torch.equal(first.board, more.board[:40])
    assert not torch.equal(first.board, other.board)
    assert not first.done.any()
    assert first.move_number.min() >= 6 and first.move_number.max() <= 22
    assert len({bytes(b.numpy().tobytes()) for b in first.board}) == 40
    assert len(set(first.move_number.tolist())) > 5  # depths spread over the range
    with pytest.raises(UserError, match="distinct unfinished positions"):
        judge_positions(TICTACTOE, 100, min_plies=1, max_plies=1)  # only 9 positions after one move


class WorstPlayer(Player):
    """Plays a move of the lowest exact value (a value-changing move wherever there is one)."""

    spec = "worst"

    def __init__(self, game, oracle):
        super().__init__(game)
        self.oracle = oracle

    def act(self, states, keys=None):
        return self.oracle.move_values(states).nan_to_num(nan=math.inf).argmin(dim=1)


def test_judge_counts_kept_moves_and_decisive_positions():
    oracle = make_oracle(TICTACTOE)
    positions = judge_positions(TICTACTOE, 200, min_plies=0, max_plies=7, seed=1)
    perfect = judge(make("perfect", TICTACTOE), positions, oracle, min_plies=0, max_plies=7, seed=1)
    worst = judge(WorstPlayer(TICTACTOE, oracle), positions, oracle, min_plies=0, max_plies=7, seed=1)
    values = oracle.values(positions)
    moves = oracle.move_values(positions)
    decisive = int(((moves != values.unsqueeze(1)) & ~moves.isnan()).any(dim=1).sum())
    assert perfect.positions == worst.positions == 200
    assert perfect.kept == 200 and perfect.share == 1.0 and perfect.kept_decisive == perfect.decisive == decisive
    assert worst.kept == 200 - decisive and worst.kept_decisive == 0  # every decisive position lost its value
    assert (perfect.wins, perfect.draws, perfect.losses) == (int((values > 0).sum()), int((values == 0).sum()),
                                                             int((values < 0).sum()))
    low, high = worst.interval
    assert low < worst.share < high and 0 < decisive < 200
    record = worst.to_dict()
    assert record["share"] == worst.share and record["decisive_share"] == 0.0 and len(record["share_ci95"]) == 2


@needs_bitbully
def test_perfect_connect_four_player_never_loses_and_keeps_every_value():
    positions = judge_positions(CONNECT4, 60, seed=2)
    oracle = make_oracle(CONNECT4)
    result = judge(make("perfect", CONNECT4), positions, oracle)
    assert result.kept == 60
    uct = judge(make("uct:30", CONNECT4), positions, oracle)
    assert uct.kept < 60  # a weak player does lose values on these positions


def run(*args, timeout=600):
    return subprocess.run([sys.executable, str(SCRIPTS / "judge.py"), *args], capture_output=True, text=True,
                          timeout=timeout)


def test_judge_script_reports_each_player_and_refuses_bad_input():
    out = run("--game", "tictactoe", "--player", "perfect", "--player", "random", "--positions", "50",
              "--min-plies", "0", "--max-plies", "6", "--json")
    assert out.returncode == 0, out.stderr
    perfect, random = (json.loads(line) for line in out.stdout.splitlines())
    assert perfect["player"] == "perfect" and perfect["kept"] == 50 and perfect["share"] == 1.0
    assert random["player"] == "random" and random["kept"] < 50 and random["positions"] == 50
    text = run_here("judge.py", "--game", "tictactoe", "--player", "perfect", "--positions", "20",
                    "--min-plies", "2", "--max-plies", "5")
    assert "moves that keep the value: 20/20 = 100.0%" in text.stdout
    # refusals, in this process (tests/commands.py)
    bad = run_here("judge.py", "--game", "gomoku:size=9", "--player", "random", "--positions", "5")
    assert bad.returncode == 2 and "too large to solve exactly" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_here("judge.py", "--game", "tictactoe", "--player", "nobody")
    assert bad.returncode == 2 and "unknown player 'nobody'" in bad.stderr
    for flag, value, allowed in (("--positions", "1000000000", "1..65,536"), ("--batch", "0", "1..65,536"),
                                 ("--batch", "10000000", "1..65,536")):
        bad = run_here("judge.py", "--game", "tictactoe", "--player", "random", flag, value)
        assert bad.returncode == 2 and f"{flag} must be in {allowed}" in bad.stderr and "Traceback" not in bad.stderr


# -- Pons' test sets (scripts/judge.py --pons) ---------------------------------------------------------------


def write_pons_sets(folder: Path) -> dict[str, list[tuple[str, int]]]:
    """The published lines above as Pons set files, a set per stage and difficulty they come from."""
    sets = {"Test_L3_R1": PONS[0:2], "Test_L2_R1": PONS[2:4], "Test_L2_R2": PONS[4:6], "Test_L1_R1": PONS[6:12],
            "Test_L1_R2": PONS[12:16], "Test_L1_R3": PONS[16:18]}
    for name, lines in sets.items():
        (folder / name).write_text("".join(f"{moves} {score}\n" for moves, score in lines))
    return sets


@needs_bitbully
def test_pons_sets_report_error_rates_as_alphazero_jl_counts_them(tmp_path):
    """An error is a move whose value (win, draw, loss) is worse than the best move's: the exact
    player makes none, and a player's errors are the positions where its move loses value."""
    sets = write_pons_sets(tmp_path)
    from azero.judge import read_pons_set

    positions, scores = read_pons_set(CONNECT4, tmp_path / "Test_L1_R1")
    assert positions.batch_size == 6 and scores.tolist() == [score for _, score in PONS[6:12]]
    assert torch.equal(positions.board, play_all(CONNECT4, [moves for moves, _ in PONS[6:12]]).board)
    out = run("--game", "connect4", "--pons", str(tmp_path), "--player", "perfect", "--player", "random", "--json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [row["set"] for row in rows] == ["Test_L1_R1", "Test_L1_R2", "Test_L1_R3", "Test_L2_R1", "Test_L2_R2",
                                            "Test_L3_R1"] * 2
    perfect, random = rows[:6], rows[6:]
    assert "min_plies" not in rows[0] and rows[0]["source"] == "of Pons' Test_L1_R1 (beginning, easy)"
    assert all(row["errors"] == 0 and row["error_rate"] == 0.0 for row in perfect)
    oracle = ConnectFourOracle()
    for row in random:  # the random player's errors, counted again here from the solver's move values
        states, _ = read_pons_set(CONNECT4, tmp_path / row["set"])
        player = make("random", CONNECT4, seed=0)
        from azero.judge import PLAYER_KEYS
        from games.keyed_random import fold, make_keys

        action = player.act(states, keys=fold(make_keys(0, states.batch_size), PLAYER_KEYS))
        values = oracle.move_values(states)
        worse = values.gather(1, action.unsqueeze(1)).squeeze(1) < oracle.values(states)
        assert row["errors"] == int(worse.sum()) and row["positions"] == len(sets[row["set"]])
    assert sum(row["errors"] for row in random) > 0  # (the count is not trivially zero)
    text = run_here("judge.py", "--game", "connect4", "--pons", str(tmp_path), "--player", "perfect")
    assert "Test_L1_R3  beginning, hard" in text.stdout and "0.0%" in text.stdout


@needs_bitbully
def test_a_damaged_pons_set_is_one_clear_error(tmp_path):
    write_pons_sets(tmp_path)
    cases = [("4453 -2 7\n", "line 1: expected the columns played and a score"),
             ("44444444 0\n", "line 1: move 7 (4) is not legal there"),
             ("4455667 0\n4453x 1\n", "line 2: expected the columns played and a score"),
             ("1212121 0\n", "line 1: the game is over in that position"),
             ("13712 -3\n", "the set gives it -1 for the player to move, bitbully +1"),
             ("", "no positions")]
    for text, message in cases:
        (tmp_path / "Test_L1_R1").write_text(text)
        out = run_here("judge.py", "--game", "connect4", "--pons", str(tmp_path), "--player", "random")
        assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr, (text, out.stderr)
    for args, message in ((["--pons", str(tmp_path / "nowhere")], "not a folder"),
                          (["--pons", str(SCRIPTS)], "no Pons test set there"),
                          (["--pons-limit", "5"], "--pons-limit needs --pons")):
        out = run_here("judge.py", "--game", "connect4", "--player", "random", *args)
        assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)
    out = run_here("judge.py", "--game", "tictactoe", "--pons", str(tmp_path), "--player", "random")
    assert out.returncode == 2 and "positions of 6x7 Connect Four" in out.stderr


def play_all(game, lines: list[str]):
    from games import State

    return State.cat([play(game, moves) for moves in lines])


def test_the_policy_player_plays_the_networks_most_probable_legal_move(tmp_path):
    """policy:CHECKPOINT: no search, the argmax of the network's prior over the legal moves."""
    from azero.network import NetworkEvaluator
    from azero.players.policy import PolicyPlayer
    from networks import small_net

    game = TICTACTOE
    net = small_net(game)
    states = judge_positions(game, 40, min_plies=0, max_plies=6)
    player = PolicyPlayer(game, net)
    prior, _ = NetworkEvaluator(net.eval(), game, precision="float32")(states)
    action = player.act(states)
    assert game.legal_mask(states).gather(1, action.unsqueeze(1)).all()
    assert torch.equal(prior.gather(1, action.unsqueeze(1)).squeeze(1), prior.max(dim=1).values)
    assert torch.equal(player.act(states), action)  # deterministic


@pytest.mark.slow
@needs_bitbully
def test_a_runs_networks_are_judged_on_pons_sets_against_training_hours(tmp_path):
    from runs import tiny_args

    write_pons_sets(tmp_path)
    run_dir = tmp_path / "run"
    out = subprocess.run([sys.executable, str(SCRIPTS / "train.py"), *tiny_args({"run.keep_every": 1}, game="connect4"),
                          "--iterations", "2", "--run-dir", str(run_dir)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    plot = tmp_path / "pons.svg"
    out = run("--game", "connect4", "--pons", str(tmp_path), "--run", str(run_dir), "--sims", "4", "--snapshots", "2",
              "--network-alone", "--plot", str(plot), "--json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 2 * 2 * 6 and {(r["iteration"], r["kind"]) for r in rows} == {
        (1, "search"), (1, "network alone"), (2, "search"), (2, "network alone")}
    assert all(r["hours"] > 0 and 0 <= r["error_rate"] <= 1 for r in rows)
    assert {r["player"].split(":")[0].split("@")[0] for r in rows} == {"az", "policy"}
    picture = plot.read_text()
    assert picture.startswith("<svg") and "Test_L1_R3 (beginning, hard) (network)" in picture
    text = run_here("judge.py", "--game", "connect4", "--pons", str(tmp_path), "--run", str(run_dir), "--sims", "4",
                    "--snapshots", "1")
    assert text.returncode == 0 and "search: 4 simulations a move" in text.stdout
    for args, message in ((["--run", str(run_dir)], "add --pons FOLDER"),
                          (["--pons", str(tmp_path), "--plot", str(plot)], "--plot goes with --run"),
                          (["--pons", str(tmp_path), "--run", str(tmp_path)], "no saved networks")):
        bad = run_here("judge.py", "--game", "connect4", *args)
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
