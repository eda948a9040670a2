"""The book's maze experiments: the Dyna maze (figure 8.2), the blocking and shortcut mazes
(figures 8.4 and 8.5), prioritized sweeping against Dyna-Q on mazes of growing size (example 8.4).
Each returns a report.Result; the keyword defaults are the book's settings where it gives them."""

from __future__ import annotations

import numpy as np

from ..svg import Series, line_chart
from .dyna import NEAR_SHORTEST, DynaConfig, greedy_path_lengths, run_episodes, run_steps, run_until_near_shortest
from .maze import Maze, Schedule, blocking_maze, dyna_maze, shortcut_maze
from .report import Result, markdown_table, mean_interval, percent, share_interval, with_interval
from .sweeping import SweepingConfig, sweeping_until_near_shortest


def dyna_maze_experiment(*, runs: int = 30, episodes: int = 50, planning: tuple[int, ...] = (0, 5, 50),
                         seed: int = 0, maze: Maze | None = None) -> Result:
    """Figure 8.2: steps per episode of Dyna-Q with n planning steps (gamma 0.95, alpha 0.1, epsilon 0.1)."""
    maze = maze or dyna_maze()
    shortest = maze.shortest_path()
    series, rows, numbers = [], [], {"shortest": shortest}
    marks = [e for e in (2, 3, 5, 10, 25, 50) if e <= episodes]
    for index, steps_planned in enumerate(planning):
        rng = np.random.default_rng([seed, index])
        steps, optimal_after = run_episodes(maze, DynaConfig(planning_steps=steps_planned), runs, episodes, rng)
        mean, low, high = mean_interval(steps)
        floor = mean[-min(10, episodes):].mean()
        settled = int(np.argmax(mean <= 1.2 * floor)) + 1
        within_5 = share_interval(int((optimal_after <= 5).sum()), runs)
        ever = share_interval(int((optimal_after <= episodes).sum()), runs)
        numbers[steps_planned] = {"mean_steps": mean, "settled": settled, "floor": floor,
                                  "optimal_within_5": within_5[0], "optimal_at_end": ever[0]}
        label = f"n = {steps_planned}" + (" (no planning)" if steps_planned == 0 else "")
        series.append(Series(label, list(range(2, episodes + 1)), mean[1:], np.maximum(low[1:], 0), high[1:]))
        rows.append([str(steps_planned)] + [with_interval(mean[e - 1], low[e - 1], high[e - 1]) for e in marks]
                    + [str(settled), percent(*within_5), percent(*ever)])
    header = (["n"] + [f"steps in episode {e}" for e in marks]
              + ["first episode within 20% of the final level", "greedy path shortest after 5 episodes",
                 f"after {episodes}"])
    svg = line_chart(series, f"Dyna maze: steps per episode ({runs} runs, 95% intervals)", "episode",
                     "steps per episode", y_from_zero=True)
    return Result("dyna-maze", "Dyna maze (figure 8.2)", markdown_table(header, rows), {"planning-dyna-maze.svg": svg},
                  numbers)


CHANGING = {
    # name: (schedule maker, change step, steps, planning steps, kappa): the parameters are ours, the
    # book gives only the mazes and the change steps (alpha 1 suits a deterministic maze).
    "blocking": (blocking_maze, 1000, 3000, 10, 1e-4),
    "shortcut": (shortcut_maze, 3000, 6000, 50, 1e-3),
}


