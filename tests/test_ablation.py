"""The ablation runner: arms and plans read and checked, the table's cells, the arms' plot, and scripts/ablate.py
end to end on two tiny tic-tac-toe arms, including an ablation stopped in the middle of an arm and continued."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from azero.ablation import Arm, make_plan
from azero.ablation.report import cell
from azero.ablation.runner import display
from azero.config import ConfigError, load_config
from azero.errors import UserError
from azero.plot import ARM_COLOURS, arms_svg, nice_ticks
from commands import run_here
from runs import tiny_sets

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"

# every arm: a tiny network, a few dozen positions an iteration, an evaluation against `random` each iteration
TINY = [*tiny_sets({"selfplay.positions_per_iteration": 64, "search.simulations": 4, "train.min_replay": 32,
                    "network.blocks": 1, "network.channels": 8, "network.value_hidden": 8, "evaluation.every": 1,
                    "evaluation.max_share": 1, "evaluation.games": 2, "evaluation.previous_games": 0,
                    "evaluation.ladder": "random"}),
        "--sims", "4"]


def plan(**changes):
    arguments = dict(minutes=None, iterations=1, overrides=[], yardsticks=None, games=10, simulations=None)
    arguments.update(changes)
    arms = arguments.pop("arms", ["base:", "wide:network.channels=48"])
    return make_plan(arguments.pop("preset", "tictactoe"), arms, arguments.pop("seeds", [0, 1]), **arguments)


def test_arms_read_their_overrides_even_with_commas_inside_values():
    assert Arm.parse("base:") == Arm("base", ())
    arm = Arm.parse("gumbel:search.simulations=16, evaluation.ladder=[100, 300],search.c_init=2.0")
    assert arm.overrides == ("search.simulations=16", "evaluation.ladder=[100, 300]", "search.c_init=2.0")
    assert Arm.parse(arm.text()) == arm
    for bad, message in (("base", "write NAME:KEY=VALUE"), ("a/b:search.simulations=3", "letters, digits")):
        with pytest.raises(UserError, match=message):
            Arm.parse(bad)


def test_a_plan_is_checked_before_anything_runs():
    checked = plan()
    assert checked.yardsticks == ["judge:min_plies=0,max_plies=7", "perfect"]  # the preset's
    assert checked.simulations == 32  # the preset's evaluation.simulations
    assert [(arm.name, seed) for arm, seed in checked.runs()] == [("base", 0), ("wide", 0), ("base", 1), ("wide", 1)]
    with pytest.raises(ConfigError, match="unknown key search.sims"):
        plan(arms=["base:", "bad:search.sims=3"])
    with pytest.raises(UserError, match="neither judge"):
        plan(yardsticks=["grandmaster:3"])
    with pytest.raises(UserError, match="judge: option positions"):
        plan(yardsticks=["judge:positions=none"])
    with pytest.raises(UserError, match="one training budget"):
        plan(minutes=5)
    with pytest.raises(UserError, match="names must differ"):
        plan(arms=["base:", "base:search.simulations=3"])
    with pytest.raises(UserError, match="no yardstick for preset 'nim'"):
        plan(preset="nim")
    with pytest.raises(UserError, match="--opening-plies must be at least 0"):
        plan(opening_plies=-1)
    with pytest.raises(UserError, match="and at most 1,000"):
        plan(opening_plies=10**20)  # (a tensor of that many plies a game cannot even be allocated)
    with pytest.raises(UserError, match="evaluation.opening_plies"):
        load_config(game="tictactoe", overrides=[f"evaluation.opening_plies={10**20}"])
    with pytest.raises(UserError, match=r"--games must be in 2\.\.1,000,000"):
        plan(games=10**12)  # a mistyped count is refused before any run trains
    # what would fail only after a run has trained: a run's config, a yardstick's player, the budget
    with pytest.raises(UserError, match="--minutes must be above 0 and at most 1,000,000"):
        plan(minutes=float("nan"), iterations=None)
    with pytest.raises(UserError, match="at most 1,000,000 \\(train.py's limit\\)"):
        plan(minutes=2e6, iterations=None)  # train.py would refuse each run, after the plan was saved
    with pytest.raises(UserError, match=r"--iterations must be in 1..1,000,000,000"):
        plan(iterations=2 * 10**9)
    with pytest.raises(UserError, match=r"--sims must be in 1..100,000,000"):
        plan(simulations=0)
    with pytest.raises(UserError, match=r"--sims must be in 1..100,000,000"):
        plan(simulations=200_000_000)
    # the judge searches its 300 positions at once: a budget whose trees cannot fit fails now
    with pytest.raises(UserError, match=r"--sims 20000000: this search needs .*\(300 trees of"):
        plan(simulations=20_000_000, yardsticks=["judge"])
    with pytest.raises(UserError, match=r"run.seed=-1 is out of range"):
        plan(seeds=[-1])
    with pytest.raises(UserError, match="run.seed=5: every arm plays the same game .* seeds from --seeds"):
        plan(arms=["base:", "fixed:run.seed=5"])
    with pytest.raises(UserError, match=r"--arm 'far:evaluation.ladder=uct:10:depth=3': evaluation.ladder rung "
                                        r"'uct:10:depth=3': uct: unknown option depth"):
        plan(arms=["base:", "far:evaluation.ladder=uct:10:depth=3"])
    with pytest.raises(UserError, match=r"yardstick 'uct:-5': uct: iterations=-5 is out of range"):
        plan(yardsticks=["uct:-5"])
    with pytest.raises(UserError, match=r"yardstick 'az:nowhere.pt': checkpoint not found"):
        plan(yardsticks=["az:nowhere.pt"])
    with pytest.raises(UserError, match=r"yardstick 'judge': gomoku:size=8,k=5.* is too large to solve exactly"):
        plan(preset="gomoku", yardsticks=["judge"])
    with pytest.raises(UserError, match="9 random opening moves cannot avoid finishing a game of tictactoe"):
        plan(opening_plies=9)


def test_matches_against_engines_without_randomness_open_with_random_plies(tmp_path):
    from azero.ablation import Ablation, Plan
    from azero.ablation.plan import DEFAULT_YARDSTICKS, GNUGO

    # (yardsticks that need no engine: a plan makes each yardstick's player once, to check it)
    go = plan(preset="go", arms=["base:"], seeds=[0], yardsticks=["random"])
    assert plan(preset="othello", yardsticks=["random"]).opening_plies == 4 and plan().opening_plies == 0
    assert go.opening_plies == 2 and DEFAULT_YARDSTICKS["go"][-1] == GNUGO.format(level=10)
    ablation = Ablation(tmp_path / "go", go)
    ablation.run_dir(go.arms[0], 0).mkdir(parents=True)
    (ablation.run_dir(go.arms[0], 0) / "config.toml").write_text('[game]\nspec = "go:size=7,komi=7.5"\n')
    command = ablation.yardstick_command(go.arms[0], 0, GNUGO.format(level=10))
    assert command[command.index("--opening-plies") + 1] == "2" and "gnugo" in command[command.index("--b") + 1]
    old = go.to_dict()
    del old["opening_plies"]  # a plan saved before the option: its matches had no random opening
    assert Plan.from_dict(old).opening_plies == 0 and "opening_plies" in go.extends(Plan.from_dict(old))


def test_a_plan_may_grow_by_arms_and_seeds_only():
    saved = plan()
    assert plan().extends(saved) is None
    grown = plan(arms=["base:", "wide:network.channels=48", "deep:network.blocks=3"], seeds=[0, 1, 2])
    assert grown.extends(saved) is None
    assert "iterations" in plan(iterations=2).extends(saved)
    assert "arm wide" in plan(arms=["base:", "wide:network.channels=40"]).extends(saved)
    assert "seeds" in plan(seeds=[1]).extends(saved)
    # the first arm is every head-to-head match's opponent: the arms keep their order
    assert "the arms are base, wide there" in plan(arms=["wide:network.channels=48", "base:"]).extends(saved)


def test_a_damaged_state_file_or_an_out_that_is_a_file_is_one_clear_error(tmp_path):
    from azero.ablation import Ablation

    folder = tmp_path / "out"
    Ablation(folder, plan()).save()
    text = (folder / "ablation.json").read_text()
    state = json.loads(text)
    # valid JSON of the right outline, with values of the wrong type (a traceback when continued, before)
    wrong = [{**state, "plan": {**state["plan"], "seeds": 5}}, {**state, "plan": {**state["plan"], "games": "40"}},
             {**state, "runs": {"base-seed0": None}}, {**state, "runs": {"base-seed0": {"trained": 1, "results": {}}}},
             {**state, "runs": {"base-seed0": {"trained": True, "results": {"uct:100": [0.5]}}}},
             {**state, "commands": [1]},
             # an engine's result whose counts are not counts (a traceback in the report, before)
             *({**state, "runs": {"base-seed0": {"trained": True, "results": {"uct:100": result}}}}
               for result in ({"a_wins": "3", "draws": 0, "b_wins": 1}, {"a_wins": 1, "draws": 0},
                              {"a_wins": 0, "draws": 0, "b_wins": 0}, {"a_wins": True, "draws": 0, "b_wins": 1},
                              {"a_wins": -1, "draws": 2, "b_wins": 1})),
             {**state, "runs": {"base-seed0": {"trained": True, "results": {"judge": {
                 "kept": 5, "positions": 4, "kept_decisive": 0, "decisive": 0}}}}},
             {**state, "runs": {"base-seed0": {"trained": True, "results": {}, "head_to_head": {"a_wins": 1.5}}}}]
    for damage in (text[:100], "", "[1, 2]", '{"runs": {}}', text.replace('"arms"', '"arms_"'),
                   *(json.dumps(each) for each in wrong)):
        (folder / "ablation.json").write_text(damage)
        with pytest.raises(UserError, match=r"ablation.json is damaged \(.*\); restore it from a copy"):
            Ablation.open(folder)
        with pytest.raises(UserError, match="ablation.json is damaged"):
            Ablation(folder, plan())
    (tmp_path / "a-file").write_text("")
    for out in (tmp_path / "a-file", tmp_path / "a-file" / "sub"):
        with pytest.raises(UserError, match=f"--out {out}: {tmp_path / 'a-file'} is a file, not a folder"):
            Ablation(out, plan())



def test_a_full_disk_while_saving_an_ablation_is_one_line_and_keeps_the_last_save(tmp_path, monkeypatch):
    import errno

    from azero.ablation import Ablation, runner

    folder = tmp_path / "out"
    ablation = Ablation(folder, plan())
    ablation.save()
    saved = (folder / "ablation.json").read_text()

    def full(path, text, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(runner, "atomic_write_text", full)
    ablation.state["commands"].append({"command": "python scripts/judge.py ...", "exit": 0})
    with pytest.raises(UserError) as refused:
        ablation.save()
    assert str(refused.value) == (
        f"cannot write {folder / 'ablation.json'}: No space left on device; {folder} keeps what was saved before (a "
        f"result printed above is not in it). Once that is mended, continue with: python scripts/ablate.py --out "
        f"{folder}")
    assert (folder / "ablation.json").read_text() == saved


def test_head_to_head_matches_open_with_random_plies_and_may_be_added_to_a_plan(tmp_path):
    from azero.ablation import Ablation

    for games in (1, 10**12):
        with pytest.raises(UserError, match="--head-to-head is a number of games"):
            plan(head_to_head=games)
    assert plan(head_to_head=10).head_to_head_opening_plies() == 2  # two networks: never the same few games
    othello = plan(preset="othello", head_to_head=10, yardsticks=["random"])
    assert othello.head_to_head_opening_plies() == 4  # the plan's, if more
    # Connect Four has 49 openings of two plies: 100 pairs of games need a third ply
    assert plan(preset="connect4", head_to_head=200, yardsticks=["random"]).head_to_head_opening_plies() == 3
    assert plan(preset="connect4", head_to_head=90, yardsticks=["random"]).head_to_head_opening_plies() == 2
    saved = plan()
    assert plan(head_to_head=200).extends(saved) is None  # matches added to a plan that had none
    assert "head_to_head is 200 there, 100 here" in plan(head_to_head=100).extends(plan(head_to_head=200))
    assert "head_to_head is 200 there, 0 here" in plan().extends(plan(head_to_head=200))
    ablation = Ablation(tmp_path / "out", plan(head_to_head=20))
    for arm in ablation.plan.arms:
        ablation.run_dir(arm, 1).mkdir(parents=True)
        (ablation.run_dir(arm, 1) / "config.toml").write_text('[game]\nspec = "tictactoe"\n')
    wide = ablation.plan.arms[1]
    command = display(ablation.head_to_head_command(wide, 1))
    assert (f"--a az:{tmp_path / 'out' / 'wide-seed1' / 'latest.pt'}:sims=32 "
            f"--b az:{tmp_path / 'out' / 'base-seed1' / 'latest.pt'}:sims=32 --games 20 --opening-plies 2") in command
    # a frozen network as a yardstick is as deterministic as the arms': it opens the same way
    assert ablation.plan.yardstick_opening_plies("uct:1000") == 0
    assert ablation.plan.yardstick_opening_plies(" AZ:ref.pt") == 2  # spelled as the registry accepts it
    command = display(ablation.yardstick_command(wide, 1, "az:ref.pt:sims=64"))
    assert "--b az:ref.pt:sims=64 --games 10 --opening-plies 2" in command
    todo = ablation.pending()
    assert "play wide seed 0 against base seed 0 (20 games)" in todo and not any("play base" in t for t in todo)
    with pytest.raises(UserError, match="head_to_head is 20 there, 8 here"):
        ablation.add_head_to_head(8)


def test_table_cells_pool_runs():
    judged = [{"kept": 90, "positions": 100, "kept_decisive": 40, "decisive": 50},
              {"kept": 80, "positions": 100, "kept_decisive": 30, "decisive": 50}]
    assert cell("judge", judged[:1]).startswith("90.0% [82.6%, 94.5%]; decisive 80.0% [")
    pooled = cell("judge", judged)
    assert pooled.startswith("85.0% [79.4%, 89.3%]; decisive 70.0% [") and pooled.endswith("of 100")
    matches = [{"a_wins": 6, "draws": 2, "b_wins": 2}, {"a_wins": 4, "draws": 0, "b_wins": 6}]
    assert cell("uct:100", matches[:1]).startswith("70.0% [") and cell("uct:100", matches[:1]).endswith("(6-2-2)")
    assert cell("uct:100", matches).endswith("(10-2-8)") and "Elo +35 [" in cell("uct:100", matches)
    assert cell("judge", []) == "—"


def test_arms_plot_draws_every_run_in_its_arms_colour():
    base = [[(1.0, 0.0, -50.0, 50.0), (2.0, 100.0, 20.0, 180.0)], [(1.0, 10.0, -40.0, 60.0), (2.0, 90.0, 0.0, 180.0)]]
    other = [[(1.5, 200.0, 100.0, 300.0), (3.0, 400.0, 250.0, 550.0)]]
    svg = arms_svg([("base", base), ("gumbel <m=4>", other)], "c4")
    assert svg.count("<polyline") == 3 and svg.count(f'stroke="{ARM_COLOURS[0]}" stroke-width="2"') == 2
    assert f'stroke="{ARM_COLOURS[1]}" stroke-width="2"' in svg and "stroke-dasharray" in svg  # seed 2 is dashed
    assert "base (2 seeds)" in svg and "gumbel &lt;m=4&gt;" in svg and svg.count("<polygon") == 2
    with pytest.raises(UserError):
        arms_svg([("base", [[]])], "empty")
    assert nice_ticks(0, 63) == [0, 10, 20, 30, 40, 50, 60] and nice_ticks(-103, 1396)[:3] == [0, 200, 400]
    assert nice_ticks(0, 0.5) == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]


def test_plot_elo_draws_a_runs_evaluations_and_refuses_a_folder_without_any(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    records = [{"iteration": 1, "charts/hours": 0.1}, {"iteration": 2, "charts/hours": 0.2, "eval/elo": 0.0,
                                                        "eval/elo_low": -80.0, "eval/elo_high": 80.0},
               {"iteration": 3, "charts/hours": 0.5, "eval/elo": 250.0, "eval/elo_low": 150.0, "eval/elo_high": 350.0},
               {"iteration": 4, "charts/hours": 0.6, "eval/elo": "high"},  # (edited by hand: left out)
               {"iteration": 5, "charts/hours": 1e307, "eval/elo": 1.0, "eval/elo_low": -1e308,
                "eval/elo_high": 1e308},  # (finite, but its minutes overflowed the axes: left out)
               # not records the loop writes (a traceback in the plot or at a resume, before): left out
               {"iteration": 6, "charts/hours": 10**400, "eval/elo": 1, "eval/elo_low": 0, "eval/elo_high": 2},
               {"iteration": None, "charts/hours": 0.7}, {"iteration": "8", "charts/hours": 0.8},
               {"iteration": True}, {"iteration": 9, "charts/hours": [0.9]}]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records) + "not json\n")
    from azero.metrics import read_metrics

    assert [record["iteration"] for record in read_metrics(run_dir)] == [1, 2, 3, 5]  # (4: a value not a number)
    out = run_here("plot_elo.py", str(run_dir), "--title", "tiny <run> \udcff")  # (a byte that is not UTF-8)
    assert out.returncode == 0 and out.stdout.strip() == str(run_dir / "elo.svg"), out.stderr
    svg = (run_dir / "elo.svg").read_text()
    assert svg.count("<circle") == 2 and "<polygon" in svg  # the two evaluations
    assert "tiny &lt;run&gt; \\udcff" in svg  # the byte as its escape
    (tmp_path / "folder" / "metrics.jsonl").mkdir(parents=True)
    out = run_here("plot_elo.py", str(tmp_path / "folder"), "-o", str(tmp_path / "b.svg"))
    assert out.returncode == 2 and "metrics.jsonl is a folder, not a metrics file" in out.stderr, out.stderr
    assert run_here("plot_elo", str(run_dir), "-o", str(tmp_path / "a.svg")).stdout.strip() == str(tmp_path / "a.svg")
    (tmp_path / "file").write_text("")
    out = run_here("plot_elo.py", str(run_dir), "-o", str(tmp_path / "file" / "c.svg"))
    assert out.returncode == 2 and "that is a file, not a folder" in out.stderr and "Traceback" not in out.stderr
    (run_dir / "metrics.jsonl").write_text(json.dumps(records[0]) + "\n")
    out = run_here("plot_elo.py", str(run_dir), "-o", str(tmp_path / "b.svg"))
    assert out.returncode == 2 and out.stderr.strip().endswith("has no evaluations yet") and "Traceback" not in out.stderr
    out = run_here("plot_elo.py", str(tmp_path / "nowhere"), "-o", str(tmp_path / "b.svg"))
    assert out.returncode == 2 and "is " + str(tmp_path / "nowhere") + " a run folder?" in out.stderr
    out = run_here("plot_elo.py", str(tmp_path / ("x" * 300)), "-o", str(tmp_path / "b.svg"))
    assert out.returncode == 2 and "File name too long" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert not (tmp_path / "b.svg").exists()


def test_a_run_stopped_part_way_continues_for_the_minutes_it_has_not_trained(tmp_path):
    from azero.ablation import Ablation

    ablation = Ablation(tmp_path / "out", plan(minutes=10, iterations=None, overrides=["run.threads=1"]))
    arm = ablation.plan.arms[1]
    first = ablation.train_command(arm, 1)
    assert display(first) == (f"python scripts/train.py --game tictactoe --seed 1 --set run.threads=1 --set "
                              f"network.channels=48 --run-dir {tmp_path / 'out' / 'wide-seed1'} --minutes 10 "
                              "--no-progress")
    run_dir = ablation.run_dir(arm, 1)
    run_dir.mkdir(parents=True)
    (run_dir / "config.toml").write_text("[game]\nspec = \"tictactoe\"\n")
    # a stop in the middle of an append leaves the last line cut short: that iteration was not saved
    (run_dir / "metrics.jsonl").write_text(json.dumps({"iteration": 7, "charts/hours": 0.05}) + "\n"
                                           + '{"iteration": 8, "charts/ho')
    again = display(ablation.train_command(arm, 1))
    assert again.endswith(f"--run-dir {run_dir} --minutes 7 --no-progress") and "--set" not in again
    assert not ablation.trained_enough(arm, 1)  # (no latest.pt: nothing was saved)


def test_the_report_says_what_else_ran_beside_each_run(tmp_path):
    from azero.ablation import Ablation
    from azero.ablation.report import conditions, write_report

    ablation = Ablation(tmp_path / "out", plan(seeds=[0]))
    base, wide = ablation.plan.arms
    quiet = [{"iteration": i, "system/process_cores": 1.9, "system/load_average": 2.0} for i in range(1, 6)]
    busy = [{"iteration": i, "system/process_cores": 1.5, "system/load_average": load}
            for i, load in enumerate([2.0, 3.0, 3.4, 1.8], 1)]
    for arm, records in ((base, quiet), (wide, busy)):
        run_dir = ablation.run_dir(arm, 0)
        run_dir.mkdir(parents=True)
        (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    lines = conditions(ablation)
    assert lines[0] == ("- `base` seed 0: the run kept 1.90 cores busy (median of 5 iterations); the machine's load "
                        "beside it +0.10 (median), over half a core more in 0 of 5 iterations (max +0.10)")
    assert lines[1].startswith("- `wide` seed 0: the run kept 1.50 cores busy (median of 4 iterations)")
    assert "+1.50 (median), over half a core more in 2 of 4 iterations (max +1.90)" in lines[1]
    assert "\n".join(lines) in write_report(ablation).read_text()
    # runs from before train.py recorded the load get no line, and no section without any
    (ablation.run_dir(base, 0) / "metrics.jsonl").write_text(json.dumps({"iteration": 1}) + "\n")
    (ablation.run_dir(wide, 0) / "metrics.jsonl").unlink()
    assert conditions(ablation) == [] and "What else the machine did" not in write_report(ablation).read_text()


def test_an_ablation_stopped_inside_an_arm_continues_and_makes_a_table_a_plot_and_its_commands(tmp_path):
    out = tmp_path / "ablation"
    args = ["--game", "tictactoe", "--iterations", "4", "--arm", "first:", "--arm", "second:network.channels=6",
            *TINY, "--yardstick", "judge:positions=40,min_plies=0,max_plies=6", "--yardstick", "random",
            "--games", "4", "--out", str(out)]
    process = subprocess.Popen([sys.executable, str(SCRIPTS / "ablate.py"), *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    second = out / "second-seed0" / "latest.pt"
    deadline = time.monotonic() + 600
    while not second.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)  # the ablation alone: it stops the training in progress
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 143 and "Traceback" not in stderr, stderr  # 128 + SIGTERM: stopped, not done
    assert f"Continue with: python scripts/ablate.py --out {out}" in stdout
    before = [line[2:] for line in stdout.splitlines() if line.startswith("$ ")]
    assert len(before) == 4 and all(c.startswith("python ") for c in before)  # first: train, 2 measures; second
    assert "scripts/judge.py --game tictactoe --player az:" in before[1] and "--b random --games 4" in before[2]
    assert "--set network.channels=6" in before[3] and f"--run-dir {out / 'second-seed0'}" in before[3]
    state = json.loads((out / "ablation.json").read_text())
    assert state["runs"]["first-seed0"]["trained"] and state["runs"]["first-seed0"]["results"]
    assert not state["runs"]["second-seed0"]["trained"] and state["commands"][-1]["exit"] == "interrupted"
    stopped_at = max(json.loads(line)["iteration"]
                     for line in (out / "second-seed0" / "metrics.jsonl").read_text().splitlines())
    assert 1 <= stopped_at < 4

    resumed = run_here("ablate.py", "--out", str(out))
    assert resumed.returncode == 0, resumed.stderr
    after = [line[2:] for line in resumed.stdout.splitlines() if line.startswith("$ ")]
    assert len(after) == 3 and "--run-dir" in after[0] and "--set" not in after[0]  # its own config
    assert "first-seed0" not in resumed.stdout  # the finished arm is not run again
    assert f"resuming {out / 'second-seed0'} at iteration {stopped_at}" in resumed.stdout
    records = [json.loads(line) for line in (out / "second-seed0" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == list(range(1, 5))
    state = json.loads((out / "ablation.json").read_text())
    assert [entry["command"] for entry in state["commands"]] == before + after
    for run in ("first-seed0", "second-seed0"):
        assert state["runs"][run]["trained"] and (out / run / "latest.pt").exists()
        judged = state["runs"][run]["results"]["judge:positions=40,min_plies=0,max_plies=6"]
        assert judged["positions"] == 40 and 0 <= judged["kept"] <= 40
        assert state["runs"][run]["results"]["random"]["games"] == 4
    table = (out / "ablation.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| first |") or line.startswith("| second |")]
    assert len(rows) == 2 and all(re.search(r"\d+\.\d% \[\d+\.\d%, \d+\.\d%\]", row) for row in rows)
    assert "| first | 0 | 4 |" in table and "| second | 0 | 4 |" in table and "# interrupted" in table
    assert "4 iterations per seed" in table and "![Elo against training minutes, by arm](elo.svg)" in table
    assert before[0] in table
    svg = (out / "elo.svg").read_text()
    assert svg.count("<polyline") == 2 and ">first</text>" in svg and ">second</text>" in svg
    again = run_here("ablate.py", "--out", str(out))  # all done: nothing runs again
    assert again.returncode == 0 and "0 steps left" in again.stdout and "$ " not in again.stdout
    longer = list(args)
    longer[longer.index("--iterations") + 1] = "5"
    other = run_here("ablate.py", *longer)
    assert other.returncode == 2 and "holds another ablation (iterations is 4 there, 5 here)" in other.stderr

    # a match added afterwards: one, second against first
    versus = run_here("ablate.py", "--out", str(out), "--head-to-head", "4")
    assert versus.returncode == 0, versus.stderr
    match = [line[2:] for line in versus.stdout.splitlines() if line.startswith("$ ")]
    assert len(match) == 1 and f"--a az:{out / 'second-seed0' / 'latest.pt'}:sims=4" in match[0]
    assert f"--b az:{out / 'first-seed0' / 'latest.pt'}:sims=4 --games 4 --opening-plies 2" in match[0]
    state = json.loads((out / "ablation.json").read_text())
    assert state["plan"]["head_to_head"] == 4 and state["runs"]["second-seed0"]["head_to_head"]["games"] == 4
    assert "head_to_head" not in state["runs"]["first-seed0"]
    table = (out / "ablation.md").read_text()
    assert "| head to head against first |" in table and "played 4 games against the `first` arm's" in table
    second_row = next(line for line in table.splitlines() if line.startswith("| second |"))
    assert re.search(r"Elo [^|]*\(\d+-\d+-\d+\) \|$", second_row)  # the last column: the match
