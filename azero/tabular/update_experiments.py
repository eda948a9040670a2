"""The book's experiments on how to spend updates: expected against sample updates (figure 8.7),
trajectory sampling against uniform sweeps (figure 8.8), RTDP against value-iteration sweeps on
the racetrack (example 8.6). Each returns a report.Result; keyword defaults are the book's settings
where it gives them."""

from __future__ import annotations

import numpy as np

from ..svg import Series, line_chart
from . import racetrack, trajectory, updates
from .report import Result, markdown_table, mean_interval, number, percent, with_interval

BRANCHING = (2, 10, 100, 1000, 10_000)


def updates_experiment(*, runs: int = 100, branching: tuple[int, ...] = BRANCHING, seed: int = 0) -> Result:
    """Figure 8.7: RMS error against max computations (in units of b) for each branching factor b."""
    series, rows, numbers = [], [], {}
    fractions = (0.1, 0.5, 1.0, 2.0)
    for index, b in enumerate(branching):
        computations = 2 * b
        errors = updates.sample_update_errors(b, computations, runs, np.random.default_rng([seed, index]))
        formula = updates.sample_error_formula(b, np.arange(1, computations + 1))
        numbers[b] = {"errors": errors, "formula": formula}
        picks = np.unique(np.linspace(0, computations, min(computations + 1, 201)).round().astype(int))
        series.append(Series(f"sample updates, b = {b:,}", picks / b, errors[picks]))
        row = [f"{b:,}"]
        for fraction in fractions:
            t = max(1, int(round(fraction * b)))
            row.append(f"{errors[t]:.3f} ({formula[t - 1]:.3f})")
        rows.append(row)
    series.append(Series("expected update (any b)", [0, 1, 1, 2], [1, 1, 0, 0], dashed=True))
    header = ["b"] + [f"error after {f:g} b samples (formula)" for f in fractions]
    svg = line_chart(series, f"Expected against sample updates ({runs} problems each)",
                     "max computations, in units of the branching factor b", "RMS error in the value estimate",
                     y_from_zero=True)
    return Result("updates", "Expected against sample updates (figure 8.7)", markdown_table(header, rows),
                  {"planning-updates.svg": svg}, numbers)


TRAJECTORY_CASES = ((1000, 1), (1000, 3), (1000, 10), (10_000, 1))


def trajectory_experiment(*, runs: int = 200, cases: tuple[tuple[int, int], ...] = TRAJECTORY_CASES,
                          points: int = 80, seed: int = 0) -> Result:
    """Figure 8.8: start-state value of the greedy policy against expected updates, on-policy against
    uniform, on `runs` random tasks per case (20 updates a state: 20,000 for 1,000 states)."""
    rows, numbers, pictures = [], {}, {}
    for states in sorted({states for states, _ in cases}):
        series = []
        for index, (case_states, b) in enumerate(cases):
            if case_states != states:
                continue
            budget = 20 * states
            every = budget // points
            tasks = trajectory.make_tasks(runs, states, b, np.random.default_rng([seed, index]))
            found = {}
            for on_policy, label in ((True, "on-policy"), (False, "uniform")):
                values = trajectory.run(tasks, budget, every, on_policy, np.random.default_rng([seed, index, on_policy]))
                mean, low, high = mean_interval(values, axis=1)
                found[label] = (mean, low, high)
                series.append(Series(f"b = {b}, {label}", np.arange(len(mean)) * every, mean, low, high,
                                     dashed=not on_policy, colour=index))
            numbers[(states, b)] = found
            for share in (0.05, 0.25, 1.0):
                point = int(round(share * points))
                rows.append([f"{states:,}", str(b), f"{int(point * every):,}"]
                            + [with_interval(*(found[label][k][point] for k in range(3)), digits=3)
                               for label in ("on-policy", "uniform")])
        pictures[f"planning-trajectory-{states}.svg"] = line_chart(
            series, f"Trajectory sampling, {states:,} states ({runs} tasks each)",
            "computation time, in expected updates", "value of the start state under the greedy policy",
            y_from_zero=True)
    header = ["states", "b", "expected updates", "on-policy", "uniform"]
    return Result("trajectory", "Trajectory sampling (figure 8.8)", markdown_table(header, rows), pictures, numbers)


