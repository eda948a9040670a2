"""scripts/train.py as a user runs it: a tiny run, its folder, resume, Ctrl-C, bad options (kill -9 and
resume, and a resumed run equal to one never stopped: tests/test_crash.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from azero.config import load_config
from commands import run_here
from runs import ctrl_c_default, tiny_args

REPO = Path(__file__).resolve().parent.parent
TINY = tiny_args()


def train(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "train.py"), *args], capture_output=True,
                          text=True, timeout=timeout)


def metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def latest(run_dir: Path) -> dict:
    return torch.load(run_dir / "latest.pt", weights_only=True)


def test_a_tiny_run_writes_its_folder_and_resumes_where_it_stopped(tmp_path):
    run_dir = tmp_path / "run"
    out = train(*TINY, "--iterations", "2", "--run-dir", str(run_dir))
    assert out.returncode == 0, out.stderr
    assert "new run in" in out.stdout and "iteration 2" in out.stdout
    for name in ("config.toml", "provenance.json", "latest.pt", "metrics.jsonl"):
        assert (run_dir / name).exists(), name
    assert (run_dir / "checkpoints" / "iter-000002.pt").exists()
    assert list((run_dir / "tb").glob("events.out.tfevents.*"))
    assert len(list((run_dir / "replay").glob("iter-*.pt"))) == 2
    provenance = json.loads((run_dir / "provenance.json").read_text())
    assert provenance["git_commit"] and provenance["command"]
    records = metrics(run_dir)
    assert [r["iteration"] for r in records] == [1, 2]
    assert "eval/elo" in records[-1], "the last iteration of a run is evaluated"
    assert {"losses/policy", "losses/value", "losses/total", "losses/policy_entropy", "charts/learning_rate",
            "charts/buffer_size", "charts/selfplay_positions_per_s", "selfplay/game_length",
            "selfplay/first_player_win_rate", "selfplay/draw_rate"} <= set(records[-1])
    for record in records:  # what else the machine did: the run's own cores and the load beside them
        assert 0 < record["system/process_cores"] <= (os.cpu_count() or 1) + 0.1
        assert record["system/load_average"] >= 0
    first = latest(run_dir)
    assert first["iteration"] == 2 and first["game"] == "tictactoe"
    assert "model" not in first["trainer"]  # no weight average: the played weights are the trained ones

    # the command that started the run, typed again with a longer budget, continues it
    out = train(*TINY, "--iterations", "3", "--run-dir", str(run_dir))
    assert out.returncode == 0, out.stderr
    assert f"resuming {run_dir} at iteration 2" in out.stdout
    buffer_before = records[-1]["charts/buffer_size"]
    assert f"buffer {buffer_before}" in out.stdout, "the replay buffer comes back"
    records = metrics(run_dir)
    assert [r["iteration"] for r in records] == [1, 2, 3]
    assert records[-1]["charts/gradient_steps"] > records[1]["charts/gradient_steps"]
    assert latest(run_dir)["trainer"]["steps"] == records[-1]["charts/gradient_steps"]
    assert latest(run_dir)["positions"] > first["positions"]
    # a different one is refused key by key, and says how to continue the run
    changed = [*TINY, "--set", "search.simulations=16", "--set", "network.channels=16", "--seed", "3"]
    out = train(*changed, "--iterations", "4", "--run-dir", str(run_dir))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "search.simulations: the run has 8, the command gives 16" in out.stderr
    assert "network.channels: the run has 32, the command gives 16" in out.stderr
    assert "run.seed: the run has 0, the command gives 3" in out.stderr
    assert f"python scripts/train.py --run-dir {run_dir}" in out.stderr
    out = train("--set", "search.simulations=16", "--iterations", "4", "--run-dir", str(run_dir))
    assert out.returncode == 2 and "come with --game or --config" in out.stderr
    assert latest(run_dir)["iteration"] == 3 and len(metrics(run_dir)) == 3
    # its latest.pt gone (moved away, or left out of a copy): refused, and nothing deleted or rewritten
    (run_dir / "latest.pt").rename(tmp_path / "kept.pt")
    before = {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file()}
    out = run_here("train.py", "--iterations", "4", "--run-dir", str(run_dir))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert f"{run_dir / 'latest.pt'} is missing, but {run_dir} holds the run's later files (up to iteration 3)" \
        in out.stderr
    assert {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file()} == before


def test_evaluations_keep_to_their_share_of_the_run(tmp_path):
    # every iteration is due, but after the first evaluation the run has spent more than 0.1% of its
    # time on them: the next are skipped, except the last; a resumed run remembers what it spent
    run_dir = tmp_path / "run"
    sparse = tiny_args({"evaluation.every": 1, "evaluation.max_share": 0.001})
    assert train(*sparse, "--iterations", "4", "--run-dir", str(run_dir)).returncode == 0
    records = metrics(run_dir)
    assert [r["iteration"] for r in records if "eval/elo" in r] == [1, 4]
    spent = latest(run_dir)["evaluation_seconds"]
    assert spent >= sum(r.get("charts/evaluation_seconds", 0.0) for r in records) > 0
    assert records[-1]["charts/evaluation_share"] == pytest.approx(spent / (records[-1]["charts/hours"] * 3600))
    assert train("--iterations", "6", "--run-dir", str(run_dir), "--no-progress").returncode == 0
    assert [r["iteration"] for r in metrics(run_dir) if "eval/elo" in r] == [1, 4, 6]
    # a checkpoint from before the time was saved: the metrics' evaluation times stand in for it
    older = latest(run_dir)
    del older["evaluation_seconds"]
    torch.save(older, run_dir / "latest.pt")
    assert train("--iterations", "7", "--run-dir", str(run_dir), "--no-progress").returncode == 0
    records = metrics(run_dir)
    assert [r["iteration"] for r in records if "eval/elo" in r] == [1, 4, 6, 7]
    total = sum(r.get("charts/evaluation_seconds", 0.0) for r in records)
    assert total <= latest(run_dir)["evaluation_seconds"] < total + 1.0


def test_an_evaluation_against_a_deterministic_rung_plays_more_than_two_games(monkeypatch):
    # the network searches without noise, and so does a zoo network at a fixed budget: without
    # random openings, a match of eight games between them would be two games four times over
    import azero.ladder
    from azero.checkpoint import load_checkpoint, network_from_checkpoint, search_settings
    from azero.zoo import checkpoint_path

    data = load_checkpoint(checkpoint_path("tictactoe"))
    game, net = network_from_checkpoint(data)
    matches, play_match = [], azero.ladder.play_match

    def recorded(*args, **kwargs):
        matches.append(play_match(*args, **kwargs, record_moves=True))
        return matches[-1]

    monkeypatch.setattr(azero.ladder, "play_match", recorded)
    config = load_config(game="tictactoe", overrides=["evaluation.ladder=zoo:tictactoe", "evaluation.games=8",
                                                     "evaluation.previous_games=8", "evaluation.simulations=32"])
    evaluator = azero.ladder.LadderEvaluator(game, config.evaluation, settings=search_settings(data))
    evaluator.evaluate(net, 1, progress=False)
    evaluator.evaluate(net, 2, progress=False)
    assert [len(match.records) for match in matches] == [8, 8, 8]  # the rung, the rung, the previous network
    for match in matches:
        assert match.opening_plies == 2 and match.openings == 4
        assert len({tuple(record.actions) for record in match.records}) > 2


def test_each_ladder_rung_has_its_own_readable_metric_name():
    from azero.ladder import rung_tag

    gnugo = "gtp:gnugo --mode gtp --level {} --chinese-rules --positional-superko --capture-all-dead"
    assert rung_tag(gnugo.format(1)) != rung_tag(gnugo.format(10))  # two levels were one curve
    assert rung_tag("pbrain:/home/me/rapfi/build/pbrain-rapfi:nodes=250,turn=0") == "pbrain_rapfi_nodes_250_turn_0"
    assert rung_tag("uct:1000") == "uct1000" and rung_tag("random") == "random"  # as TensorBoard knows them


def test_a_long_run_in_sittings_keeps_its_total_budget_and_its_plot_marks_each_resume(tmp_path):
    """--hours is the run's training time in all sittings, kept with the run; --minutes one sitting's."""
    from azero.plot import elo_svg, read_elo, read_sittings

    run_dir = tmp_path / "run"
    out = train(*TINY, "--hours", "1e-6", "--run-dir", str(run_dir))  # spent by the first iteration
    assert out.returncode == 0, out.stderr
    assert [r["iteration"] for r in metrics(run_dir)] == [1] and latest(run_dir)["budget_hours"] == 1e-6
    out = train("--run-dir", str(run_dir))  # the budget came along: nothing to do
    assert out.returncode == 0 and "budget of 1e-06 hours is spent" in out.stdout, out.stdout + out.stderr
    assert len(metrics(run_dir)) == 1
    out = train("--run-dir", str(run_dir), "--hours", "5", "--iterations", "3")  # a larger budget: on it goes
    assert out.returncode == 0 and "sitting 2" in out.stdout, out.stderr  # (the one that trained nothing left no mark)
    records = metrics(run_dir)
    assert [(r["iteration"], r["charts/sitting"]) for r in records] == [(1, 1), (2, 2), (3, 2)]
    assert latest(run_dir)["budget_hours"] == 5 and latest(run_dir)["sittings"] == 2
    assert read_sittings(run_dir) == [records[0]["charts/hours"] * 60]
    svg = elo_svg(read_elo(run_dir), "run", sittings=read_sittings(run_dir))
    assert svg.count("<title>resumed</title>") == 1 and "training minutes" in svg
    long_run = [(minutes, 10.0, 0.0, 20.0) for minutes in (60.0, 600.0)]
    assert "training hours" in elo_svg(long_run, "a day", sittings=[170.0])
    bad = run_here("train.py", "--run-dir", str(run_dir), "--hours", "0")
    assert bad.returncode == 2 and "--hours must be above 0" in bad.stderr


def test_a_new_run_starts_from_another_runs_network_and_says_so(tmp_path):
    """--init-from: the network's weights (not the optimizer, buffer or clock) of another run."""
    first, second = tmp_path / "first", tmp_path / "second"
    out = train(*TINY, "--iterations", "1", "--run-dir", str(first))
    assert out.returncode == 0, out.stderr
    untrained = tiny_args({"train.min_replay": 10000})  # (its first iteration trains nothing)
    out = train(*untrained, "--iterations", "1", "--run-dir", str(second), "--init-from", str(first / "latest.pt"))
    assert out.returncode == 0, out.stderr
    assert f"its network from {first / 'latest.pt'} (iteration 1 of tictactoe)" in out.stdout
    theirs, ours = latest(first), latest(second)
    assert all(torch.equal(theirs["model"][name], ours["model"][name]) for name in theirs["model"])
    assert ours["iteration"] == 1 and ours["trainer"]["steps"] == 0
    origin = json.loads((second / "provenance.json").read_text())["init_from"]
    assert origin["iteration"] == 1 and origin["game"] == "tictactoe"
    # the checkpoints say what the network learnt on: the first run's stage, then this run's,
    # which a resumed sitting carries on (checkpoint.training_stages)
    out = train("--run-dir", str(second), "--iterations", "2")
    assert out.returncode == 0, out.stderr
    stages = latest(second)["trained_on"]
    assert [(s["game"], s["iterations"]) for s in stages] == [("tictactoe", 1), ("tictactoe", 2)]
    assert stages[0] == latest(first)["trained_on"][0] and all(s["hours"] > 0 for s in stages)
    snapshot = torch.load(second / "checkpoints" / "iter-000002.pt", weights_only=True)
    assert snapshot["trained_on"] == stages
    # its Elo plot starts after the first run's time, shaded and named; --own-time leaves it out
    from azero.plot import read_earlier_stages

    assert read_earlier_stages(second) == [("tictactoe", pytest.approx(stages[0]["hours"] * 60, abs=0.01))]
    for flags, shaded in (((), True), (("--own-time",), False)):
        out = run_here("plot_elo.py", str(second), "-o", str(tmp_path / "elo.svg"), *flags)
        assert out.returncode == 0, out.stderr
        svg = (tmp_path / "elo.svg").read_text()
        assert ("earlier stage: tictactoe" in svg) is shaded and ("the earlier stages first" in svg) is shaded
    # refusals before any folder is made: a run to resume, another game, another network
    for args, message in (
        ([*TINY, "--run-dir", str(second)], "--init-from starts a new run"),
        ([*tiny_args(game="connect4"), "--run-dir", str(tmp_path / "c4")], "a network of tictactoe; this run plays"),
        ([*tiny_args({"network.blocks": 1}), "--run-dir", str(tmp_path / "small")], "network.blocks = "),
    ):
        bad = run_here("train.py", *args, "--init-from", str(first / "latest.pt"))
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    assert not (tmp_path / "c4").exists() and not (tmp_path / "small").exists()


