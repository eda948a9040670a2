"""The racetrack (the book's exercise 5.12 and example 8.6), value iteration and RTDP on it.

The car sits on a cell and has a velocity (up, right), each component 0..4, not both 0 except on
the starting line. An action adds -1, 0 or +1 to each component (9 actions; those that would leave
the allowed velocities are not offered); with probability 0.1 the increments are both 0 whatever
the action. The car then moves by its velocity: if its path crosses the finish line the episode
ends; if it leaves the track first, it goes back to a random cell of the starting line with
velocity 0 and the episode goes on. Every step costs 1 (reward -1), no discounting.

A state is (row, column, up, right) numbered over the states reachable from the starting line.
The transitions are tables: after action a a state goes to outcome[s, a] on success and to
outcome[s, NOTHING] on failure, an outcome being a state number, FINISH or CRASH.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from .maze import PlanningError

# The track on the left of the book's figure 5.5: 32 rows x 17 columns; S the starting line (the
# bottom row), F the cells just past the finish line (right of the top six rows), # off the track.
LEFT_TRACK = """
###..............F
##...............F
##...............F
#................F
.................F
.................F
..........########
.........#########
.........#########
.........#########
.........#########
.........#########
.........#########
.........#########
#........#########
#........#########
#........#########
#........#########
#........#########
#........#########
#........#########
#........#########
##.......#########
##.......#########
##.......#########
##.......#########
##.......#########
##.......#########
##.......#########
###......#########
###......#########
###SSSSSS#########
"""

MAX_SPEED = 4
FAILURE = 0.1
FINISH, CRASH, NOT_OFFERED = -1, -2, -3
INCREMENTS = [(up, right) for up in (-1, 0, 1) for right in (-1, 0, 1)]
NOTHING = INCREMENTS.index((0, 0))


@dataclass(frozen=True, eq=False)
class Racetrack:
    """The racetrack's tables: states [N, 4] (row, column, up, right); outcome [N, 9] (state number,
    FINISH or CRASH; NOT_OFFERED); starts [K] the states on the starting
    line at rest."""

    states: np.ndarray
    outcome: np.ndarray
    starts: np.ndarray

    @property
    def size(self) -> int:
        return len(self.states)


def _move(grid: np.ndarray, row: int, column: int, up: int, right: int) -> tuple[int, int] | int:
    """Where a car at (row, column) with velocity (up, right) ends: a cell, FINISH or CRASH, looking
    at the cells along its path in order."""
    steps = max(up, right)
    for k in range(1, steps + 1):
        r = row - round(up * k / steps)
        c = column + round(right * k / steps)
        if not (0 <= r < grid.shape[0] and 0 <= c < grid.shape[1]) or grid[r, c] == "#":
            return CRASH
        if grid[r, c] == "F":
            return FINISH
    return row - up, column + right


def build_racetrack(text: str = LEFT_TRACK) -> Racetrack:
    """The tables of a track map (`.` track, `S` starting line, `F` past the finish line, `#` off
    the track), over the states reachable from the starting line."""
    grid = np.array([list(line) for line in text.strip("\n").split("\n")])
    start_cells = list(zip(*np.nonzero(grid == "S")))
    if not start_cells or not (grid == "F").any():
        raise PlanningError("a racetrack needs a starting line (S) and a finish line (F)")
    numbers: dict[tuple[int, int, int, int], int] = {}
    order: list[tuple[int, int, int, int]] = []
    queue = deque()
    for row, column in start_cells:
        key = (int(row), int(column), 0, 0)
        numbers[key] = len(order)
        order.append(key)
        queue.append(key)
    rows_out: list[list] = []
    while queue:
        row, column, up, right = queue.popleft()
        on_start = grid[row, column] == "S"
        row_out = []
        for d_up, d_right in INCREMENTS:
            new_up, new_right = up + d_up, right + d_right
            if not (0 <= new_up <= MAX_SPEED and 0 <= new_right <= MAX_SPEED) or \
                    (new_up == new_right == 0 and not on_start):
                row_out.append(NOT_OFFERED)
                continue
            where = _move(grid, row, column, new_up, new_right)
            if isinstance(where, int):
                row_out.append(where)
                continue
            key = (where[0], where[1], new_up, new_right)
            if key not in numbers:
                numbers[key] = len(order)
                order.append(key)
                queue.append(key)
            row_out.append(numbers[key])
        rows_out.append(row_out)
    starts = np.array([numbers[(int(r), int(c), 0, 0)] for r, c in start_cells])
    return Racetrack(np.array(order), np.array(rows_out, dtype=np.int64), starts)


def action_values(track: Racetrack, values: np.ndarray, state: int) -> np.ndarray:
    """-1 + the expected value after each action in `state` [9] (-inf where not offered), given the
    state values [N]: a crash is worth the mean of the starting states, the finish 0."""
    outcome = track.outcome[state]
    crash = values[track.starts].mean()
    following = np.where(outcome >= 0, values[np.maximum(outcome, 0)], np.where(outcome == CRASH, crash, 0.0))
    expected = -1 + (1 - FAILURE) * following + FAILURE * following[NOTHING]
    return np.where(outcome == NOT_OFFERED, -np.inf, expected)


def value_iteration(track: Racetrack, tolerance: float = 1e-4, max_sweeps: int = 10_000) -> tuple[np.ndarray, int]:
    """In-place sweeps over all states, in their numbering, until no value changes by more than
    `tolerance` in a sweep: the values [N] and the number of sweeps (updates = sweeps * N)."""
    values = np.zeros(track.size)
    for sweep in range(1, max_sweeps + 1):
        change = 0.0
        for state in range(track.size):
            new = action_values(track, values, state).max()
            change = max(change, abs(new - values[state]))
            values[state] = new
        if change < tolerance:
            return values, sweep
    raise PlanningError(f"value iteration did not converge in {max_sweeps:,} sweeps")


@dataclass(frozen=True)
class RtdpResult:
    """One RTDP run: the updates of each state [N], the steps of each episode [episodes], values [N]."""

    updates: np.ndarray
    episode_steps: np.ndarray
    values: np.ndarray


def rtdp(track: Racetrack, episodes: int, rng: np.random.Generator, *, max_steps: int = 100_000) -> RtdpResult:
    """Real-time dynamic programming: episodes from a random starting cell; in each state visited,
    one expected update of its value, then the greedy action (ties at random) taken for real. Values
    start at 0 (optimistic: every step costs 1)."""
    values = np.zeros(track.size)
    updates = np.zeros(track.size, dtype=np.int64)
    episode_steps = np.zeros(episodes, dtype=np.int64)
    outcome = track.outcome
    for episode in range(episodes):
        state = int(track.starts[rng.integers(len(track.starts))])
        for step in range(1, max_steps + 1):
            q = action_values(track, values, state)
            best = q.max()
            values[state] = best
            updates[state] += 1
            ties = np.flatnonzero(q == best)
            action = int(ties[rng.integers(len(ties))]) if len(ties) > 1 else int(ties[0])
            if rng.random() < FAILURE:
                action = NOTHING
            following = int(outcome[state, action])
            if following == FINISH:
                break
            state = int(track.starts[rng.integers(len(track.starts))]) if following == CRASH else following
        else:
            raise PlanningError(f"an RTDP episode did not finish in {max_steps:,} steps")
        episode_steps[episode] = step
    return RtdpResult(updates, episode_steps, values)