def changing_maze_experiment(name: str, *, runs: int = 20, seed: int = 0) -> Result:
    """Figures 8.4 and 8.5: cumulative reward of Dyna-Q, Dyna-Q+ and the exercise-8.4 variant (bonus in
    action selection only) in a maze that changes."""
    make, change, steps, planning, kappa = CHANGING[name]
    schedule: Schedule = make(change)
    agents = (("Dyna-Q", "none"), ("Dyna-Q+", "planning"), ("bonus in action selection", "selection"))
    series, rows, numbers = [], [], {}
    after = schedule.mazes[-1]
    for index, (label, bonus) in enumerate(agents):
        config = DynaConfig(planning_steps=planning, step_size=1.0, kappa=kappa, bonus=bonus)
        rng = np.random.default_rng([seed, index])
        cumulative, q = run_steps(schedule, config, runs, steps, rng)
        shortest_at_end = share_interval(int((greedy_path_lengths(q, after) == after.shortest_path()).sum()), runs)
        mean, low, high = mean_interval(cumulative)
        gained = cumulative[:, -1] - cumulative[:, change - 1]
        gained_mean = mean_interval(gained)
        numbers[bonus] = {"before": mean_interval(cumulative[:, change - 1]), "after": gained_mean,
                          "final": mean_interval(cumulative[:, -1]), "shortest_at_end": shortest_at_end[0]}
        every = max(1, steps // 300)
        series.append(Series(label, list(range(every, steps + 1, every)), mean[every - 1::every],
                             low[every - 1::every], high[every - 1::every]))
        rows.append([label, with_interval(*numbers[bonus]["before"]), with_interval(*gained_mean),
                     with_interval(*numbers[bonus]["final"]), percent(*shortest_at_end)])
    header = ["agent", f"reward by step {change:,}", f"reward in steps {change + 1:,}-{steps:,}", "total reward",
              "greedy path shortest at the end"]
    svg = line_chart(series, f"{name.capitalize()} maze: the maze changes after {change:,} steps ({runs} runs)",
                     "time steps", "cumulative reward", y_from_zero=True)
    title = {"blocking": "Blocking maze (figure 8.4)", "shortcut": "Shortcut maze (figure 8.5)"}[name]
    numbers["shortest_after"] = after.shortest_path()
    return Result(name, title, markdown_table(header, rows), {f"planning-{name}.svg": svg}, numbers)


SCALES = ((1, 1), (1, 2), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8))


def sweeping_experiment(*, runs: int = 10, scales: tuple[tuple[int, int], ...] = SCALES, seed: int = 0,
                        maze: Maze | None = None) -> Result:
    """Example 8.4: Q updates until the greedy path is near-shortest, for Dyna-Q and prioritized sweeping
    (both n = 5, alpha 1, gamma 0.95, epsilon 0.1; threshold 1e-4), the Dyna maze at finer resolutions."""
    base = maze or dyna_maze()
    rows, numbers = [], {"sizes": [], "dyna": [], "sweeping": [], "ratio": []}
    bands = {"dyna": [], "sweeping": []}
    for index, (row_factor, column_factor) in enumerate(scales):
        scaled = base.scaled(row_factor, column_factor)
        dyna = run_until_near_shortest(scaled, DynaConfig(planning_steps=5, step_size=1.0), runs,
                                       np.random.default_rng([seed, index]))
        sweeping = np.array([sweeping_until_near_shortest(scaled, SweepingConfig(), seed * 1_000_003 + index * 1009 + run)
                             for run in range(runs)])
        ratio = mean_interval(np.log(dyna) - np.log(sweeping))
        ratio = tuple(float(np.exp(value)) for value in ratio)
        numbers["sizes"].append(scaled.open_cells)
        for key, counts in (("dyna", dyna), ("sweeping", sweeping)):
            numbers[key].append(mean_interval(counts))
            bands[key].append(numbers[key][-1])
        numbers["ratio"].append(ratio)
        rows.append([f"{scaled.open_cells:,}", str(scaled.shortest_path()), with_interval(*numbers["dyna"][-1]),
                     with_interval(*numbers["sweeping"][-1]), with_interval(*ratio, digits=2)])
    header = ["states", "shortest path", "Dyna-Q updates", "prioritized sweeping updates",
              "ratio (geometric mean)"]
    series = [Series(label, numbers["sizes"], [b[0] for b in bands[key]], [max(b[1], 1.0) for b in bands[key]],
                     [b[2] for b in bands[key]], dots=True)
              for label, key in (("Dyna-Q", "dyna"), ("prioritized sweeping", "sweeping"))]
    svg = line_chart(series, f"Updates until a near-shortest path ({runs} runs)", "states",
                     f"updates until a path within {NEAR_SHORTEST:.0%} of the shortest", log_x=True, log_y=True)
    return Result("sweeping", "Prioritized sweeping against Dyna-Q (example 8.4)", markdown_table(header, rows),
                  {"planning-sweeping.svg": svg}, numbers)
