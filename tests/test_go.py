"""Go rules on ASCII boards: captures, suicide, ko and positional superko, seki, Tromp-Taylor
scoring with komi, the end of the game, GTP move text, symmetries with a history, and random
games checked against a plain one-board implementation. X = black (first player, +1),
O = white (-1), rows from the top; moves in GTP text (A1 bottom-left, no I)."""

from __future__ import annotations

import pytest
import torch

import games
from boards import board, legal_texts, play, position
from games import GameError, IllegalActionError
from games.keyed_random import make_keys

BLACK, WHITE = 0, 1


@pytest.fixture
def go5():
    return games.make("go", size=5, komi=0.5)


def test_single_and_multi_stone_captures(go5):
    s = position(go5, """
        . . . . .
        . . X . .
        . X O . .
        . . X . .
        . . . . .
    """, BLACK)
    after = play(go5, s, "D3")
    assert int(after.board[0, 2, 2]) == 0 and int((after.board == -1).sum()) == 0
    s = position(go5, """
        O O O . .
        X X X . .
        . . . . .
        . . . . .
        . . . . .
    """, BLACK)
    after = play(go5, s, "D5")
    assert torch.equal(after.board[0, 0], torch.tensor([0, 0, 0, 1, 0], dtype=torch.int8))
    assert int((after.board == 1).sum()) == 4


def test_a_capture_is_legal_where_a_move_would_otherwise_be_suicide(go5):
    s = position(go5, """
        . X O . .
        X O . . .
        O . . . .
        . . . . .
        . . . . .
    """, WHITE)
    # A5 has no empty neighbour, but it takes the last liberty of two black stones.
    assert "A5" in legal_texts(go5, s)
    after = play(go5, s, "A5")
    expected = board("""
        O . O . .
        . O . . .
        O . . . .
        . . . . .
        . . . . .
    """)
    assert torch.equal(after.board[0], expected)


def test_suicide_is_illegal_for_one_stone_and_for_a_chain(go5):
    s = position(go5, """
        . O . X .
        O . . . .
        . . . . .
        . . . . .
        . . . . .
    """, BLACK)
    assert "A5" not in legal_texts(go5, s)
    with pytest.raises(IllegalActionError, match="A5 is suicide"):
        play(go5, s, "A5")
    s = position(go5, """
        . X O . .
        O O . . .
        . . . . .
        . . . . .
        . . . . .
    """, BLACK)
    assert "A5" not in legal_texts(go5, s), "filling the last liberty of one's own chain"
    with pytest.raises(IllegalActionError, match="occupied"):
        play(go5, s, "B5")


KO = """
    . X O . .
    X O . O .
    . X O . .
    . . . . .
    . . . . .
"""


def test_simple_ko_is_refused_until_the_position_has_changed(go5):
    s = play(go5, position(go5, KO, BLACK), "C4")
    assert int(s.board[0, 1, 1]) == 0, "black took the ko"
    assert "B4" not in legal_texts(go5, s)
    with pytest.raises(IllegalActionError, match="B4 recreates an earlier position"):
        play(go5, s, "B4")
    s = play(go5, s, "E1", "E2")  # a threat and an answer elsewhere
    assert "B4" in legal_texts(go5, s)
    s = play(go5, s, "B4")
    assert int(s.board[0, 1, 2]) == 0, "white took the ko back"
    assert "C4" not in legal_texts(go5, s), "and black may not retake at once"


def test_superko_forbids_sending_two_and_returning_one(go5):
    start = position(go5, """
        . X . O .
        X O O . .
        . . . . .
        . . . . .
        . . . . .
    """, BLACK)
    s = play(go5, start, "C5", "A5")  # black throws in; white captures two stones
    assert int((s.board[0, 0] == 1).sum()) == 0
    # B5 would capture A5 (one stone for two: not a simple ko) and recreate the start.
    assert "B5" not in legal_texts(go5, s)
    with pytest.raises(IllegalActionError, match="superko"):
        play(go5, s, "B5")
    s = play(go5, s, "E1", "E2")
    assert "B5" in legal_texts(go5, s)


def test_superko_survives_every_symmetry(go5):
    s = play(go5, position(go5, KO, BLACK), "C4")
    for sym in go5.symmetries:
        moved = go5.transform_state(s, sym)
        retake = sym.action(torch.tensor([go5.parse_action("B4")]))
        assert not bool(go5.legal_mask(moved)[0, retake]), sym.name
        line = [go5.parse_action(t) for t in ("E1", "E2", "B4")]
        stepped, original = moved, s
        for action in line:
            stepped = go5.step(stepped, sym.action(torch.tensor([action])))
            original = go5.step(original, torch.tensor([action]))
            assert stepped.equal(go5.transform_state(original, sym)), sym.name
        composed = go5.transform_state(go5.transform_state(s, sym), sym)
        assert torch.equal(go5.legal_mask(composed), sym.policy(sym.policy(go5.legal_mask(s))))


