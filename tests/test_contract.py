"""The game contract's optional parts (games/base.py): over every game, and through a toy game
defined here only, which the arena, the game session, the GUI's server, SGF and GTP play
without any change outside this file. That is the proof that a new game is one file in games/."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import games
from game_specs import GAME_SPECS
from games import BoardState, Game, GameError
from games.base import (
    BOARD_STYLES,
    Option,
    board_symmetries,
    format_square,
    new_board_state,
    parse_square,
    player_sign,
    player_signs,
    render_grid,
    stone_planes,
)

ROOT = Path(__file__).resolve().parent.parent


# -- the toy game ---------------------------------------------------------------------------------


@dataclass(eq=False)
class StonesState(BoardState):
    """A batch of Stones positions (BoardState's fields; `last_action` holds the pass after a pass)."""


class Stones(Game):
    """Stones: place a stone on any empty cell of an N x N board, or pass. Nothing is ever captured.
    The game ends after two passes in a row or when the board is full; black's margin is its stones
    minus white's minus komi, and the larger side wins."""

    name = "stones"
    options = {
        "size": Option(4, int, lambda v: 2 <= v <= 6, "2..6"),
        "komi": Option(0.5, float, lambda v: abs(v) <= 36, "-36..36"),
    }
    state_type = StonesState
    board_fields = ("board",)
    action_fields = ("last_action",)
    has_score = True
    presets = ("stones:size=3", "stones:size=4")
    sgf_game_type = 99  # not one of SGF's registered types: a game of this test only
    sgf_default_size = 4
    gtp_playable = True

    def __init__(self, **options):
        super().__init__(**options)
        size = self.size = self.config["size"]
        self.komi = self.config["komi"]
        self.board_shape = (size, size)
        self.num_actions = size * size + 1
        self.pass_action = size * size
        self.num_planes = 3
        self.symmetries = board_symmetries(size, size, extra_actions=1)

    def initial_state(self, batch=1, device="cpu"):
        return new_board_state(batch, self.size, self.size, device, StonesState)

    def legal_mask(self, state):
        live = ~state.done.unsqueeze(1)
        return torch.cat([(state.board.flatten(1) == 0) & live, live], dim=1)

    def _apply(self, state, action):
        batch = state.batch_size
        board = state.board.flatten(1).clone()
        places = (action != self.pass_action).nonzero().flatten()
        colour = player_signs(state.device).index_select(0, state.to_play)
        board[places, action[places]] = colour[places]
        passed_twice = (action == self.pass_action) & (state.last_action == self.pass_action)
        done = passed_twice | (board != 0).all(dim=1)
        margin = board.sum(dim=1, dtype=torch.long).float() - self.komi
        return StonesState(
            to_play=1 - state.to_play,
            move_number=state.move_number + 1,
            done=done,
            winner=torch.where(done, margin.sign(), 0.0).to(torch.int8),
            board=board.view(batch, self.size, self.size),
            last_action=action,
        )

    def score(self, state):
        return state.board.flatten(1).sum(dim=1, dtype=torch.long).float() - self.komi

    def encode(self, state):
        own, opponent = stone_planes(state)
        return torch.stack([own, opponent, torch.ones_like(own)], dim=1)

    def format_action(self, action):
        if int(action) == self.pass_action:
            return "pass"
        row, col = divmod(int(action), self.size)
        return format_square(row, col, self.size, rows_from_top=False)

    def parse_action(self, text):
        if text.strip().lower() == "pass":
            return self.pass_action
        row, col = parse_square(self.name, text, self.size, self.size, rows_from_top=False)
        return row * self.size + col

    def describe(self):
        return f"stones {self.size}x{self.size}, komi {self.komi:g}"

    def render(self, state, index=0):
        cells = [["X" if v > 0 else "O" if v < 0 else "." for v in row] for row in state.board[index].tolist()]
        mover = "X" if int(player_sign(state.to_play[index])) > 0 else "O"
        return render_grid(cells, rows_from_top=False, title=f"{self.describe()} - {mover} to move")


@pytest.fixture
def stones(monkeypatch):
    monkeypatch.setitem(games.REGISTRY, Stones.name, Stones)
    return games.make("stones", size=3, komi=0.5)


def test_the_toy_game_keeps_the_contract(stones):
    assert games.make_from_spec(stones.spec) == stones and stones.spec == "stones:size=3,komi=0.5"
    state = stones.initial_state(2)
    state = stones.step(state, torch.tensor([4, stones.pass_action]))
    state = stones.step(state, torch.tensor([stones.pass_action, stones.pass_action]))
    assert state.done.tolist() == [False, True] and stones.result(state).tolist() == [0.0, -1.0]  # komi
    with pytest.raises(GameError, match="illegal"):
        stones.step(state, torch.tensor([4, -1]))


def test_the_toy_game_through_the_arena_and_its_records_through_sgf(stones, tmp_path):
    from azero.arena import play_match
    from azero.players import make
    from azero.sgf import game_from_sgf, read_sgf, replay, write_match

    match = play_match(stones, make("random", stones), make("uct:30", stones), 6, progress=False,
                       record_moves=True)
    assert match.a_wins + match.b_wins + match.draws == 6 and match.b_wins >= 3  # UCT beats random
    paths = write_match(tmp_path, stones, match)
    for path, record in zip(paths, match.records, strict=True):
        text = path.read_text()
        assert text.startswith("(;FF[4]GM[99]SZ[3]") and "KM[0.5]" in text
        sgf = read_sgf(text)
        assert game_from_sgf(sgf) == stones
        again = replay(stones, sgf)
        assert again.actions == record.actions  # passes are written (a pass here is a free choice)
        assert float(stones.result(again.state)[0]) == record.result


def test_the_toy_game_in_the_session_and_the_terminal_words(stones):
    from azero.session import Engine, GameSession, describe_analysis

    session = GameSession(stones)
    session.play(session.parse("b2"))
    session.play(session.parse("pass"))
    assert session.previous_state is not None and session.actions == [4, 9]
    with pytest.raises(GameError, match="not a legal move"):
        session.parse("b2")
    analysis = Engine(stones, "uct:200").think(session.state)
    info = describe_analysis(stones, analysis)
    assert info["visits"] == 200 and stones.parse_action(info["best_move"]) in session.legal()
    session.undo(2)
    assert session.previous_state is None and session.state.equal(stones.initial_state(1))


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return json.loads(reply.read())


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read())


