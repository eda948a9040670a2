"""Go on a size x size board (5..19), batched, with area scoring and positional superko.

Options: size (5..19, default 9); komi (float, default 7.5), added to white's score.
Black (X, first player, +1) moves first. A move places a stone on an empty point; opponent
chains left without a liberty are removed; a move that leaves its own chain without a
liberty (suicide) is illegal, and so is a move that recreates any earlier whole-board
position of the game (positional superko). Pass is the last action (H * W) and is always
legal in an unfinished game. The game ends after two consecutive passes or after
3 * H * W plies, and is then scored Tromp-Taylor: a player's score is their stones plus the
empty regions that reach only their colour; white adds komi; more wins, equal draws.

Actions are points, row * width + col, row 0 at the top. Moves are written GTP style: a
column letter A..T without I and a row number counted from the bottom ("A1" is the
bottom-left corner), or "pass"; parsing ignores case.

Planes (from the view of the player to move): own stones, opponent stones, the legal
points, the last move, a plane of ones, and a plane of ones when black is to move (komi
makes colour matter).

How the rules vectorise (all games at once, no loop over games; N = H * W; boards flat
[B, N + 1] with an off-board pad cell last, neighbours read by one gather of a fixed table):
chains are labelled by neighbour propagation of the smallest label with root hooking and
pointer jumping (`chain_labels`, a handful of rounds); liberties are counted per chain by a
scatter-add that counts each empty point once per chain; a move captures the opponent
chains left without a liberty. The legal points of the player to move are computed once
per step and kept in the state (`legal`), so `legal_mask` and `encode` cost almost nothing.

Positional superko. A position's hash is the sum of per-point Zobrist numbers (below 2^54,
so sums never overflow); sums are scatter-addable, so the hash after every candidate move
(stone added, captured chains' hash sums taken away) is known for the whole board at
once. `history` holds the hashes of every position of the game so far as a *sorted* row
(unused slots hold INT64_MAX), so membership is one batched `searchsorted`.

Symmetries and the history. Hashes cannot be moved by a board transform, so they never
are: each state records in `frame` which of the 8 dihedral transforms takes the board its
history was hashed on to its board, and hashes positions in that original orientation (one
Zobrist table per frame). `transform_state` moves the board, the legal points and the last
move and composes `frame`, so a transformed state is an exactly correct Go state (superko
included), stepping commutes with every symmetry, and the cost is one long per game.
A 9 x 9 state is about 2.2 KB, mostly the history (244 int64).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import (
    BoardState,
    Game,
    GameError,
    Option,
    board_symmetries,
    player_sign,
    sample_uniform_legal,
    stone_planes,
)
from .keyed_random import Source, advance, subset
from .options import is_whole_number

STONES = {1: "X", -1: "O", 0: "."}
PASS_TEXT = "pass"
GTP_LETTERS = "ABCDEFGHJKLMNOPQRST"  # no I
OFF_BOARD = 2  # colour of the pad cell: matches no stone and no empty point
EMPTY_SLOT = torch.iinfo(torch.long).max  # unused history slots (sort last)
HASH_BITS = 54  # 361 numbers below 2^54 never overflow int64 when summed
MOVE_CAP_FACTOR = 3


@dataclass(eq=False)
class GoState(BoardState):
    """A batch of Go positions.

    Fields (besides BoardState's; `last_action` is the pass H * W after a pass):
      legal:   bool [B, H, W]  the points where the player to move may play (all False when over)
      history: long [B, L]     hashes of every position of the game so far, sorted, INT64_MAX
                               in unused slots; L = 3 * H * W + 1
      frame:   long [B]        the board transform (index into Go's frames, the dihedral group)
                               taking the board the history was hashed on to this board
    """

    legal: torch.Tensor
    history: torch.Tensor
    frame: torch.Tensor


def neighbour_table(size: int) -> torch.Tensor:
    """long [4 * N]: the up, down, left, right neighbours of cells 0..N-1 (N = size * size),
    direction-major (block k holds every cell's k-th neighbour); off-board ones point at the pad N."""
    cells = size * size
    table = torch.full((cells, 4), cells, dtype=torch.long)
    for row in range(size):
        for col in range(size):
            for k, (r, c) in enumerate(((row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1))):
                if 0 <= r < size and 0 <= c < size:
                    table[row * size + col, k] = r * size + c
    return table.t().reshape(-1)


def around(values: torch.Tensor, neighbours: torch.Tensor) -> torch.Tensor:
    """The four neighbours' values: [B, N + 1] -> [B, 4, N] (neighbours: `neighbour_table`)."""
    batch, cells = values.shape[0], values.shape[1] - 1
    return values.gather(1, neighbours.view(1, -1).expand(batch, -1)).view(batch, 4, cells)


def any_side(flags: torch.Tensor) -> torch.Tensor:
    """bool [B, 4, N] per neighbour -> bool [B, N] for any (faster than `any(dim=1)` on a CPU)."""
    return (flags[:, 0] | flags[:, 1]) | (flags[:, 2] | flags[:, 3])


def chain_labels(padded: torch.Tensor, neighbours: torch.Tensor, connect_empty: bool) -> torch.Tensor:
    """The smallest cell of each cell's chain: long [B, N + 1] (the pad keeps label N).

    padded: int8 [B, N + 1] (+1 / -1 / 0, pad OFF_BOARD); neighbours: `neighbour_table`.
    Stones of one colour connect; empty points connect to each other only if `connect_empty`.
    Each round every cell sees its same-colour neighbours' labels, each root takes the
    smallest label its members see (hooking), and every cell jumps twice up its tree.
    """
    batch, cells = padded.shape[0], padded.shape[1] - 1
    colour = padded[:, :cells]
    same = around(padded, neighbours) == colour.unsqueeze(1)
    if not connect_empty:
        same &= (colour != 0).unsqueeze(1)
    own = torch.arange(cells, device=padded.device).view(1, 1, cells)
    # where the neighbour is not of the same colour, look at the cell itself instead
    look = torch.where(same, neighbours.view(1, 4, cells), own).view(batch, 4 * cells)
    label = torch.arange(cells + 1, device=padded.device).expand(batch, cells + 1).contiguous()
    while True:
        seen = label.gather(1, look).view(batch, 4, cells)
        seen = torch.minimum(torch.minimum(seen[:, 0], seen[:, 1]), torch.minimum(seen[:, 2], seen[:, 3]))
        parent = label.scatter_reduce(1, label[:, :cells], torch.minimum(label[:, :cells], seen), "amin")
        parent = parent.gather(1, parent)
        parent = parent.gather(1, parent)
        if torch.equal(parent, label):
            return label
        label = parent


def frame_index(perms: torch.Tensor, perm: torch.Tensor) -> int:
    """The row of `perms` (long [F, N]) equal to `perm` (long [N])."""
    return int((perms == perm).all(dim=1).nonzero()[0, 0])


def dihedral_frames(symmetries) -> torch.Tensor:
    """long [F, N]: the cell permutations of the symmetries, deduplicated and closed under
    composition (the whole dihedral group, whatever subset or repeats `symmetries` holds)."""
    frames = []
    for perm in [s.cell_perm for s in symmetries]:
        if not any(torch.equal(perm, f) for f in frames):
            frames.append(perm)
    grown = True
    while grown:
        grown = False
        for a in list(frames):
            for b in list(frames):
                if not any(torch.equal(a[b], f) for f in frames):
                    frames.append(a[b])
                    grown = True
    return torch.stack(frames)


class Go(Game):
    name = "go"
    board_style = "lines"
    options = {
        "size": Option(9, int, lambda v: 5 <= v <= 19, "5..19"),
        "komi": Option(7.5, float, lambda v: abs(v) <= 361, "a number, -361..361"),
    }
    state_type = GoState
    board_fields = ("board", "legal")
    action_fields = ("last_action",)
    has_score = True
    has_ownership = True
    sgf_game_type = 1
    sgf_default_size = 19
    gtp_playable = True

    def __init__(self, **options):
        super().__init__(**options)
        size = self.config["size"]
        self.size = self.height = self.width = size
        self.komi = self.config["komi"]
        self.num_cells = size * size
        self.pass_action = self.num_cells
        self.board_shape = (size, size)
        self.num_actions = self.num_cells + 1
        self.num_planes = 6
        self.move_cap = MOVE_CAP_FACTOR * self.num_cells
        self.symmetries = board_symmetries(size, size, extra_actions=1)
        perms = dihedral_frames(self.symmetries)  # [F, N] cell -> its image
        self._frame_perms = perms
        self._compose = torch.tensor(
            [[frame_index(perms, perms[s][perms[f]]) for f in range(len(perms))] for s in range(len(perms))]
        )  # [F, F]: the frame after transform s is applied to a state in frame f
        generator = torch.Generator().manual_seed(0x60)
        numbers = torch.randint(1, 1 << HASH_BITS, (3, self.num_cells), generator=generator)
        numbers[1] = 0  # empty points hash to nothing; rows: white, empty, black
        # zobrist[f, colour + 1, c]: the number of the point that lands on cell c in frame f.
        self._zobrist = numbers[:, torch.argsort(perms, dim=1)].permute(1, 0, 2).reshape(-1)
        self._neighbours = neighbour_table(size)
        self._tables: dict[torch.device, tuple[torch.Tensor, ...]] = {}

    def canonical_config(self, config: dict) -> dict:
        return {**config, "komi": config["komi"] + 0.0}  # komi -0 is komi 0

    def _on(self, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(neighbours, zobrist, compose) on `device`."""
        device = torch.device(device)
        if device not in self._tables:
            self._tables[device] = (self._neighbours.to(device), self._zobrist.to(device), self._compose.to(device))
        return self._tables[device]

    # -- rules --------------------------------------------------------------------------------
    def _hashes(self, colour: torch.Tensor, frame: torch.Tensor) -> torch.Tensor:
        """The Zobrist numbers of cells holding `colour` (int [B, N], +1 / -1 / 0) as seen from
        `frame` (long [B]): long [B, N] (0 for empty points)."""
        _, zobrist, _ = self._on(colour.device)
        cells = self.num_cells
        index = frame.view(-1, 1) * (3 * cells) + (colour.long() + 1) * cells
        return zobrist[index + torch.arange(cells, device=colour.device)]

    def _moves(self, padded, labels, colour, frame, history, cell_hash) -> tuple[torch.Tensor, torch.Tensor]:
        """(placeable, legal), bool [B, N]: the points where `colour` (int8 [B]) may place a stone
        without suicide, and those of them that also keep positional superko.

        padded: int8 [B, N + 1] the board, pad OFF_BOARD; labels: long [B, N + 1] stone chains
        (`chain_labels`; labels of empty points are ignored); history: long [B, L] sorted hashes;
        cell_hash: long [B, N] the Zobrist numbers of the stones on the board (`_hashes`).
        """
        batch, cells = padded.shape[0], self.num_cells
        neighbours, _, _ = self._on(padded.device)
        board = padded[:, :cells]
        side = around(padded, neighbours)  # [B, 4, N]
        stone_label = torch.where(padded != 0, labels, cells)
        stone_label[:, cells] = cells
        side_label = around(stone_label, neighbours)
        # an empty point counts once for each different chain beside it
        first = torch.ones_like(side, dtype=torch.bool)
        for j in range(1, 4):
            for k in range(j):
                first[:, j] &= side_label[:, j] != side_label[:, k]
        counts = (first & (board == 0).unsqueeze(1) & (side_label < cells)).to(torch.int32)
        liberties = torch.zeros(batch, cells + 1, dtype=torch.int32, device=padded.device)
        liberties.scatter_add_(1, side_label.view(batch, -1), counts.view(batch, -1))
        side_liberties = liberties.gather(1, side_label.view(batch, -1)).view(batch, 4, cells)
        me = colour.view(batch, 1, 1)
        captures = (side == -me) & (side_liberties == 1)
        placeable = (board == 0) & any_side((side == 0) | ((side == me) & (side_liberties >= 2)) | captures)
        chain_hash = torch.zeros(batch, cells + 1, dtype=torch.long, device=padded.device)
        chain_hash.scatter_add_(1, stone_label[:, :cells], cell_hash)  # chain_hash[:, N] stays 0
        captured_label = torch.where(captures & first, side_label, cells).view(batch, -1)
        taken = chain_hash.gather(1, captured_label).view(batch, 4, cells).sum(dim=1)
        stone = self._hashes(colour.view(batch, 1).expand(batch, cells), frame)
        after = cell_hash.sum(dim=1, keepdim=True) + stone - taken
        slot = torch.searchsorted(history, after).clamp_(max=history.shape[1] - 1)
        repeats = history.gather(1, slot) == after
        return placeable, placeable & ~repeats

    def _settle(self, padded, labels, to_play, history, frame, done, **fields) -> GoState:
        """The state with board `padded` (int8 [B, N + 1], pad OFF_BOARD) after a move: records
        the position in `history` (long [B, L]), computes the legal points of `to_play` and the
        winner of games that are `done`. labels: stone chains of the board, or None."""
        batch, cells = padded.shape[0], self.num_cells
        neighbours, _, _ = self._on(padded.device)
        if labels is None:
            labels = chain_labels(padded, neighbours, connect_empty=False)
        board = padded[:, :cells]
        cell_hash = self._hashes(board, frame)
        position = cell_hash.sum(dim=1, keepdim=True)  # [B, 1]
        slot = torch.searchsorted(history, position)
        index = torch.arange(history.shape[1], device=padded.device).view(1, -1)
        shifted = history.gather(1, (index - 1).clamp(min=0).expand_as(history))
        history = torch.where(index < slot, history, torch.where(index == slot, position, shifted))
        colour = player_sign(to_play).to(torch.int8)
        _, legal = self._moves(padded, labels, colour, frame, history, cell_hash)
        winner = torch.zeros(batch, dtype=torch.int8, device=padded.device)
        if bool(done.any()):
            ended = done.nonzero().flatten()
            winner[ended] = self._margin(board[ended]).sign().to(torch.int8)
        return GoState(
            to_play=to_play,
            done=done,
            winner=winner,
            board=board.reshape(batch, self.size, self.size),
            legal=(legal & ~done.view(-1, 1)).view(batch, self.size, self.size),
            history=history,
            frame=frame,
            **fields,
        )

    def _padded(self, board: torch.Tensor) -> torch.Tensor:
        """int8 [B, ...] board -> int8 [B, N + 1], the pad cell OFF_BOARD last."""
        flat = board.reshape(board.shape[0], -1)
        return torch.cat([flat, flat.new_full((flat.shape[0], 1), OFF_BOARD)], dim=1)

    def _breathing(self, padded, labels) -> torch.Tensor:
        """bool [B, N]: the stones whose chain has a liberty (padded, labels as in `_moves`)."""
        neighbours, _, _ = self._on(padded.device)
        cells = self.num_cells
        breathes = any_side(around(padded, neighbours) == 0).to(torch.int8)
        chain = torch.zeros_like(padded).scatter_reduce_(1, labels[:, :cells], breathes, "amax")
        return (chain.gather(1, labels[:, :cells]) == 1) & (padded[:, :cells] != 0)

    def initial_state(self, batch: int = 1, device="cpu") -> GoState:
        def zeros():  # each field its own tensor: a caller may write one in place (State.put_)
            return torch.zeros(batch, dtype=torch.long, device=device)

        return self._settle(
            self._padded(torch.zeros(batch, self.num_cells, dtype=torch.int8, device=device)),
            None,
            zeros(),
            torch.full((batch, self.move_cap + 1), EMPTY_SLOT, dtype=torch.long, device=device),
            zeros(),
            torch.zeros(batch, dtype=torch.bool, device=device),
            move_number=zeros(),
            last_action=torch.full((batch,), -1, dtype=torch.long, device=device),
        )

    def legal_mask(self, state: GoState) -> torch.Tensor:
        live = ~state.done.unsqueeze(1)
        return torch.cat([state.legal.view(state.batch_size, -1), live], dim=1)

    def _apply(self, state: GoState, action: torch.Tensor) -> GoState:
        batch, cells = state.batch_size, self.num_cells
        neighbours, _, _ = self._on(state.device)
        colour = player_sign(state.to_play).to(torch.int8)
        padded = self._padded(state.board)
        target = torch.where(action < 0, cells, action).view(batch, 1)  # -1 (finished games): nothing
        padded.scatter_(1, target, colour.view(batch, 1))  # a pass places on the pad
        padded[:, cells] = OFF_BOARD
        labels = chain_labels(padded, neighbours, connect_empty=False)
        captured = (padded[:, :cells] == -colour.view(batch, 1)) & ~self._breathing(padded, labels)
        padded[:, :cells].masked_fill_(captured, 0)
        is_pass = action == self.pass_action
        move_number = state.move_number + 1
        done = (is_pass & (state.last_action == self.pass_action)) | (move_number >= self.move_cap)
        return self._settle(
            padded, labels, 1 - state.to_play, state.history, state.frame, done,
            move_number=move_number, last_action=action,
        )

    def random_playout(self, state: GoState, source: Source = None) -> torch.Tensor:
        """Uniformly random legal moves until every game ends (two passes or the move cap);
        returns result float [B]. Draws what the base class's stepping loop draws (`source`: a
        generator or per-game keys long [B]) but skips step's checks and drops finished games."""
        result = self.result(state).clone()
        index = (~state.done).nonzero().flatten()
        live, live_source = state[index], subset(source, index)
        ply = 0
        while index.numel():
            live = self._apply(live, sample_uniform_legal(self.legal_mask(live), advance(live_source, ply)))
            ply += 1
            ended = live.done
            if bool(ended.any()):
                result[index[ended]] = self.result(live[ended])
                index, live, live_source = index[~ended], live[~ended], subset(live_source, ~ended)
        return result

    def _owner(self, board: torch.Tensor) -> torch.Tensor:
        """Tromp-Taylor area of boards int8 [B, ...]: int8 [B, N], +1 black's point (a stone or an
        empty point only black reaches), -1 white's, 0 neither."""
        neighbours, _, _ = self._on(board.device)
        padded = self._padded(board)
        cells = self.num_cells
        labels = chain_labels(padded, neighbours, connect_empty=True)[:, :cells]
        side = around(padded, neighbours)
        empty = padded[:, :cells] == 0
        reaches = {}
        for colour in (1, -1):
            touches = (empty & any_side(side == colour)).to(torch.int8)
            reached = torch.zeros_like(padded).scatter_reduce_(1, labels, touches, "amax")
            reaches[colour] = reached.gather(1, labels) == 1
        black = empty & reaches[1] & ~reaches[-1]
        white = empty & reaches[-1] & ~reaches[1]
        return padded[:, :cells] + black.to(torch.int8) - white.to(torch.int8)

    def _margin(self, board: torch.Tensor) -> torch.Tensor:
        """Tromp-Taylor black area minus white area minus komi of boards int8 [B, ...]: float [B]."""
        return self._owner(board).sum(dim=1, dtype=torch.long).to(torch.float32) - self.komi

    def score(self, state: GoState) -> torch.Tensor:
        """Tromp-Taylor score of any position: black's area minus white's minus komi, float [B]."""
        return self._margin(state.board)

    def ownership(self, state: GoState) -> torch.Tensor:
        """int8 [B, H, W]: each point's owner by area (+1 black, -1 white, 0 neither, e.g. dame)."""
        return self._owner(state.board).view(state.board.shape)

    def moves_left(self, state: GoState) -> torch.Tensor:
        """long [B]: a third of the empty points (games end with points left empty)."""
        return (state.board == 0).flatten(1).sum(dim=1) // 3

    def transform_state(self, state: GoState, symmetry) -> GoState:
        """As Game.transform_state, and `frame` composed with the symmetry (history stays as is)."""
        moved = super().transform_state(state, symmetry)
        index = frame_index(self._frame_perms, symmetry.cell_perm)
        _, _, compose = self._on(state.device)
        moved.frame = compose[index][state.frame]
        return moved

    def from_board(self, board, to_play: int | None = None) -> GoState:
        """A one-game state from an int [H, W] board (+1 black, -1 white, 0 empty) with an empty
        history (only this position). `to_play` (0 black, 1 white) defaults to black unless black
        has more stones; move_number is the stone count. A chain without liberties is an error."""
        board = torch.as_tensor(board).to(torch.int8)
        if tuple(board.shape) != self.board_shape:
            raise GameError(f"{self.name}: board must be {self.size}x{self.size}, got {tuple(board.shape)}")
        if not bool(((board >= -1) & (board <= 1)).all()):
            raise GameError(f"{self.name}: board cells must be +1 (black), -1 (white) or 0 (empty)")
        blacks, whites = int((board == 1).sum()), int((board == -1).sum())
        if to_play is None:
            to_play = 0 if blacks <= whites else 1
        if to_play not in (0, 1):
            raise GameError(f"{self.name}: to_play must be 0 (black) or 1 (white), got {to_play!r}")
        neighbours, _, _ = self._on("cpu")
        padded = self._padded(board.view(1, -1))
        labels = chain_labels(padded, neighbours, connect_empty=False)
        if bool(((padded[:, :-1] != 0) & ~self._breathing(padded, labels)).any()):
            raise GameError(f"{self.name}: a chain has no liberty; this position cannot arise")
        one = torch.zeros(1, dtype=torch.long)
        return self._settle(
            padded, labels, one + to_play,
            torch.full((1, self.move_cap + 1), EMPTY_SLOT, dtype=torch.long),
            one, torch.zeros(1, dtype=torch.bool),
            move_number=one + blacks + whites, last_action=one - 1,
        )

    def illegal_reason(self, state: GoState, action: int) -> str:
        text = self.format_action(action)
        if int(state.board[0].view(-1)[action]) != 0:
            return f"{text} is occupied"
        neighbours, _, _ = self._on(state.device)
        padded = self._padded(state.board)
        labels = chain_labels(padded, neighbours, connect_empty=False)
        colour = player_sign(state.to_play).to(torch.int8)
        cell_hash = self._hashes(padded[:, :-1], state.frame)
        placeable, _ = self._moves(padded, labels, colour, state.frame, state.history, cell_hash)
        if not bool(placeable[0, action]):
            return f"{text} is suicide (the stone's chain would have no liberty)"
        return f"{text} recreates an earlier position (positional superko)"

    def encode(self, state: GoState) -> torch.Tensor:
        own, opponent = stone_planes(state)
        batch = state.batch_size
        last = torch.zeros(batch, self.num_actions + 1, device=state.device)  # + a column for "none"
        last_action = torch.where(state.last_action < 0, self.num_actions, state.last_action)
        last[torch.arange(batch, device=state.device), last_action] = 1.0
        last = last[:, : self.num_cells].view_as(own)  # a pass marks nothing
        black = (state.to_play == 0).float().view(-1, 1, 1).expand_as(own)
        return torch.stack([own, opponent, state.legal.float(), last, torch.ones_like(own), black], dim=1)

    # -- text ---------------------------------------------------------------------------------
    def format_action(self, action: int) -> str:
        action = int(action)
        if action == self.pass_action:
            return PASS_TEXT
        row, col = divmod(action, self.width)
        return f"{GTP_LETTERS[col]}{self.height - row}"

    def parse_action(self, text: str) -> int:
        t = text.strip().upper()
        if t == PASS_TEXT.upper():
            return self.pass_action
        letters = GTP_LETTERS[: self.width]
        points = f"A1..{letters[-1]}{self.height}, no I, or 'pass'"
        if len(t) < 2 or t[0] not in letters or not is_whole_number(t[1:]):
            why = "columns skip I; " if t[:1] == "I" else ""
            raise GameError(f"{self.name}: cannot read move {text!r}; {why}points are written like 'C3' ({points})")
        number = int(t[1:])
        if not 1 <= number <= self.height:
            raise GameError(f"{self.name}: point {text!r} is off the board ({points})")
        return (self.height - number) * self.width + letters.index(t[0])

    def describe(self) -> str:
        return f"{self.name} {self.size}x{self.size}, komi {self.komi:g}"

    def render(self, state: GoState, index: int = 0) -> str:
        """Text board of game `index` (GTP coordinates, last move in parentheses), the
        Tromp-Taylor score so far, and who is to move or the final result."""
        board = state.board[index].tolist()
        last = int(state.last_action[index])
        margin = float(self.score(state[index])[0])
        lead = f"B+{margin:g}" if margin > 0 else f"W+{-margin:g}" if margin < 0 else "even"
        if bool(state.done[index]):
            status = f"game over, {lead}" if margin else "game over, draw"
        else:
            player = "black (X)" if int(state.to_play[index]) == 0 else "white (O)"
            passed = ", last move pass" if last == self.pass_action else ""
            status = f"{player} to move{passed}, area score {lead}"
        header = "   " + " ".join(GTP_LETTERS[: self.width])
        lines = [f"{self.describe()} - move {int(state.move_number[index])} - {status}", header]
        for row in range(self.height):
            text = ""
            for col in range(self.width):
                cell = row * self.width + col
                text += "(" if cell == last else ")" if cell - 1 == last and col > 0 else " "
                text += STONES[board[row][col]]
            text += ")" if last == row * self.width + self.width - 1 else ""
            lines.append(f"{self.height - row:>2}{text}  {self.height - row}")
        lines.append(header)
        return "\n".join(lines)
