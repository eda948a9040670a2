"""Nim with one pile (the subtraction game {1, 2, 3}), batched.

Options: pile (1..100, default 15) chips at the start; misere (default false).
The players take turns removing 1, 2 or 3 chips, never more than remain. In normal
play whoever takes the last chip wins; in misère play whoever takes it loses.

Theory (checked by tests/test_nim.py): in normal play the player to move loses
exactly when chips % 4 == 0; in misère play exactly when chips % 4 == 1.

Actions: index = chips taken - 1, written "1", "2", "3".

Planes, on a board of shape (1, pile + 1): a one-hot plane of the chips remaining
(cell c is 1 when c chips remain) and a plane of ones when the variant is misère.
Nim is impartial, so the planes look the same to both players. The only symmetry
is the identity.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import Game, GameError, Option, State, Symmetry, player_sign

MAX_TAKE = 3
PLAYERS = ("first player", "second player")


@dataclass(eq=False)
class NimState(State):
    """A batch of Nim positions.

    Fields (besides State's):
      chips: long [B]  chips left in the pile
    """

    chips: torch.Tensor


class Nim(Game):
    name = "nim"
    options = {
        "pile": Option(15, int, lambda v: 1 <= v <= 100, "1..100"),
        "misere": Option(False, bool, allowed="true or false"),
    }
    state_type = NimState
    has_board = False

    def __init__(self, **options):
        super().__init__(**options)
        self.pile: int = self.config["pile"]
        self.misere: bool = self.config["misere"]
        self.board_shape = (1, self.pile + 1)
        self.num_actions = MAX_TAKE
        self.num_planes = 2
        self.symmetries = [
            Symmetry("identity", torch.arange(MAX_TAKE), torch.arange(self.pile + 1), self.board_shape)
        ]

    # -- rules --------------------------------------------------------------------------------
    def initial_state(self, batch: int = 1, device="cpu") -> NimState:
        return NimState(
            to_play=torch.zeros(batch, dtype=torch.long, device=device),
            move_number=torch.zeros(batch, dtype=torch.long, device=device),
            done=torch.zeros(batch, dtype=torch.bool, device=device),
            winner=torch.zeros(batch, dtype=torch.int8, device=device),
            chips=torch.full((batch,), self.pile, dtype=torch.long, device=device),
        )

    def legal_mask(self, state: NimState) -> torch.Tensor:
        """bool [B, 3]: taking a + 1 chips is legal when that many remain and the game is on."""
        take = torch.arange(1, MAX_TAKE + 1, device=state.device)
        return (take <= state.chips.unsqueeze(1)) & ~state.done.unsqueeze(1)

    def _apply(self, state: NimState, action: torch.Tensor) -> NimState:
        # Finished games (0 chips) bring action 0 here: clamp so the pile never goes negative.
        chips = (state.chips - (action + 1)).clamp(min=0)
        done = chips == 0
        mover = player_sign(state.to_play).to(torch.int8)
        taker_wins = -mover if self.misere else mover
        return NimState(
            to_play=1 - state.to_play,
            move_number=state.move_number + 1,
            done=done,
            winner=torch.where(done, taker_wins, torch.zeros_like(mover)),
            chips=chips,
        )

    def illegal_reason(self, state: NimState, action: int) -> str:
        chips = int(state.chips[0])
        return f"only {chips} chip{'s' if chips != 1 else ''} left"

    def moves_left(self, state: NimState) -> torch.Tensor:
        """long [B]: a move takes two chips on average, and every other move is the opponent's."""
        return (state.chips + 3) // 4

    def encode(self, state: NimState) -> torch.Tensor:
        """float [B, 2, 1, pile + 1]: chips remaining one-hot, misère flag."""
        batch = state.batch_size
        cells = torch.arange(self.pile + 1, device=state.device)
        remaining = (cells == state.chips.unsqueeze(1)).float()  # [B, pile + 1]
        flag = torch.full_like(remaining, 1.0 if self.misere else 0.0)
        return torch.stack([remaining, flag], dim=1).view(batch, 2, 1, self.pile + 1)

    # -- text ---------------------------------------------------------------------------------
    def format_action(self, action: int) -> str:
        return str(int(action) + 1)

    def parse_action(self, text: str) -> int:
        t = text.strip()
        if t not in {str(n) for n in range(1, MAX_TAKE + 1)}:
            raise GameError(f"{self.name}: cannot read move {text!r}; write the chips to take, 1..{MAX_TAKE}")
        return int(t) - 1

    def describe(self) -> str:
        rule = "misère: taking the last chip loses" if self.misere else "taking the last chip wins"
        return f"nim, pile of {self.pile}, take 1..{MAX_TAKE} ({rule})"

    def render(self, state: NimState, index: int = 0) -> str:
        chips = int(state.chips[index])
        pile = f"pile: {chips} chip{'s' if chips != 1 else ''}"
        if bool(state.done[index]):
            winner = int(state.winner[index])
            status = f"{PLAYERS[0 if winner > 0 else 1]} won"
        else:
            status = f"{PLAYERS[int(state.to_play[index])]} to move"
        return f"{self.describe()}\n{pile}, {status}"