def _wait_for_my_turn(url: str) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = _get(url + "api/state")
        if state["over"] or (state["to_play"] == state["human"] and not state["thinking"]):
            return state
        time.sleep(0.05)
    raise AssertionError("the engine did not move within a minute")


def test_the_toy_game_through_the_gui_server(stones):
    from azero.session import Engine
    from azero.sgf import read_sgf, replay
    from azero.web.server import Gui, start_server

    gui = Gui(stones, Engine(stones, "random"), human=0)
    server = start_server(gui, 0)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        state = _get(url + "api/state")
        assert state["title"] == "stones 3x3, komi 0.5" and state["game"] == "stones:size=3,komi=0.5"
        assert (state["height"], state["width"]) == (3, 3) and state["cells"] == [[0] * 3] * 3
        assert state["cell_action"] == list(range(9)) and state["action_cell"] == [*range(9), -1]
        assert state["pass_action"] == 9 and 9 in state["legal"] and state["last_cell"] == -1
        assert {"stones:size=3", "stones:size=4"} <= set(state["games"]) and state["sgf"]
        after = _post(url + "api/move", {"action": 4})  # b2, the centre
        # The random engine may already have replied when the snapshot is taken.
        assert after["cells"][1][1] == 1 and len(after["moves"]) in (1, 2)
        assert after["last_cell"] == 4 or len(after["moves"]) == 2
        state = _wait_for_my_turn(url)
        assert len(state["moves"]) == 2 and state["cells"][1][1] == 1
        after = _post(url + "api/move", {"action": state["pass_action"]})
        assert after["moves"][2] == "pass" and (after["last_cell"] == -1 or len(after["moves"]) == 4)
        state = _wait_for_my_turn(url)
        with urllib.request.urlopen(url + "api/sgf", timeout=30) as reply:
            record = read_sgf(reply.read().decode())
        assert replay(stones, record).state.equal(gui.session.state)
        assert len(gui.session.actions) == len(state["moves"]) >= 3
        _post(url + "api/new", {"game": "stones:size=4", "human": 1})
        state = _wait_for_my_turn(url)
        assert state["width"] == 4 and len(state["moves"]) == 1  # the engine moved first on 4x4
    finally:
        gui.close()
        server.shutdown()


def test_the_toy_game_through_the_gtp_engine(stones):
    from azero.protocols.gtp import GTPEngine
    from azero.session import Engine

    replies: list[str] = []
    engine = GTPEngine(stones, lambda game: Engine(game, "uct:50"), write=replies.append)
    for line in ("boardsize 4", "komi 2.5", "play b B2", "play w pass", "genmove b", "final_score"):
        engine.handle(line)
    assert all(reply.startswith("=") for reply in replies), replies
    assert engine.game == games.make("stones", size=4, komi=2.5)
    assert engine.session.actions[:2] == [9, 16]  # B2 on 4x4 (row 2 from the top, column 1), then pass
    margin = float(stones.with_options(size=4, komi=2.5).score(engine.session.state)[0])
    assert replies[-1].split()[1] == ("0" if margin == 0 else f"{'B' if margin > 0 else 'W'}+{abs(margin):g}")


# -- every game's optional parts ---------------------------------------------------------------------


@pytest.fixture(params=GAME_SPECS)
def game(request):
    return games.make_from_spec(request.param)