BOOK_RTDP = {"sweeps": 28, "dp_updates": 252_784, "episodes": 4000, "rtdp_updates": 127_600,
             "at_most_100": 0.9845, "at_most_10": 0.8051, "never": 0.0318}


def rtdp_experiment(*, runs: int = 25, episodes: int = 4000, seed: int = 0) -> Result:
    """Example 8.6: value iteration's sweeps against RTDP's updates on the racetrack, and how often
    RTDP updated each state."""
    track = racetrack.build_racetrack()
    optimal, sweeps = racetrack.value_iteration(track)
    start_value = float(optimal[track.starts].mean())
    totals, shares, last_steps, counts = [], {"at_most_100": [], "at_most_10": [], "never": []}, [], []
    for run in range(runs):
        result = racetrack.rtdp(track, episodes, np.random.default_rng([seed, run]))
        totals.append(result.updates.sum())
        counts.append(result.updates)
        shares["at_most_100"].append((result.updates <= 100).mean())
        shares["at_most_10"].append((result.updates <= 10).mean())
        shares["never"].append((result.updates == 0).mean())
        last_steps.append(result.episode_steps[-20:].mean())
    numbers = {"states": track.size, "sweeps": sweeps, "dp_updates": sweeps * track.size,
               "rtdp_updates": mean_interval(totals), "last_steps": mean_interval(last_steps),
               "optimal_steps": -start_value, **{key: mean_interval(value) for key, value in shares.items()}}
    book = BOOK_RTDP
    rows = [
        ["reachable states", f"{track.size:,}", f"{track.size:,}", "9,115"],
        ["value iteration: sweeps to convergence (change < 1e-4)", str(sweeps), "", str(book["sweeps"])],
        ["updates to convergence", f"{sweeps * track.size:,}", with_interval(*numbers["rtdp_updates"]),
         f"{book['dp_updates']:,} / {book['rtdp_updates']:,}"],
        ["RTDP / value iteration updates", "", number(numbers["rtdp_updates"][0] / (sweeps * track.size)),
         number(book["rtdp_updates"] / book["dp_updates"])],
        ["steps an episode (RTDP: the last 20 episodes; value iteration: expected, optimal)",
         number(-start_value), with_interval(*numbers["last_steps"]), ""],
        ["states updated 100 times or fewer", "", percent(*numbers["at_most_100"], decimals=1), f"{book['at_most_100']:.2%}"],
        ["states updated 10 times or fewer", "", percent(*numbers["at_most_10"], decimals=1), f"{book['at_most_10']:.2%}"],
        ["states never updated", "", percent(*numbers["never"], decimals=1), f"{book['never']:.2%}"],
    ]
    header = ["", "value iteration", f"RTDP ({episodes:,} episodes, {runs} runs)", "the book (value iteration / RTDP)"]
    limits = np.unique(np.round(np.logspace(0, 3.5, 60)).astype(int))
    counts = np.array(counts)
    at_most = np.array([(counts <= limit).mean(axis=1) for limit in limits])  # [limits, runs]
    mean, low, high = mean_interval(at_most, axis=1)
    series = [Series("RTDP", limits, 100 * mean, 100 * low, 100 * high),
              Series("value iteration", [1, sweeps - 1e-9, sweeps, limits[-1]], [0, 0, 100, 100], dashed=True)]
    svg = line_chart(series, f"Racetrack: how often each state was updated ({runs} RTDP runs)",
                     "updates of a state (k)", "% of states updated k times or fewer", log_x=True, y_from_zero=True)
    return Result("rtdp", "RTDP against value iteration on the racetrack (example 8.6)", markdown_table(header, rows),
                  {"planning-rtdp.svg": svg}, numbers)



