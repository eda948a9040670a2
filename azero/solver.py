"""Exact solutions of small games by exhaustive search (tic-tac-toe, Nim, tiny boards).

`Solver(game)` explores every position reachable from the start in batches (one
breadth-first layer at a time, with duplicate positions merged), then computes the
game-theoretic value of each position backwards.  It backs the `perfect` player,
the known-count tests and the learnability test; `Solver(game, root=state)` solves
the game from one position instead (a late Connect Four position, say, to check
another solver against).
"""

from __future__ import annotations

import dataclasses

import torch

from games import Game, State, player_sign

from .errors import UserError


def state_key(state: State) -> list[bytes]:
    """One hashable key per game in the batch: the bytes of every field except move counters."""
    parts = []
    for f in dataclasses.fields(state):
        if f.name in ("move_number", "last_action"):
            continue
        t = getattr(state, f.name)
        parts.append(t.reshape(t.shape[0], -1).to(torch.int64).cpu())
    flat = torch.cat(parts, dim=1).numpy()
    return [row.tobytes() for row in flat]


class Solver:
    """Exact values of every position reachable from `game.initial_state()`.

    `value(state)` -> float [B]: +1 if the player to move wins with best play, 0 draw, -1 loss.
    `best_actions(state)` -> bool [B, A]: the actions that keep that value.
    """

    def __init__(self, game: Game, max_positions: int = 2_000_000, *, root: State | None = None):
        if root is not None and root.batch_size != 1:
            raise ValueError(f"a solver's root is one position, not {root.batch_size}")
        self.game = game
        # Layer d holds the distinct positions after d plies; a position reachable after
        # different numbers of plies (Nim) sits in several layers, so children of layer d
        # are all in layer d + 1 and values can be computed layer by layer backwards.
        layers: list[State] = []
        seen: set[bytes] = set()
        frontier = game.initial_state(1) if root is None else root
        self._keys_per_layer: list[list[bytes]] = []
        while frontier.batch_size:
            keys = state_key(frontier)
            keep, fresh_keys, in_layer = [], [], set()
            for i, k in enumerate(keys):
                if k not in in_layer:
                    in_layer.add(k)
                    keep.append(i)
                    fresh_keys.append(k)
            seen |= in_layer
            frontier = frontier[torch.tensor(keep, dtype=torch.long)]
            layers.append(frontier)
            self._keys_per_layer.append(fresh_keys)
            if len(seen) > max_positions:
                raise UserError(f"{game.spec} is too large to solve exactly (over {max_positions} positions)")
            live = frontier[~frontier.done]
            if not live.batch_size:
                break
            mask = game.legal_mask(live)
            if len(seen) + int(mask.sum()) > max_positions:  # the next layer, before merging duplicates
                raise UserError(f"{game.spec} is too large to solve exactly (over {max_positions} positions)")
            parent, action = mask.nonzero(as_tuple=True)
            frontier = game.step(live[parent], action)
        self.num_positions = len(seen)
        self._layers = layers
        # values backwards: value for the player to move, +1 win / 0 draw / -1 loss
        self._value: dict[bytes, float] = {}
        for layer, keys in zip(reversed(layers), reversed(self._keys_per_layer)):
            values = self._values_from_children(layer)
            for k, v in zip(keys, values.tolist()):
                self._value[k] = v

    def _child_values(self, states: State) -> tuple[torch.Tensor, torch.Tensor]:
        """For each game and action: the value for the player to move here (-inf where illegal)."""
        mask = self.game.legal_mask(states)
        out = torch.full(mask.shape, -float("inf"))
        parent, action = mask.nonzero(as_tuple=True)
        if len(parent):
            children = self.game.step(states[parent], action)
            same_player = children.to_play == states.to_play[parent]
            child = torch.tensor([self._value[k] for k in state_key(children)])
            out[parent, action] = torch.where(same_player, child, -child)
        return out, mask

    def _values_from_children(self, states: State) -> torch.Tensor:
        result = self.game.result(states) * player_sign(states.to_play).float()
        values = result.clone()
        live = (~states.done).nonzero().squeeze(1)
        if len(live):
            child, _ = self._child_values(states[live])
            values[live] = child.max(dim=1).values
        return values

    def positions(self, *, finished: bool = False) -> State:
        """Every distinct reachable position (unfinished ones only, unless `finished`)."""
        seen: set[bytes] = set()
        parts = []
        for layer in self._layers:
            keep = []
            for i, key in enumerate(state_key(layer)):
                if key not in seen and (finished or not bool(layer.done[i])):
                    seen.add(key)
                    keep.append(i)
            if keep:
                parts.append(layer[torch.tensor(keep, dtype=torch.long)])
        return State.cat(parts)

    def value(self, states: State) -> torch.Tensor:
        """float [B]: exact value for the player to move."""
        try:
            return torch.tensor([self._value[k] for k in state_key(states)])
        except KeyError:
            raise UserError("position is not reachable from the solver's root (the start of the game)") from None

    def best_actions(self, states: State) -> torch.Tensor:
        """bool [B, A]: the optimal actions (empty for finished games)."""
        child, mask = self._child_values(states)
        best = child.max(dim=1, keepdim=True).values
        return mask & (child == best)
