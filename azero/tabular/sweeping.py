"""Prioritized sweeping (the book's section 8.4) on deterministic mazes, and value iteration to check it.

The agent keeps a deterministic model of what it has seen and, for every state, the pairs seen to
lead into it (its predecessors). A real step does no direct update: it puts its pair in a priority
queue with priority |R + gamma max_a Q(S', a) - Q(S, A)| if that is above the threshold, then
makes up to `planning_steps` updates, each on the pair of highest priority, after which the
predecessors of the updated state are queued with their own priorities. A pair already queued
keeps the larger of its two priorities.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass

import numpy as np

from .dyna import NEAR_SHORTEST, greedy_path_lengths
from .maze import Maze, PlanningError


@dataclass(frozen=True)
class SweepingConfig:
    """Prioritized sweeping's parameters (the defaults: those this package uses for example 8.4)."""

    planning_steps: int = 5
    step_size: float = 1.0
    discount: float = 0.95
    epsilon: float = 0.1
    threshold: float = 1e-4


class PriorityQueue:
    """State-action pairs by priority, largest first; pushing a queued pair keeps its larger priority."""

    def __init__(self):
        self.heap: list[tuple[float, int, int]] = []
        self.priority: dict[int, float] = {}
        self.pushes = 0

    def __len__(self) -> int:
        return len(self.priority)

    def push(self, pair: int, priority: float) -> None:
        if self.priority.get(pair, -1.0) >= priority:
            return
        self.priority[pair] = priority
        self.pushes += 1
        heapq.heappush(self.heap, (-priority, self.pushes, pair))  # (the count keeps equal priorities first in, first out)

    def pop(self) -> int:
        while True:
            negative, _, pair = heapq.heappop(self.heap)
            if self.priority.get(pair) == -negative:
                del self.priority[pair]
                return pair


class SweepingAgent:
    """One prioritized-sweeping agent: q [S][A] (lists: one value at a time is faster so), its model
    and the predecessors learnt from its steps."""

    def __init__(self, states: int, actions: int, config: SweepingConfig, rng: random.Random):
        self.config, self.rng, self.actions = config, rng, actions
        self.q = [[0.0] * actions for _ in range(states)]
        self.model: dict[int, tuple[float, int]] = {}  # pair -> (reward, next state)
        self.predecessors: dict[int, set[int]] = {}  # state -> the pairs seen to lead into it
        self.queue = PriorityQueue()
        self.updates = 0

    def act(self, state: int) -> int:
        """Epsilon-greedy, ties broken at random."""
        if self.rng.random() < self.config.epsilon:
            return self.rng.randrange(self.actions)
        values = self.q[state]
        best = max(values)
        ties = [action for action, value in enumerate(values) if value == best]
        return ties[0] if len(ties) == 1 else ties[self.rng.randrange(len(ties))]

    def priority(self, pair: int) -> float:
        reward, next_state = self.model[pair]
        state, action = divmod(pair, self.actions)
        return abs(reward + self.config.discount * max(self.q[next_state]) - self.q[state][action])

    def observe(self, state: int, action: int, reward: float, next_state: int) -> None:
        """Record a transition in the model and queue its pair if its priority is above the threshold."""
        pair = state * self.actions + action
        old = self.model.get(pair)
        if old is not None and old[1] != next_state:
            self.predecessors[old[1]].discard(pair)
        self.model[pair] = (reward, next_state)
        self.predecessors.setdefault(next_state, set()).add(pair)
        priority = self.priority(pair)
        if priority > self.config.threshold:
            self.queue.push(pair, priority)

    def sweep(self, limit: int | None) -> None:
        """Up to `limit` updates (None: until the queue is empty) on the pairs of highest priority."""
        config, q = self.config, self.q
        done = 0
        while self.queue and (limit is None or done < limit):
            pair = self.queue.pop()
            state, action = divmod(pair, self.actions)
            reward, next_state = self.model[pair]
            q[state][action] += config.step_size * (reward + config.discount * max(q[next_state]) - q[state][action])
            self.updates += 1
            done += 1
            for predecessor in self.predecessors.get(state, ()):
                priority = self.priority(predecessor)
                if priority > config.threshold:
                    self.queue.push(predecessor, priority)


def sweeping_until_near_shortest(maze: Maze, config: SweepingConfig, seed: int, *,
                                 max_steps: int = 10_000_000) -> int:
    """Q updates a prioritized-sweeping agent makes until, at the end of an episode, its greedy path
    from the start is at most NEAR_SHORTEST longer than a shortest path (as dyna.run_until_near_shortest)."""
    agent = SweepingAgent(maze.states, maze.next_state.shape[1], config, random.Random(seed))
    longest = int(maze.shortest_path() * (1 + NEAR_SHORTEST))
    state = maze.start
    next_table = maze.next_state.tolist()
    for _ in range(max_steps):
        action = agent.act(state)
        next_state = next_table[state][action]
        arrived = next_state == maze.goal
        agent.observe(state, action, float(arrived), next_state)
        agent.sweep(config.planning_steps)
        if arrived:
            if 0 <= greedy_path_lengths(np.array(agent.q)[None], maze)[0] <= longest:
                return agent.updates
            next_state = maze.start
        state = next_state
    raise PlanningError(f"prioritized sweeping did not find a shortest path in {max_steps:,} steps")


def value_iteration(maze: Maze, discount: float, *, tolerance: float = 0.0, max_sweeps: int = 100_000) -> np.ndarray:
    """The optimal action values q* [S, A] of a maze (reward 1 on reaching the goal, which ends the
    episode), by synchronous sweeps until no value changes by more than `tolerance`. Rows of walls
    and of the goal are 0."""
    rewards = (maze.next_state == maze.goal).astype(np.float64)
    q = np.zeros(maze.next_state.shape)
    acting = ~maze.walls.ravel()
    acting[maze.goal] = False
    for _ in range(max_sweeps):
        new = np.where(acting[:, None], rewards + discount * q.max(axis=1)[maze.next_state], 0.0)
        if np.abs(new - q).max() <= tolerance:
            return new
        q = new
    raise PlanningError(f"value iteration did not converge in {max_sweeps:,} sweeps")


def sweep_known_maze(maze: Maze, config: SweepingConfig) -> SweepingAgent:
    """Prioritized sweeping with the whole maze as its model (every open cell's every move observed
    once, in state order), swept until the queue is empty."""
    agent = SweepingAgent(maze.states, maze.next_state.shape[1], config, random.Random(0))
    for state in maze.open_states():
        if state == maze.goal:
            continue
        for action, next_state in enumerate(maze.next_state[state]):
            agent.observe(int(state), action, float(next_state == maze.goal), int(next_state))
    agent.sweep(None)
    return agent