def test_optional_parts_have_the_documented_shapes(game):
    state = game.initial_state(3)
    height, width = game.board_shape
    assert isinstance(game.describe(), str) and game.describe()
    assert game.with_options() == game
    moves_left = game.moves_left(state)
    assert moves_left.dtype == torch.long and moves_left.shape == (3,) and bool((moves_left > 0).all())
    if game.pass_action is not None:
        assert game.pass_action == game.num_actions - 1 and game.format_action(game.pass_action) == "pass"
        assert game.parse_action("pass") == game.pass_action
    else:
        assert not game.forced_pass
    if game.has_score:
        score = game.score(state)
        assert score.dtype == torch.float32 and score.shape == (3,)
    else:
        with pytest.raises(GameError, match="no score"):
            game.score(state)
    if game.has_ownership:  # the points that add up to the score (its komi aside)
        ownership = game.ownership(state)
        assert ownership.dtype == torch.int8 and ownership.shape == (3, height, width)
        komi = game.komi or 0.0
        assert torch.equal(ownership.flatten(1).sum(dim=1).float() - komi, game.score(state))
    else:
        with pytest.raises(GameError, match="no ownership"):
            game.ownership(state)
    if game.komi is not None:
        assert game.with_options(komi=2.5).komi == 2.5
    if game.has_board:
        assert state.board.shape == (3, height, width) and game.board_style in BOARD_STYLES
        clicks, cells = game.click_actions(state), game.action_cells(state)
        assert clicks.shape == (3, height * width) and cells.shape == (3, game.num_actions)
        assert bool(((clicks >= -1) & (clicks < game.num_actions)).all())
        assert bool(((cells >= -1) & (cells < height * width)).all())
        legal = game.legal_mask(state)[0]
        for action in range(game.num_actions):  # a click on the cell of a legal action means that action
            cell = int(cells[0, action])
            if cell >= 0 and bool(legal[action]):
                assert int(clicks[0, cell]) == action
    for spec in type(game).presets:
        assert games.make_from_spec(spec).name == game.name


def test_forced_passes_are_legal_only_without_another_move_and_free_passes_always():
    othello = games.make("othello", size=4)
    go = games.make("go", size=5)
    assert othello.forced_pass and not go.forced_pass
    assert not bool(othello.legal_mask(othello.initial_state(1))[0, othello.pass_action])
    assert bool(go.legal_mask(go.initial_state(1))[0, go.pass_action])


def test_scores_are_blacks_margin():
    othello = games.make("othello", size=6)
    assert othello.score(othello.initial_state(1)).tolist() == [0.0]
    state = othello.step(othello.initial_state(1), torch.tensor([othello.parse_action("c2")]))
    assert othello.score(state).tolist() == [3.0]  # black 4 discs, white 1
    go = games.make("go", size=5, komi=5.5)
    assert go.score(go.initial_state(1)).tolist() == [-5.5]


def test_sgf_builds_each_game_from_its_type_size_and_komi():
    from azero.sgf import game_from_sgf, read_sgf, supports, to_sgf

    for spec in ("go:size=7,komi=5.5", "othello:size=6", "gomoku:size=9,k=5", "gomoku:width=9,height=7,k=5"):
        game = games.make_from_spec(spec)
        assert supports(game) and game_from_sgf(read_sgf(to_sgf(game, []))) == game
    assert game_from_sgf(read_sgf("(;GM[2])")) == games.make("othello", size=8)  # SGF's default size
    assert game_from_sgf(read_sgf("(;GM[1]KM[6.5])")) == games.make("go", size=19, komi=6.5)
    assert game_from_sgf(read_sgf("(;GM[4]SZ[15]KM[6.5])")) == games.make("gomoku", size=15)  # no komi option
    assert not any(supports(games.make(name)) for name in ("tictactoe", "connect4", "nim"))
    with pytest.raises(GameError, match="GM"):
        game_from_sgf(read_sgf("(;GM[3])"))


def test_the_gui_game_list_comes_from_the_registry():
    assert games.presets(board=True) == [spec for spec in games.presets() if spec != "nim"]
    for spec in games.presets():
        games.make_from_spec(spec)


# -- no game knowledge outside games/ ------------------------------------------------------------------

NAME_CHECK = re.compile(r"\bgame\.name\s*(==|!=|in\b|not in\b)|\b(hasattr|getattr)\(\s*(self\.)?game\b"
                        r"|state\.game\.(startsWith|split\(\"?:\"?\)\[0\]\s*===)")


def test_no_code_outside_games_asks_a_game_its_name_or_probes_it():
    sources = [*ROOT.joinpath("azero").rglob("*.py"), *ROOT.joinpath("azero").rglob("*.js"),
               *ROOT.joinpath("scripts").rglob("*.py")]
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in sources
             for number, line in enumerate(path.read_text().splitlines(), start=1)
             if NAME_CHECK.search(line)]
    assert not found, "game knowledge outside games/:\n" + "\n".join(found)
