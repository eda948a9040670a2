"""The seven experiments by name, each with what it reproduces and its default number of runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .maze_experiments import changing_maze_experiment, dyna_maze_experiment, sweeping_experiment
from .report import Result
from .update_experiments import rtdp_experiment, trajectory_experiment, updates_experiment


@dataclass(frozen=True)
class Experiment:
    """run(runs=..., seed=...) -> Result; `runs` counts what the experiment repeats (runs, problems or tasks)."""

    run: Callable[..., Result]
    description: str
    runs: int
    repeats: str  # what a run is, for --help
    takes_maze: bool = False


EXPERIMENTS = {
    "dyna-maze": Experiment(dyna_maze_experiment, "Dyna-Q with 0, 5 and 50 planning steps on the Dyna maze "
                            "(figure 8.2)", 30, "runs", takes_maze=True),
    "blocking": Experiment(lambda **kw: changing_maze_experiment("blocking", **kw), "Dyna-Q against Dyna-Q+ when "
                           "the way round the barrier moves (figure 8.4)", 20, "runs"),
    "shortcut": Experiment(lambda **kw: changing_maze_experiment("shortcut", **kw), "Dyna-Q against Dyna-Q+ when "
                           "a shortcut opens (figure 8.5)", 20, "runs"),
    "sweeping": Experiment(sweeping_experiment, "prioritized sweeping against Dyna-Q on mazes of growing size "
                           "(example 8.4)", 10, "runs per size", takes_maze=True),
    "updates": Experiment(updates_experiment, "expected against sample updates for branching factors 2 to 10,000 "
                          "(figure 8.7)", 100, "problems per branching factor"),
    "trajectory": Experiment(trajectory_experiment, "on-policy trajectory sampling against uniform sweeps "
                             "(figure 8.8)", 200, "tasks per case"),
    "rtdp": Experiment(rtdp_experiment, "RTDP against value iteration on the racetrack (example 8.6)", 25, "runs"),
}