def test_ctrl_c_stops_cleanly_and_says_how_to_continue(tmp_path):
    run_dir = tmp_path / "run"
    process = subprocess.Popen([sys.executable, str(REPO / "scripts" / "train.py"), *TINY, "--run-dir", str(run_dir)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_default)
    deadline = time.time() + 240
    while time.time() < deadline and not (run_dir / "latest.pt").exists():
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr  # 128 + SIGINT: a stop, not a finish
    assert "Continue with: python scripts/train.py --run-dir" in stdout and "Traceback" not in stderr


def test_output_into_a_closed_pipe_ends_quietly(tmp_path):
    # `train.py --help-config | head -3`: the reader goes away; here it is gone before the first line is written
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        out = subprocess.run([sys.executable, str(REPO / "scripts" / "train.py"), "--help-config"], stdout=write_end,
                             stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert out.returncode == 1 and "Traceback" not in out.stderr and "error" not in out.stderr.lower(), out.stderr
    # a training run whose reader goes away after its first line: it stops as on Ctrl-C, without calling
    # the broken pipe a disk that cannot be written
    run_dir = tmp_path / "run"
    process = subprocess.Popen([sys.executable, str(REPO / "scripts" / "train.py"), *TINY, "--iterations", "3",
                                "--run-dir", str(run_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert process.stdout.readline().startswith("new run in")
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=240) == 1 and "Traceback" not in stderr and "error" not in stderr.lower(), stderr
    assert run_dir.is_dir()  # what it saved stays, to continue


def test_bad_options_are_one_line_errors_and_leave_no_folder(tmp_path):
    # Two runs that fail in training are processes of their own, side by side; the refusals
    # before any training run meanwhile in this process (tests/commands.py: no torch import each).
    diverging = [*TINY, "--set", "train.learning_rate=1e6", "--set", "train.grad_clip=0", "--iterations", "1",
                 "--run-dir"]
    mine = tmp_path / "mine"  # a folder the user made for the run stays when the run fails; only what it wrote goes
    mine.mkdir()
    with ThreadPoolExecutor(max_workers=2) as pool:
        diverged = [pool.submit(train, *diverging, str(tmp_path / "never-trained")),
                    pool.submit(train, *diverging, str(mine))]
        cases = [
            (["--game", "tictactoe", "--set", "search.sims=4"], "unknown key search.sims"),
            (["--game", "tictactoe", "--set", "train.optimizer=adam"], "choose one of: adamw, sgd"),
            (["--game", "chess"], "no preset for game 'chess'"),
            (["--config", str(tmp_path / "missing.toml")], "config file not found"),
            (["--config", str(tmp_path)], "is a folder, not a config file"),
            (["--game", "tictactoe", "--seed", "-1"], "run.seed=-1 is out of range; allowed: 0..4294967295"),
            (["--game", "tictactoe", "--set", "train.learning_rate=inf"], "not a finite number"),
            (["--game", "tictactoe", "--set", "search.noise_fraction=2"], "out of range; allowed: 0..1"),
            # a ladder rung is made before the folder is, not at the first evaluation
            (["--game", "tictactoe", "--set", "evaluation.ladder=uct:100:bogus=1"],
             "evaluation.ladder rung 'uct:100:bogus=1': uct: unknown option bogus"),
            (["--game", "tictactoe", "--set", "selfplay.games=65536", "--set", "search.simulations=1000000"],
             "selfplay.games=65536 with search.simulations=1000000: this search needs"),
            # the evaluation's search too, which failed at the first evaluation, and at every resume
            (["--game", "tictactoe", "--set", "evaluation.simulations=200000000"],
             "evaluation.simulations=200000000 is out of range; allowed: 1..100000000"),
            (["--game", "tictactoe", "--set", "evaluation.simulations=90000000"],
             "evaluation.games=40 with evaluation.simulations=90000000: this search needs"),
            # a ring that never reaches min_replay never trains (the run looked normal, untrained)
            (["--game", "tictactoe", "--set", "replay.capacity=100"],
             "train.min_replay=512 is more than replay.capacity=100: the buffer never holds that many"),
            # a ring the machine cannot hold (it is allocated whole at the start: a traceback before)
            (["--game", "tictactoe", "--set", "replay.capacity=1000000000"],
             "replay.capacity=1,000,000,000 needs"),
            # config files that cannot be read: one line, not a traceback (or a wait for ever on a pipe)
            (["--config", str(tmp_path / "a-fifo")], "is not a config file: it is not a regular file"),
            (["--config", str(tmp_path / ("x" * 300))], "cannot read the config file"),
            (["--config", str(tmp_path / "big.toml")], "is over 1,048,576 bytes: not a config file"),
            (["--config", str(tmp_path / "deep.toml")], "not valid TOML: arrays or tables nested too deeply"),
            # sizes that overflowed or allocated without bound at the start, or in the first iteration
            (["--game", "tictactoe", "--set", f"run.threads={10 ** 20}"], "out of range; allowed: 0..1024"),
            (["--game", "tictactoe", "--set", "network.channels=1000000"], "out of range; allowed: 1..65536"),
            (["--game", "tictactoe", "--set", "network.channels=60000"], "training needs about"),
            (["--game", "tictactoe", "--set", "train.batch_size=1048576"], "training needs about"),
            (["--game", "tictactoe", "--set", "selfplay.positions_per_iteration=1000000000"],
             "for one iteration's samples"),
            (["--game", "tictactoe", "--set", "train.sample_reuse=1e300"], "out of range; allowed: 0..1000"),
        ]
        os.mkfifo(tmp_path / "a-fifo")
        (tmp_path / "big.toml").write_text("# " + "x" * (1 << 20) + "\n")
        (tmp_path / "deep.toml").write_text("[run]\nx = " + "[" * 3000 + "]" * 3000 + "\n")  # tomllib recursed
        for number, (args, message) in enumerate(cases):
            run_dir = tmp_path / f"never-{number}"
            out = run_here("train.py", *args, "--iterations", "1", "--run-dir", str(run_dir))
            assert out.returncode == 2, out.stdout
            assert message in out.stderr and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
            assert not run_dir.exists()
        out = run_here("train.py", "--iterations", "1")
        assert out.returncode == 2 and "--game" in out.stderr
        run_dir = tmp_path / "never-0"
        out = run_here("train.py", "--game", "tictactoe", "--device", "tpu", "--run-dir", str(run_dir))
        assert out.returncode == 2 and "argument --device: 'tpu' is not a torch device" in out.stderr
        if not torch.cuda.is_available():  # a device the config names but this machine lacks: checked before the folder
            out = run_here("train.py", "--game", "tictactoe", "--set", "run.device=cuda", "--run-dir", str(run_dir))
            assert out.returncode == 2 and "run.device=cuda: no CUDA device is available here" in out.stderr
        assert not run_dir.exists()
        for budget, words in ((["--minutes", "nan"], "--minutes must be above 0"),
                              (["--minutes", "1e308"], "at most 1,000,000"),  # (trained forever before)
                              (["--iterations", str(10 ** 30)], "--iterations must be in 1..1,000,000,000"),
                              (["--ray", "--actors", "100000"], "--actors must be in 1..1,024")):
            out = run_here("train.py", "--game", "tictactoe", *budget, "--run-dir", str(run_dir))
            assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, out.stderr
        assert not run_dir.exists()
        (tmp_path / "a-file").write_text("")
        out = run_here("train.py", "--game", "tictactoe", "--run-dir", str(tmp_path / "a-file"))
        assert out.returncode == 2 and out.stderr == f"error: --run-dir {tmp_path / 'a-file'} is a file, not a folder\n"
        damaged = tmp_path / "damaged"
        damaged.mkdir()
        (damaged / "config.toml").write_text("")  # a run folder whose config a crash of the disk emptied
        out = run_here("train.py", "--run-dir", str(damaged))
        assert out.returncode == 2 and f"{damaged / 'config.toml'} is damaged" in out.stderr
        assert sorted(p.name for p in damaged.iterdir()) == ["config.toml"]
        # a run started on a machine with far more memory, resumed here (the ring, allocated whole: a traceback)
        bigger = tmp_path / "bigger"
        bigger.mkdir()
        (bigger / "config.toml").write_text(load_config(game="tictactoe",
                                                        overrides=["replay.capacity=1000000000"]).to_toml())
        out = run_here("train.py", "--run-dir", str(bigger))
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert out.stderr.startswith(f"error: {bigger} cannot be resumed on this machine: "
                                     "replay.capacity=1,000,000,000 needs"), out.stderr
        assert sorted(p.name for p in bigger.iterdir()) == ["config.toml"]
        diverged = [future.result() for future in diverged]
    # a run that fails before its first checkpoint takes its new folder with it
    for out in diverged:
        assert out.returncode == 2 and "training diverged in iteration 1: the loss of gradient step " in out.stderr
        assert " is nan; no iteration had finished, so nothing is kept" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "never-trained").exists() and mine.is_dir() and not any(mine.iterdir())


def test_help_config_shows_the_values_a_preset_trains_with(capsys):
    from azero.cli.train import main

    assert main(["--help-config"]) == 0
    plain = capsys.readouterr().out
    assert "  search_value_weight = 0.0  #" in plain and "(default:" not in plain
    assert main(["--game", "connect4", "--set", "search.simulations=50", "--help-config"]) == 0
    shown = capsys.readouterr().out.splitlines()
    line = next(text for text in shown if text.startswith("  search_value_weight = "))
    assert line.startswith("  search_value_weight = 0.5  #") and line.endswith("(default: 0.0)")
    assert any(text.startswith("  simulations = 50  #") and text.endswith("(default: 64)") for text in shown)
    assert any(text.startswith("  blocks = 4  #") for text in shown)  # the preset's network
