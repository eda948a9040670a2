"""Planning and learning with tabular methods (Sutton and Barto, chapter 8), numpy only (no torch).

Environments: grid mazes from text maps, changing during a run (maze.py), and the racetrack
(racetrack.py). Methods: Dyna-Q and Dyna-Q+ (dyna.py), prioritized sweeping and value iteration
(sweeping.py), expected and sample updates (updates.py), trajectory sampling (trajectory.py), RTDP
(racetrack.py). The book's experiments: maze_experiments.py, update_experiments.py, by name in
experiments.py; `python scripts/planning.py EXPERIMENT` runs one.
"""

from .dyna import DynaAgents, DynaConfig, greedy_path_lengths, run_episodes, run_steps, run_until_near_shortest
from .experiments import EXPERIMENTS
from .maze import Maze, PlanningError, Schedule, blocking_maze, dyna_maze, parse_maze, render_maze, shortcut_maze
from .racetrack import Racetrack, build_racetrack, rtdp
from .report import Result
from .sweeping import SweepingAgent, SweepingConfig, sweep_known_maze, sweeping_until_near_shortest, value_iteration

__all__ = [
    "DynaAgents", "DynaConfig", "greedy_path_lengths", "run_episodes", "run_steps", "run_until_near_shortest",
    "EXPERIMENTS",
    "Maze", "PlanningError", "Schedule", "blocking_maze", "dyna_maze", "parse_maze", "render_maze", "shortcut_maze",
    "Racetrack", "build_racetrack", "rtdp",
    "Result",
    "SweepingAgent", "SweepingConfig", "sweep_known_maze", "sweeping_until_near_shortest", "value_iteration",
]