SEKI = """
    . X O . X O .
    . X O . X O .
    . X O X X O .
    . X X O O O .
    X X X O O O O
    . . . . . . .
    . . . . . . .
"""


def test_seki_neither_side_can_approach_and_shared_liberties_are_neutral():
    game = games.make("go", size=7, komi=0.5)
    s = game.from_board(board(SEKI), BLACK)
    # Black area: 12 stones + 4 points of column A; white: 13 stones + 4 of column G.
    # D7 and D6 touch both colours and the bottom rows touch both: neutral.
    assert float(game.score(s)[0]) == 16 - 17 - 0.5
    after = play(game, s, "D7")  # black approaches: its chain is left with one liberty
    taken = play(game, after, "D6")
    assert int((taken.board == 1).sum()) == int((s.board == 1).sum()) + 1 - 5, "white takes five"
    after = play(game, game.from_board(board(SEKI), WHITE), "D7")
    taken = play(game, after, "D6")
    assert int((taken.board == -1).sum()) == int((s.board == -1).sum()) + 1 - 4, "black takes four"


SPLIT = """
    . . X O .
    . . X O .
    . . X O .
    . . X O .
    . . X O .
"""


@pytest.mark.parametrize("komi, winner", [(4.5, 1), (5.0, 0), (5.5, -1)])
def test_two_passes_end_the_game_and_area_scoring_with_komi(komi, winner):
    game = games.make("go", size=5, komi=komi)
    s = game.from_board(board(SPLIT), BLACK)
    assert float(game.score(s)[0]) == 15 - 10 - komi
    s = play(game, s, "pass")
    assert not bool(s.done[0]) and int(s.to_play[0]) == WHITE
    s = play(game, s, "pass")
    assert bool(s.done[0]) and int(s.winner[0]) == winner and game.result(s).tolist() == [float(winner)]
    assert not game.legal_mask(s).any()
    assert "game over" in game.render(s) and ("draw" in game.render(s)) == (winner == 0)


def test_a_pass_then_a_move_does_not_end_the_game_and_stones_count_as_they_stand(go5):
    s = go5.initial_state()
    s = play(go5, s, "pass", "C3", "pass")
    assert not bool(s.done[0])
    assert go5.legal_mask(s)[0, go5.pass_action], "pass is always legal"
    # Tromp-Taylor: a lone white stone makes black's region neutral (no dead stones).
    lone = position(go5, """
        . . X . .
        . . X . .
        O . X . .
        . . X . .
        . . X . .
    """)
    assert float(go5.score(lone)[0]) == 5 + 10 - 1 - 0.5
    empty = play(go5, go5.initial_state(), "pass", "pass")
    assert bool(empty.done[0]) and int(empty.winner[0]) == -1, "komi wins an empty board"


def test_the_move_cap_ends_and_scores_the_game(go5):
    s = position(go5, SPLIT, BLACK)
    s.move_number[:] = go5.move_cap - 1
    s = play(go5, s, "A1")
    assert bool(s.done[0]) and int(s.winner[0]) == 1 and int(s.move_number[0]) == go5.move_cap
    gen = torch.Generator().manual_seed(0)
    s = go5.initial_state(32)
    for _ in range(go5.move_cap):
        s = go5.step(s, games.sample_uniform_legal(go5.legal_mask(s), gen))
    assert bool(s.done.all()) and int(s.move_number.max()) <= go5.move_cap == 75


def test_gtp_move_text():
    game = games.make("go")
    assert game.format_action(0) == "A9" and game.format_action(8) == "J9"
    assert game.format_action(72) == "A1" and game.format_action(game.pass_action) == "pass"
    assert game.parse_action("j1") == 80 and game.parse_action(" Pass ") == game.pass_action
    with pytest.raises(GameError, match="skip I"):
        game.parse_action("I5")
    with pytest.raises(GameError, match="off the board"):
        game.parse_action("A10")
    big = games.make("go", size=19)
    assert big.format_action(18) == "T19" and big.parse_action("t1") == 18 * 19 + 18
    text = game.render(play(game, game.initial_state(), "E5"))
    assert "A B C D E F G H J" in text and "(X)" in text and "white (O) to move" in text


