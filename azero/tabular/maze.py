"""Deterministic grid mazes read from a text map, and the mazes of the book's chapter 8.

A map is rows of equal length: `.` an open cell, `#` a wall, `S` the start, `G` the goal (one of
each). A state is a cell's index `row * columns + column` over the whole grid, walls included, so
that a maze that changes during a run (a wall moves, a shortcut opens) keeps its states' numbers.
Actions are up, down, left, right; a move into a wall or off the grid leaves the agent where it
is. Reaching the goal pays 1 and sends the agent back to the start; every other step pays 0.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

ACTIONS = ((-1, 0), (1, 0), (0, -1), (0, 1))  # up, down, left, right as (row, column) steps
MAP_CHARACTERS = ".#SG"


class PlanningError(ValueError):
    """Bad input to the planning package (a map without a start, an unknown experiment, ...): the
    command line prints it as one line."""


# The Dyna maze of the book's figure 8.2: 6 x 9 cells, 47 of them open.
DYNA_MAZE = """
.......#G
..#....#.
S.#....#.
..#......
.....#...
.........
"""

# The blocking maze of figure 8.4: the gap in the barrier moves from the right end to the left.
BLOCKING_BEFORE = """
........G
.........
.........
########.
.........
...S.....
"""
BLOCKING_AFTER = """
........G
.........
.........
.########
.........
...S.....
"""

# The shortcut maze of figure 8.5: a second gap opens at the right end of the barrier.
SHORTCUT_BEFORE = """
........G
.........
.........
.########
.........
...S.....
"""
SHORTCUT_AFTER = """
........G
.........
.........
.#######.
.........
...S.....
"""


@dataclass(frozen=True, eq=False)
class Maze:
    """A maze: walls [rows, columns] bool, start and goal as state numbers, and the table of moves
    next_state [rows * columns, 4] (a wall's row points at itself; the goal's is never used)."""

    walls: np.ndarray
    start: int
    goal: int
    next_state: np.ndarray = field(repr=False)

    @property
    def shape(self) -> tuple[int, int]:
        return self.walls.shape

    @property
    def states(self) -> int:
        """The number of state numbers (cells, walls included)."""
        return self.walls.size

    @property
    def open_cells(self) -> int:
        return int((~self.walls).sum())

    def distances(self) -> np.ndarray:
        """Steps from each state to the goal along a shortest path [states] (-1: no path)."""
        rows, columns = self.shape
        distance = np.full(self.states, -1, dtype=np.int64)
        distance[self.goal] = 0
        queue = deque([self.goal])
        while queue:
            state = queue.popleft()
            row, column = divmod(state, columns)
            for d_row, d_column in ACTIONS:  # moves are reversible: a neighbour's step back reaches `state`
                r, c = row + d_row, column + d_column
                if 0 <= r < rows and 0 <= c < columns and not self.walls[r, c] and distance[r * columns + c] < 0:
                    distance[r * columns + c] = distance[state] + 1
                    queue.append(r * columns + c)
        return distance

    def shortest_path(self) -> int:
        """Steps of a shortest path from the start to the goal."""
        return int(self.distances()[self.start])

    def open_states(self) -> np.ndarray:
        """The state numbers of the open cells [open_cells], the goal included."""
        return np.flatnonzero(~self.walls.ravel())

    def scaled(self, row_factor: int, column_factor: int) -> "Maze":
        """The same maze at a finer resolution: each cell becomes a row_factor x column_factor block
        (the start and the goal the block's top-left cell), as in the book's example 8.4."""
        walls = np.repeat(np.repeat(self.walls, row_factor, axis=0), column_factor, axis=1)
        columns = self.shape[1]

        def block_corner(state: int) -> int:
            row, column = divmod(state, columns)
            return row * row_factor * walls.shape[1] + column * column_factor

        return build_maze(walls, block_corner(self.start), block_corner(self.goal))


def build_maze(walls: np.ndarray, start: int, goal: int) -> Maze:
    """A Maze from its walls [rows, columns] and the state numbers of its start and goal; refuses a
    goal that cannot be reached from the start."""
    walls = np.asarray(walls, dtype=bool)
    rows, columns = walls.shape
    row, column = np.divmod(np.arange(rows * columns), columns)
    next_state = np.empty((rows * columns, len(ACTIONS)), dtype=np.int64)
    for action, (d_row, d_column) in enumerate(ACTIONS):
        r, c = row + d_row, column + d_column
        inside = (r >= 0) & (r < rows) & (c >= 0) & (c < columns)
        target = np.where(inside, r * columns + c, 0)
        blocked = ~inside | walls.ravel()[target]
        next_state[:, action] = np.where(blocked, np.arange(rows * columns), target)
    maze = Maze(walls, int(start), int(goal), next_state)
    if maze.distances()[maze.start] < 0:
        raise PlanningError("the maze's goal (G) cannot be reached from its start (S)")
    return maze


def parse_maze(text: str) -> Maze:
    """A Maze from a text map (see the module's docstring); blank lines around it are ignored.
    Raises PlanningError with the first thing wrong: an unknown character, rows of different
    lengths, no start or no goal or more than one, a goal the start cannot reach."""
    lines = [line.rstrip("\r") for line in text.strip("\n").split("\n")]
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise PlanningError("the maze map is empty")
    for number, line in enumerate(lines, 1):
        for column, character in enumerate(line, 1):
            if character not in MAP_CHARACTERS:
                raise PlanningError(f"the maze map has {character!r} at line {number}, column {column}; "
                                    "use . (open), # (wall), S (start) and G (goal)")
        if len(line) != len(lines[0]):
            raise PlanningError(f"the maze map's line {number} has {len(line)} cells, the first line "
                                f"{len(lines[0])}; all lines must be as long")
    grid = np.array([list(line) for line in lines])
    found = {}
    for mark, name in (("S", "start"), ("G", "goal")):
        where = np.flatnonzero(grid.ravel() == mark)
        if len(where) != 1:
            raise PlanningError(f"the maze map has {'no' if len(where) == 0 else len(where)} {name} "
                                f"({mark}) cells; it needs exactly one")
        found[mark] = int(where[0])
    return build_maze(grid == "#", found["S"], found["G"])


def render_maze(maze: Maze) -> str:
    """The maze as a text map (the inverse of parse_maze)."""
    grid = np.where(maze.walls, "#", ".")
    columns = maze.shape[1]
    grid[divmod(maze.start, columns)] = "S"
    grid[divmod(maze.goal, columns)] = "G"
    return "\n".join("".join(row) for row in grid) + "\n"


@dataclass(frozen=True)
class Schedule:
    """A maze that changes during a run: `mazes[i]` holds from step `starts[i]` on (starts[0] == 0,
    increasing; steps count from 0). All mazes have the same shape, start and goal."""

    mazes: tuple[Maze, ...]
    starts: tuple[int, ...] = (0,)

    def __post_init__(self):
        if len(self.mazes) != len(self.starts) or self.starts[0] != 0 or list(self.starts) != sorted(set(self.starts)):
            raise PlanningError("a maze schedule needs one increasing start step per maze, the first 0")
        first = self.mazes[0]
        if any(m.shape != first.shape or m.start != first.start or m.goal != first.goal for m in self.mazes):
            raise PlanningError("the mazes of a schedule must have the same size, start and goal")

    def at(self, step: int) -> Maze:
        """The maze in force at `step`."""
        index = int(np.searchsorted(np.asarray(self.starts), step, side="right")) - 1
        return self.mazes[index]


def dyna_maze() -> Maze:
    return parse_maze(DYNA_MAZE)


def blocking_maze(change_at: int = 1000) -> Schedule:
    return Schedule((parse_maze(BLOCKING_BEFORE), parse_maze(BLOCKING_AFTER)), (0, change_at))


def shortcut_maze(change_at: int = 3000) -> Schedule:
    return Schedule((parse_maze(SHORTCUT_BEFORE), parse_maze(SHORTCUT_AFTER)), (0, change_at))
