"""Tabular planning (azero/tabular/): the exact parts exactly, and each of the book's experiments in a
small version asserting the book's qualitative result (the full versions are marked slow)."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest

from azero.cli import planning as planning_cli
from azero.svg import Series, line_chart
from azero.tabular import (
    DynaAgents,
    DynaConfig,
    PlanningError,
    SweepingConfig,
    blocking_maze,
    dyna_maze,
    greedy_path_lengths,
    parse_maze,
    racetrack,
    render_maze,
    run_steps,
    shortcut_maze,
    sweep_known_maze,
    trajectory,
    updates,
    value_iteration,
)
from azero.tabular.maze_experiments import changing_maze_experiment, dyna_maze_experiment, sweeping_experiment
from azero.tabular.update_experiments import rtdp_experiment, trajectory_experiment, updates_experiment

REPO = Path(__file__).resolve().parent.parent


def test_importing_the_package_loads_no_torch():
    code = "import sys, azero.tabular; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    loaded = out.stdout.split()
    assert "azero.tabular" in loaded
    assert [m for m in loaded if m.split(".")[0] in ("torch", "games", "numba")] == []


# -- mazes --------------------------------------------------------------------------------------------


def test_the_dyna_maze_is_the_books():
    maze = dyna_maze()
    assert maze.shape == (6, 9) and maze.open_cells == 47 and maze.shortest_path() == 14
    assert parse_maze(render_maze(maze)).walls.tolist() == maze.walls.tolist()
    # a move into a wall or off the grid stays put; the start's four moves: up, down, left, right
    assert maze.next_state[maze.start].tolist() == [9, 27, 18, 19]
    assert maze.next_state[0, 0] == 0 and maze.next_state[6, 3] == 6  # (0, 6) right is the wall at (0, 7)


@pytest.mark.parametrize("text, message", [
    ("....\n.S..\n", "no goal"),
    ("...G\n....\n", "no start"),
    ("S..G\n.S..\n", "2 start"),
    ("S..G\n..x.\n", "'x' at line 2, column 3"),
    ("S..G\n...\n", "line 2 has 3 cells"),
    ("S#G\n.#.\n", "cannot be reached"),
    ("\n\n", "empty"),
])
def test_a_bad_maze_map_is_refused_with_one_line(text, message):
    with pytest.raises(PlanningError, match=message):
        parse_maze(text)


def test_a_schedule_switches_maze_at_its_step():
    schedule = blocking_maze(1000)
    assert schedule.at(999) is schedule.mazes[0] and schedule.at(1000) is schedule.mazes[1]
    assert [m.shortest_path() for m in schedule.mazes] == [10, 16]  # the gap moves from the right end to the left


# -- the exact parts ----------------------------------------------------------------------------------


def test_dyna_q_without_planning_is_one_step_q_learning_step_for_step():
    """A plain Q-learning loop written here, drawing the same random numbers in the documented order,
    gives the same Q table after every step."""
    maze, steps = dyna_maze(), 3000
    alpha, gamma, epsilon = 0.1, 0.95, 0.1
    agents = DynaAgents(1, maze.states, 4, DynaConfig(planning_steps=0), np.random.default_rng(7))
    rng = np.random.default_rng(7)
    q = np.zeros((maze.states, 4))
    state = agent_state = maze.start
    for step in range(1, steps + 1):
        explore, random_action, keys = rng.random(1)[0] < epsilon, rng.integers(4, size=1)[0], rng.random((1, 4))[0]
        best = np.flatnonzero(q[state] == q[state].max())
        action = random_action if explore else best[np.argmax(keys[best])]
        following = maze.next_state[state, action]
        reward = float(following == maze.goal)
        q[state, action] += alpha * (reward + gamma * q[following].max() - q[state, action])
        state = maze.start if following == maze.goal else following

        chosen = agents.act(np.array([agent_state]), step)
        after = maze.next_state[agent_state, chosen]
        agents.learn(np.array([agent_state]), chosen, (after == maze.goal).astype(float), after, step)
        agent_state = maze.start if after[0] == maze.goal else after[0]
        assert chosen[0] == action and np.array_equal(agents.q[0], q), f"different at step {step}"
    assert q.max() > 0.2  # (the loop did learn)


def test_the_model_replays_exactly_what_was_observed():
    maze = blocking_maze(150)
    rng = np.random.default_rng(3)
    agents = DynaAgents(4, maze.mazes[0].states, 4, DynaConfig(planning_steps=0), rng)
    states = np.full(4, maze.mazes[0].start)
    last_seen: dict[tuple[int, int, int], tuple[int, float]] = {}
    for step in range(1, 301):  # (the maze changes at 150: the model keeps the last outcome of a pair)
        current = maze.at(step - 1)
        actions = agents.act(states, step)
        following = current.next_state[states, actions]
        rewards = (following == current.goal).astype(float)
        agents.learn(states, actions, rewards, following, step)
        for run in range(4):
            last_seen[run, int(states[run]), int(actions[run])] = (int(following[run]), rewards[run])
        states = np.where(following == current.goal, current.start, following)
    tried = agents.model_next >= 0
    assert tried.sum() == len(last_seen)
    for (run, state, action), (following, reward) in last_seen.items():
        assert agents.model_next[run, state, action] == following
        assert agents.model_reward[run, state, action] == reward
    # a planning update replays one observed pair per run: exactly Q-learning on the model's outcome
    before = agents.q.copy()
    agents.plan(301)
    changed = np.argwhere(agents.q != before)
    for run, state, action in changed:
        assert (run, state, action) in last_seen
        following, reward = last_seen[run, state, action]
        expected = before[run, state, action] + 0.1 * (reward + 0.95 * before[run, following].max()
                                                       - before[run, state, action])
        assert agents.q[run, state, action] == expected
    assert agents.updates.tolist() == [301] * 4


@pytest.mark.parametrize("text", [None, "S.#.\n..#G\n....\n", "G...#\n.##.#\n...S.\n"])
def test_prioritized_sweeping_and_value_iteration_give_the_same_optimal_values(text):
    maze = dyna_maze() if text is None else parse_maze(text)
    optimal = value_iteration(maze, 0.95)
    agent = sweep_known_maze(maze, SweepingConfig(step_size=1.0, threshold=0.0))
    assert np.array_equal(np.array(agent.q), optimal)
    assert optimal.max(axis=1)[maze.start] == pytest.approx(0.95 ** (maze.shortest_path() - 1))
    assert agent.updates < 10 * maze.open_cells * 4  # (it sweeps, it does not loop)


def test_value_iteration_on_the_racetrack_solves_its_bellman_equation():
    track = racetrack.build_racetrack()
    values, sweeps = racetrack.value_iteration(track)
    assert track.size == 2428 and len(track.starts) == 6 and 20 <= sweeps <= 60
    residual = max(abs(racetrack.action_values(track, values, s).max() - values[s]) for s in range(track.size))
    assert residual < 1e-3
    assert -13 < values[track.starts].mean() < -10  # about 11 to 13 steps from the line to the finish


# -- the experiments, small -----------------------------------------------------------------------------


def test_dyna_maze_small_planning_reaches_the_short_path_in_a_few_episodes():
    result = dyna_maze_experiment(runs=10, planning=(0, 50))
    without, with_50 = result.numbers[0], result.numbers[50]
    assert with_50["settled"] <= 4 and without["settled"] >= 15  # the book: about 3 and about 25 episodes
    assert with_50["mean_steps"][2] < 25 < 100 < without["mean_steps"][4]
    assert with_50["floor"] == pytest.approx(without["floor"], rel=0.2)  # both end near the 14-step path
    assert "planning-dyna-maze.svg" in result.pictures and "| 50 |" in result.table


def test_blocking_maze_small_dyna_q_plus_recovers_faster():
    result = changing_maze_experiment("blocking", runs=10)
    assert result.numbers["planning"]["after"][1] > result.numbers["none"]["after"][2]  # intervals apart


def test_shortcut_maze_small_dyna_q_plus_finds_the_shortcut():
    schedule = shortcut_maze(1000)
    found = {}
    for bonus in ("none", "planning"):
        config = DynaConfig(planning_steps=20, step_size=1.0, kappa=1e-3, bonus=bonus)
        _, q = run_steps(schedule, config, 8, 2500, np.random.default_rng(5))
        found[bonus] = (greedy_path_lengths(q, schedule.mazes[1]) == schedule.mazes[1].shortest_path()).mean()
    assert found["planning"] >= 0.75 and found["none"] <= 0.25


def test_prioritized_sweeping_small_needs_several_times_fewer_updates():
    result = sweeping_experiment(runs=4, scales=((1, 1), (1, 2), (2, 2)))
    assert all(ratio[1] > 3 for ratio in result.numbers["ratio"])  # the low end of each ratio's interval


def test_sample_updates_follow_the_books_formula_and_expected_updates_end_exact():
    for b in (10, 100, 1000):
        errors = updates.sample_update_errors(b, 2 * b, 400, np.random.default_rng(b))
        formula = updates.sample_error_formula(b, np.arange(1, 2 * b + 1))
        assert errors[0] == 1.0 and errors[b] == pytest.approx(formula[b - 1], rel=0.15)
        assert errors[b // 10] > 2.5 * errors[b]  # most of the gain comes early
        assert updates.expected_update_errors(b, 2 * b)[[b - 1, b]].tolist() == [1.0, 0.0]
    result = updates_experiment(runs=20, branching=(2, 100))
    assert "planning-updates.svg" in result.pictures


def test_trajectory_sampling_small_on_policy_wins_early():
    tasks = trajectory.make_tasks(40, 1000, 1, np.random.default_rng(0))
    on_policy = trajectory.run(tasks, 1500, 500, True, np.random.default_rng(1)).mean(axis=1)
    uniform = trajectory.run(tasks, 1500, 500, False, np.random.default_rng(1)).mean(axis=1)
    assert on_policy[1] > uniform[1] + 1 and on_policy[2] > uniform[2]


def test_rtdp_small_updates_few_states_often():
    result = rtdp_experiment(runs=2, episodes=1000)
    numbers = result.numbers
    assert numbers["rtdp_updates"][0] < 0.5 * numbers["dp_updates"]
    assert numbers["at_most_100"][0] > 0.95 and numbers["at_most_10"][0] > 0.7 and numbers["never"][0] < 0.1


# -- the command and the pictures ---------------------------------------------------------------------


@pytest.mark.parametrize("arguments, message", [
    (["nosuch"], "unknown experiment 'nosuch'; choose from dyna-maze"),
    (["updates", "--runs", "1"], "--runs must be in 2.."),
    (["updates", "--seed", "-3"], "--seed must be 0 or more"),
    (["rtdp", "--maze", "x.txt"], "--maze is for dyna-maze and sweeping only"),
])
def test_bad_arguments_get_one_usage_line(arguments, message, capsys):
    with pytest.raises(SystemExit) as stop:
        planning_cli.main(arguments)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("text, message", [
    ("....\n.S..\n", "has no goal (G) cells"),
    ("G.#.\n..#S\n", "cannot be reached from its start"),
    (None, "maze map not found"),
])
def test_a_bad_maze_file_gets_one_line_and_no_traceback(tmp_path, text, message, capsys):
    path = tmp_path / "maze.txt"
    if text is not None:
        path.write_text(text)
    assert planning_cli.main(["dyna-maze", "--maze", str(path), "--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error and len(error.strip().splitlines()) == 1


def test_an_experiment_writes_its_plot_and_table(tmp_path, capsys):
    assert planning_cli.main(["updates", "--runs", "3", "--out", str(tmp_path / "out")]) == 0
    table = (tmp_path / "out" / "planning-updates.md").read_text()
    assert "| 10,000 |" in table and "python scripts/planning.py updates --runs 3 --seed 0" in table
    ElementTree.fromstring((tmp_path / "out" / "planning-updates.svg").read_text())
    assert "planning-updates.svg" in capsys.readouterr().out


def test_a_chart_with_log_axes_is_well_formed_svg():
    svg = line_chart([Series("a & b", [10, 100, 1000], [5, 50, 500], [4, 40, 400], [6, 60, 600], dots=True),
                      Series("<c>", [10, 1000], [0, 80], dashed=True)], "t", "x", "y", log_x=True, log_y=True)
    root = ElementTree.fromstring(svg)
    texts = [element.text for element in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "a & b" in texts and "<c>" in texts and "1,000" in texts


# -- the experiments in full (the book's counts) -------------------------------------------------------


@pytest.mark.slow
def test_full_dyna_maze():
    numbers = dyna_maze_experiment().numbers
    assert numbers[50]["settled"] <= 4 and numbers[5]["settled"] <= 8 and 18 <= numbers[0]["settled"] <= 35


@pytest.mark.slow
@pytest.mark.parametrize("name", ["blocking", "shortcut"])
def test_full_changing_mazes(name):
    numbers = changing_maze_experiment(name).numbers
    assert numbers["planning"]["after"][1] > numbers["none"]["after"][2]
    if name == "shortcut":
        assert numbers["planning"]["shortest_at_end"] >= 0.8 and numbers["none"]["shortest_at_end"] <= 0.2


@pytest.mark.slow
def test_full_sweeping():
    numbers = sweeping_experiment().numbers
    assert all(ratio[1] > 5 for ratio in numbers["ratio"])


@pytest.mark.slow
def test_full_updates():
    numbers = updates_experiment().numbers
    for b in (100, 1000, 10_000):
        assert numbers[b]["errors"][b] == pytest.approx(numbers[b]["formula"][b - 1], rel=0.2)


@pytest.mark.slow
def test_full_trajectory():
    numbers = trajectory_experiment().numbers
    for case in ((1000, 1), (10_000, 1)):
        on_policy, uniform = numbers[case]["on-policy"], numbers[case]["uniform"]
        assert on_policy[1][2] > uniform[2][2]  # the 2nd measurement: on-policy's interval above uniform's
    gap = {case: numbers[case]["on-policy"][0][2] - numbers[case]["uniform"][0][2] for case in numbers}
    assert gap[10_000, 1] > gap[1000, 1] > gap[1000, 10]  # more so with many states and small b


@pytest.mark.slow
def test_full_rtdp():
    numbers = rtdp_experiment().numbers
    assert numbers["rtdp_updates"][2] < 0.8 * numbers["dp_updates"]
    assert numbers["at_most_100"][0] > 0.95 and numbers["at_most_10"][0] > 0.7 and numbers["never"][0] < 0.1
    assert numbers["last_steps"][0] < 1.2 * numbers["optimal_steps"]
