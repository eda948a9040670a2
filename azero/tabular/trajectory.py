"""Trajectory sampling (the book's section 8.6, figure 8.8): expected updates spread uniformly over
all state-action pairs, or along trajectories of the current epsilon-greedy policy.

A task: n states, 2 actions in each; a pair leads with equal probability to one of its b
successors (drawn at random when the task is made), each transition paying its own reward drawn
from a standard normal, and every transition ends the episode with probability 0.1 (reward 0).
Episodes start in state 0; there is no discounting. An expected update sets
Q(s, a) = 0.9 * mean_j (r(s, a, j) + max_a' Q(s_j, a')).

Many tasks run at once: every array has the tasks on its first axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ACTIONS = 2
TERMINATION = 0.1
EPSILON = 0.1


@dataclass(frozen=True)
class Tasks:
    """T random tasks: successors [T, n, 2, b] (state numbers) and rewards [T, n, 2, b]."""

    successors: np.ndarray
    rewards: np.ndarray

    @property
    def count(self) -> int:
        return self.successors.shape[0]

    @property
    def states(self) -> int:
        return self.successors.shape[1]


def make_tasks(count: int, states: int, branching: int, rng: np.random.Generator) -> Tasks:
    successors = rng.integers(states, size=(count, states, ACTIONS, branching), dtype=np.int32)
    return Tasks(successors, rng.standard_normal((count, states, ACTIONS, branching)))


def expected_update(tasks: Tasks, q: np.ndarray, states: np.ndarray, actions: np.ndarray) -> None:
    """One expected update in each task, on its pair (states [T], actions [T]); q [T, n, 2] in place."""
    rows = np.arange(tasks.count)
    successors = tasks.successors[rows, states, actions]  # [T, b]
    best = q[rows[:, None], successors].max(axis=2)  # [T, b]
    q[rows, states, actions] = (1 - TERMINATION) * (tasks.rewards[rows, states, actions] + best).mean(axis=1)


def greedy_start_values(tasks: Tasks, q: np.ndarray, guess: np.ndarray | None = None,
                        tolerance: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """The value of state 0 under the greedy policy of q [T, n, 2] in each task [T], by iterative
    policy evaluation until no value moves by more than `tolerance`; also all the values [T, n]
    (pass them back as `guess` to start the next evaluation from them)."""
    count, states = tasks.count, tasks.states
    policy = q.argmax(axis=2)  # [T, n]
    task_rows = np.arange(count)[:, None]
    state_columns = np.arange(states)[None, :]
    successors = tasks.successors[task_rows, state_columns, policy]  # [T, n, b]
    mean_reward = tasks.rewards[task_rows, state_columns, policy].mean(axis=2)  # [T, n]
    values = np.zeros((count, states)) if guess is None else guess.copy()
    flat = (successors + (np.arange(count) * states)[:, None, None]).reshape(count, -1)
    branching = successors.shape[2]
    while True:
        following = values.ravel()[flat].reshape(count, states, branching).sum(axis=2) / branching
        new = (1 - TERMINATION) * (mean_reward + following)
        if np.abs(new - values).max() <= tolerance:
            return new[:, 0], new
        values = new


def run(tasks: Tasks, updates: int, every: int, on_policy: bool, rng: np.random.Generator) -> np.ndarray:
    """Start-state values under the greedy policy [updates // every + 1, T], measured after
    0, every, 2 every, ... expected updates in each task: uniform (the pairs in turn, state by
    state) or on-policy (the pairs met along epsilon-greedy episodes from state 0)."""
    count, states = tasks.count, tasks.states
    rows = np.arange(count)
    q = np.zeros((count, states, ACTIONS))
    values, guess = greedy_start_values(tasks, q)
    measured = [values]
    current = np.zeros(count, dtype=np.int64)
    for update in range(updates):
        if on_policy:
            explore = rng.random(count) < EPSILON
            random_action = rng.integers(ACTIONS, size=count)
            pair_values = q[rows, current]
            greedy = np.where(pair_values[:, 0] == pair_values[:, 1], rng.integers(ACTIONS, size=count),
                              pair_values.argmax(axis=1))
            actions = np.where(explore, random_action, greedy)
            expected_update(tasks, q, current, actions)
            ended = rng.random(count) < TERMINATION
            following = tasks.successors[rows, current, actions, rng.integers(tasks.successors.shape[3], size=count)]
            current = np.where(ended, 0, following)
        else:
            pair = update % (states * ACTIONS)
            expected_update(tasks, q, np.full(count, pair // ACTIONS), np.full(count, pair % ACTIONS))
        if (update + 1) % every == 0:
            values, guess = greedy_start_values(tasks, q, guess)
            measured.append(values)
    return np.array(measured)
