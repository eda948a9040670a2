"""Tabular Dyna-Q and Dyna-Q+ (the book's section 8.2 and 8.3), many independent runs at once.

Each run has its own Q table, its own model and its own agent in its own copy of the maze; the
runs advance in lockstep, one numpy operation for all of them, so R runs cost little more than one.

A step of one run: pick an action epsilon-greedily (ties broken at random), take it, update Q by
one-step Q-learning on what happened, record it in the model (a deterministic model: the last
reward and next state seen for the pair), then make `planning_steps` Q-learning updates on pairs
drawn at random from the model. With no planning steps this is one-step Q-learning.

Dyna-Q+ adds kappa * sqrt(tau) to a pair's reward, tau the steps since the pair was last tried for
real. With the bonus in planning (the book's Dyna-Q+) the planning draws a visited state and any
action, and an action never tried there is modelled as leading back to the state with reward 0.
With the bonus in action selection (the book's exercise 8.4) the agent picks the action with the
largest Q + kappa * sqrt(tau) and the updates see no bonus.

The random numbers are drawn in a fixed order each step (tests/test_tabular.py replays it):
explore [R] uniform, random action [R] integers, tie keys [R, A] uniform, then per planning step
a pair [R] uniform (and, with the planning bonus, an action [R] integers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .maze import Maze, PlanningError, Schedule

BONUS_PLACES = ("none", "planning", "selection")
NEAR_SHORTEST = 0.2  # a greedy path at most this much longer than a shortest one counts as found


@dataclass(frozen=True)
class DynaConfig:
    """A Dyna agent's parameters (the defaults: the book's figure 8.2)."""

    planning_steps: int = 5
    step_size: float = 0.1
    discount: float = 0.95
    epsilon: float = 0.1
    kappa: float = 0.0
    bonus: str = "none"  # where kappa * sqrt(tau) goes: none (Dyna-Q), planning (Dyna-Q+) or selection

    def __post_init__(self):
        if self.bonus not in BONUS_PLACES:
            raise PlanningError(f"unknown bonus place {self.bonus!r}; use one of {', '.join(BONUS_PLACES)}")
        if self.planning_steps < 0 or not 0 < self.step_size <= 1 or not 0 <= self.discount <= 1 \
                or not 0 <= self.epsilon <= 1 or self.kappa < 0:
            raise PlanningError("Dyna needs planning steps >= 0, a step size in (0, 1], a discount and an "
                                "epsilon in [0, 1] and kappa >= 0")


class DynaAgents:
    """R independent Dyna agents over `states` states and `actions` actions.

    q [R, S, A]; model_next [R, S, A] (-1: never tried), model_reward [R, S, A]; the pairs tried so
    far, in the order first tried, tried_pairs [R, S * A] (pair = state * A + action) with
    tried_count [R]; the states acted in, visited [R, S] with visited_count [R]; last_tried [R, S, A]
    the step a pair was last tried (0 if never); updates [R] the Q updates made."""

    def __init__(self, runs: int, states: int, actions: int, config: DynaConfig, rng: np.random.Generator):
        self.config, self.rng = config, rng
        self.runs, self.actions = runs, actions
        self.rows = np.arange(runs)
        self.q = np.zeros((runs, states, actions))
        self.model_next = np.full((runs, states, actions), -1, dtype=np.int64)
        self.model_reward = np.zeros((runs, states, actions))
        self.tried_pairs = np.zeros((runs, states * actions), dtype=np.int64)
        self.tried_count = np.zeros(runs, dtype=np.int64)
        self.visited = np.zeros((runs, states), dtype=np.int64)
        self.visited_count = np.zeros(runs, dtype=np.int64)
        self.is_visited = np.zeros((runs, states), dtype=bool)
        self.last_tried = np.zeros((runs, states, actions), dtype=np.int64)
        self.updates = np.zeros(runs, dtype=np.int64)
        self.state_offsets = self.rows * states  # row of (run, state) in q_by_state
        self.pair_offsets = self.rows * states * actions  # first entry of a run's table in q.reshape(-1)
        self.q_by_state = self.q.reshape(runs * states, actions)  # (a view)

    def bonus(self, states: np.ndarray, step: int) -> np.ndarray:
        """kappa * sqrt(tau) of every action in `states` [R] -> [R, A]."""
        return self.config.kappa * np.sqrt(step - self.last_tried[self.rows, states])

    def act(self, states: np.ndarray, step: int) -> np.ndarray:
        """Epsilon-greedy actions [R] in `states` [R] at time `step`, ties broken at random."""
        config, rng = self.config, self.rng
        explore = rng.random(self.runs) < config.epsilon
        random_action = rng.integers(self.actions, size=self.runs)
        tie_keys = rng.random((self.runs, self.actions))
        values = self.q[self.rows, states]
        if config.bonus == "selection":
            values = values + self.bonus(states, step)
        best = values == values.max(axis=1, keepdims=True)
        greedy = np.where(best, tie_keys, -1.0).argmax(axis=1)
        return np.where(explore, random_action, greedy)

    def _update(self, states, actions, rewards, next_states) -> None:
        """One Q-learning update per run on (state, action, reward, next_state) [R] each."""
        config = self.config
        flat = self.q.reshape(-1)  # (a view: q's entries by run * S * A + state * A + action)
        pairs = self.pair_offsets + states * self.actions + actions
        target = rewards + config.discount * self.q_by_state[self.state_offsets + next_states].max(axis=1)
        flat[pairs] += config.step_size * (target - flat[pairs])
        self.updates += 1

    def learn(self, states, actions, rewards, next_states, step: int) -> None:
        """Direct Q-learning, the model and the planning after the real step `step` (from 1): all [R]."""
        rows, config = self.rows, self.config
        self._update(states, actions, rewards, next_states)
        new_pair = self.model_next[rows, states, actions] < 0
        self.tried_pairs[rows, self.tried_count] = np.where(new_pair, states * self.actions + actions,
                                                            self.tried_pairs[rows, self.tried_count])
        self.tried_count += new_pair
        new_state = ~self.is_visited[rows, states]
        self.visited[rows, self.visited_count] = np.where(new_state, states, self.visited[rows, self.visited_count])
        self.visited_count += new_state
        self.is_visited[rows, states] = True
        self.model_next[rows, states, actions] = next_states
        self.model_reward[rows, states, actions] = rewards
        self.last_tried[rows, states, actions] = step
        for _ in range(config.planning_steps):
            self.plan(step)

    def plan(self, step: int) -> None:
        """One planning update per run on a pair drawn from its model."""
        rows, rng = self.rows, self.rng
        if self.config.bonus == "planning":
            states = self.visited[rows, (rng.random(self.runs) * self.visited_count).astype(np.int64)]
            actions = rng.integers(self.actions, size=self.runs)
            next_states = self.model_next[rows, states, actions]
            rewards = np.where(next_states < 0, 0.0, self.model_reward[rows, states, actions])
            next_states = np.where(next_states < 0, states, next_states)
            rewards = rewards + self.config.kappa * np.sqrt(step - self.last_tried[rows, states, actions])
        else:
            pairs = self.tried_pairs[rows, (rng.random(self.runs) * self.tried_count).astype(np.int64)]
            states, actions = np.divmod(pairs, self.actions)
            next_states = self.model_next[rows, states, actions]
            rewards = self.model_reward[rows, states, actions]
        self._update(states, actions, rewards, next_states)


def greedy_path_lengths(q: np.ndarray, maze: Maze) -> np.ndarray:
    """Steps from the start to the goal following argmax Q (the first of equal values) in each run's
    table q [R, S, A] -> [R] (-1 where the greedy path does not reach the goal within as many steps
    as there are states)."""
    runs = q.shape[0]
    rows = np.arange(runs)
    states = np.full(runs, maze.start)
    length = np.full(runs, -1, dtype=np.int64)
    for step in range(1, maze.states + 1):
        states = maze.next_state[states, q[rows, states].argmax(axis=1)]
        arrived = (states == maze.goal) & (length < 0)
        length[arrived] = step
        if (length >= 0).all():
            break
    return length


def run_episodes(maze: Maze, config: DynaConfig, runs: int, episodes: int, rng: np.random.Generator,
                 *, max_steps: int = 2_000_000) -> tuple[np.ndarray, np.ndarray]:
    """R runs of `episodes` episodes from the start to the goal: the steps of each episode
    [R, episodes], and the first episode after which the greedy path is a shortest path [R]
    (episodes + 1 if never). Raises PlanningError past `max_steps` steps."""
    agents = DynaAgents(runs, maze.states, len(maze.next_state[0]), config, rng)
    shortest = maze.shortest_path()
    steps = np.zeros((runs, episodes), dtype=np.int64)
    done = np.zeros(runs, dtype=np.int64)
    optimal_after = np.full(runs, episodes + 1, dtype=np.int64)
    states = np.full(runs, maze.start)
    length = np.zeros(runs, dtype=np.int64)
    step = 0
    while done.min() < episodes:
        step += 1
        if step > max_steps:
            raise PlanningError(f"the runs did not finish {episodes} episodes in {max_steps:,} steps")
        actions = agents.act(states, step)
        next_states = maze.next_state[states, actions]
        arrived = next_states == maze.goal
        agents.learn(states, actions, arrived.astype(np.float64), next_states, step)
        length += 1
        finished = np.flatnonzero(arrived & (done < episodes))
        if len(finished):
            steps[finished, done[finished]] = length[finished]
            done[finished] += 1
            unknown = finished[optimal_after[finished] > episodes]
            if len(unknown):
                optimal = greedy_path_lengths(agents.q[unknown], maze) == shortest
                optimal_after[unknown[optimal]] = done[unknown[optimal]]
        length[arrived] = 0
        states = np.where(arrived, maze.start, next_states)
    return steps, optimal_after


def run_steps(schedule: Schedule, config: DynaConfig, runs: int, steps: int,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """R runs of `steps` steps in a maze that may change: the cumulative reward after each step
    [R, steps] (the agent returns to the start at each arrival and goes on), and the Q tables at
    the end [R, S, A]."""
    first = schedule.mazes[0]
    agents = DynaAgents(runs, first.states, len(first.next_state[0]), config, rng)
    states = np.full(runs, first.start)
    total = np.zeros(runs)
    cumulative = np.zeros((runs, steps))
    for step in range(1, steps + 1):
        maze = schedule.at(step - 1)
        actions = agents.act(states, step)
        next_states = maze.next_state[states, actions]
        arrived = next_states == maze.goal
        agents.learn(states, actions, arrived.astype(np.float64), next_states, step)
        total += arrived
        cumulative[:, step - 1] = total
        states = np.where(arrived, maze.start, next_states)
    return cumulative, agents.q


def run_until_near_shortest(maze: Maze, config: DynaConfig, runs: int, rng: np.random.Generator,
                            *, max_steps: int = 10_000_000) -> np.ndarray:
    """Q updates (real and planned) each of R runs makes until, at the end of an episode, its greedy
    path from the start is at most NEAR_SHORTEST longer than a shortest path [R] (the book's example
    8.4 counts updates until an optimal path; exactly optimal would measure how long epsilon-greedy
    takes to stumble on the last pair of a shortest path more than the planning)."""
    agents = DynaAgents(runs, maze.states, len(maze.next_state[0]), config, rng)
    longest = int(maze.shortest_path() * (1 + NEAR_SHORTEST))
    found = np.full(runs, -1, dtype=np.int64)
    states = np.full(runs, maze.start)
    step = 0
    while (found < 0).any():
        step += 1
        if step > max_steps:
            raise PlanningError(f"Dyna-Q did not find a shortest path in {max_steps:,} steps")
        actions = agents.act(states, step)
        next_states = maze.next_state[states, actions]
        arrived = next_states == maze.goal
        agents.learn(states, actions, arrived.astype(np.float64), next_states, step)
        check = np.flatnonzero(arrived & (found < 0))
        if len(check):
            lengths = greedy_path_lengths(agents.q[check], maze)
            near = (lengths >= 0) & (lengths <= longest)
            found[check[near]] = agents.updates[check[near]]
        states = np.where(arrived, maze.start, next_states)
    return found