def test_options_from_board_and_encode():
    game = games.make_from_spec("go:size=7,komi=5.5")
    assert game.komi == 5.5 and game.board_shape == (7, 7) and game.num_actions == 50
    assert games.make("go", komi=6).spec == "go:size=9,komi=6.0"
    for bad in ({"size": 4}, {"size": 20}, {"komi": "lots"}):
        with pytest.raises(GameError):
            games.make("go", **bad)
    with pytest.raises(GameError, match="no liberty"):
        game.from_board(board("""
            X O . . . . .
            O . . . . . .
            . . . . . . .
            . . . . . . .
            . . . . . . .
            . . . . . . .
            . . . . . . .
        """))
    s = play(game, game.initial_state(), "D4")
    planes = game.encode(s)[0]
    assert planes.shape == (6, 7, 7)
    assert planes[1, 3, 3] == 1 and planes[0].sum() == 0, "white to move sees black's stone as the opponent's"
    assert planes[3, 3, 3] == 1 and planes[3].sum() == 1 and planes[4].min() == 1
    assert planes[5].sum() == 0, "white is to move"
    assert game.encode(game.initial_state())[0, 5].min() == 1


def test_random_playout_draws_what_stepping_draws():
    game = games.make("go", size=5)
    state, generator, positions = game.initial_state(6), torch.Generator().manual_seed(7), []
    while not bool(state.done.all()):
        positions.append(state)
        state = game.step(state, games.sample_uniform_legal(game.legal_mask(state), generator))
    state = games.State.cat([positions[20], state])  # 6 games under way, 6 over
    keys = make_keys(11, 12)
    fast = game.random_playout(state, keys)
    assert torch.equal(fast, games.Game.random_playout(game, state, keys))
    assert torch.equal(fast[3:4], game.random_playout(state[3], keys[3:4])), "batch independent"


class PlainGo:
    """One board in plain Python: the rules as written, for cross-checking."""

    def __init__(self, size: int, komi: float):
        self.size, self.komi, self.cells = size, komi, [0] * size * size
        self.seen, self.color, self.last, self.moves, self.over = {tuple(self.cells)}, 1, None, 0, False

    def neighbours(self, c):
        r, q = divmod(c, self.size)
        for rr, qq in ((r - 1, q), (r + 1, q), (r, q - 1), (r, q + 1)):
            if 0 <= rr < self.size and 0 <= qq < self.size:
                yield rr * self.size + qq

    def region(self, cells, c):
        """(the chain or empty region of c, the colours and empties around it)."""
        group, todo, around = {c}, [c], set()
        while todo:
            for y in self.neighbours(todo.pop()):
                if cells[y] == cells[c] and y not in group:
                    group.add(y)
                    todo.append(y)
                elif cells[y] != cells[c]:
                    around.add(cells[y])
        return group, around

    def placed(self, c):
        cells = list(self.cells)
        cells[c] = self.color
        for y in self.neighbours(c):
            if cells[y] == -self.color and 0 not in self.region(cells, y)[1]:
                for x in self.region(cells, y)[0]:
                    cells[x] = 0
        return cells if 0 in self.region(cells, c)[1] else None

    def legal(self):
        if self.over:
            return set()
        n = self.size * self.size
        ok = {c for c in range(n) if self.cells[c] == 0 and (p := self.placed(c)) and tuple(p) not in self.seen}
        return ok | {n}

    def step(self, a):
        n = self.size * self.size
        if a != n:
            self.cells = self.placed(a)
            self.seen.add(tuple(self.cells))
        self.over = (a == n and self.last == n) or self.moves + 1 >= 3 * n
        self.last, self.moves, self.color = a, self.moves + 1, -self.color

    def score(self):
        total = sum(self.cells)
        for c in range(len(self.cells)):
            if self.cells[c] == 0:
                _, around = self.region(self.cells, c)
                total += (around == {1}) - (around == {-1})
        return total - self.komi


@pytest.mark.parametrize("size, komi, seed", [(5, 0.0, 1), (5, 2.5, 2), (6, 3.0, 3)])
def test_random_games_agree_with_a_plain_implementation(size, komi, seed):
    game = games.make("go", size=size, komi=komi)
    batch = 8
    plain = [PlainGo(size, komi) for _ in range(batch)]
    s = game.initial_state(batch)
    gen = torch.Generator().manual_seed(seed)
    while not bool(s.done.all()):
        mask = game.legal_mask(s)
        for i, reference in enumerate(plain):
            assert set(mask[i].nonzero().flatten().tolist()) == reference.legal()
        action = games.sample_uniform_legal(mask, gen)
        s = game.step(s, action)
        for i, reference in enumerate(plain):
            if not reference.over:
                reference.step(int(action[i]))
            assert s.board[i].flatten().tolist() == reference.cells and bool(s.done[i]) == reference.over
    scores = game.score(s).tolist()
    for i, reference in enumerate(plain):
        assert scores[i] == reference.score()
        assert int(s.winner[i]) == (reference.score() > 0) - (reference.score() < 0)
