"""The analysis board's state without a browser (azero/web/gui.py): coordinates from the games'
own move names, stepping and variations, the win-rate graph, pondering, settings, SGF, and one
clear error for every bad request (through the HTTP API, as the page sends them)."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

import pytest

import games
from azero.session import Engine
from azero.sgf import read_sgf, replay, to_sgf
from azero.web.coordinates import cell_names, edge_labels
from azero.web.server import Gui, start_server
from games import GameError


def wait_until(predicate, timeout=60.0, what="the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {timeout:.0f} s")


def labels(spec):
    game = games.make_from_spec(spec)
    return edge_labels(game, cell_names(game, game.click_actions(game.initial_state(1))[0].tolist()))


def test_edge_labels_are_the_games_own_move_names():
    assert labels("gomoku:size=7,k=4") == (list("abcdefg"), [str(n) for n in range(7, 0, -1)])
    columns, rows = labels("go:size=19")
    assert "I" not in columns and columns[7:9] == ["H", "J"] and len(columns) == 19 and rows[0] == "19"
    assert labels("othello:size=6") == (list("abcdef"), [str(n) for n in range(1, 7)])  # rows counted from the top
    assert labels("connect4") == ([str(n) for n in range(1, 8)], [])  # a move names its column only
    assert labels("gomoku:width=9,height=7") == (list("abcdefghi"), [str(n) for n in range(7, 0, -1)])


def test_stepping_back_and_forth_and_a_variation_keeps_the_game(board):
    for action in (24, 25, 17, 18):
        board.move(action)
    assert board.session.actions == [24, 25, 17, 18] and board.ply == 4
    board.goto(1)
    snapshot = board.snapshot()
    assert snapshot["ply"] == 1 and sum(v != 0 for row in snapshot["cells"] for v in row) == 1
    assert snapshot["moves"] == ["d4", "e4", "d5", "e5"] and snapshot["last"] == 24
    board.move(25)  # the game's own next move: the line is followed, not cut
    assert board.session.actions == [24, 25, 17, 18] and board.ply == 2 and board.main_line is None
    board.move(10)  # another move: a variation from move 3; the game's moves are kept
    assert board.session.actions == [24, 25, 10] and board.main_line == [24, 25, 17, 18]
    assert board.snapshot()["variation_from"] == 2
    board.goto(2, main_line=True)
    assert board.session.actions == [24, 25, 17, 18] and board.ply == 2 and board.snapshot()["variation_from"] is None
    with pytest.raises(GameError, match="no variation"):
        board.goto(1, main_line=True)
    with pytest.raises(GameError, match="from 0 to 4"):
        board.goto(5)


def test_undo_takes_back_the_shown_move_and_keeps_later_moves_as_the_game(board):
    for action in (24, 25, 17):
        board.move(action)
    board.undo()
    assert board.session.actions == [24, 25] and board.main_line is None  # at the end: a plain take-back
    board.goto(1)
    board.undo()
    assert board.session.actions == [] and board.main_line == [24, 25]
    board.goto(2, main_line=True)
    assert board.session.actions == [24, 25]


def test_the_graph_holds_the_first_players_win_rate_of_every_analysed_position():
    game = games.make("tictactoe")
    gui = Gui(game, Engine(game, "uct:300"), human=None)
    try:
        gui.settings({"ponder": False})
        for action in (0, 3, 1, 4):  # x a3, o a2, x b3, o b2: x to move wins at c3
            gui.move(action)
        wait_until(lambda: all(point is not None for point in gui.snapshot()["graph"]), what="the graph filled in")
        graph = gui.snapshot()["graph"]
        assert len(graph) == 5 and all(0 <= point["winrate"] <= 1 and point["visits"] > 0 for point in graph)
        # the first player's view throughout: o's b2 (instead of blocking at c3) shows as a jump for x
        assert graph[4]["winrate"] > 0.75 and graph[4]["winrate"] > graph[3]["winrate"]
        gui.goto(3)
        gui.goto(4)
        gui.move(2)
        final = gui.snapshot()["graph"][-1]
        assert gui.snapshot()["over"] and final["final"] and final["winrate"] == 1.0
    finally:
        gui.close()


def test_pondering_deepens_the_shown_position_until_told_to_stop():
    game = games.make("gomoku", size=7, k=4)
    gui = Gui(game, Engine(game, "uct:100"), human=0)
    try:
        def visits() -> int:
            return (gui.snapshot()["analysis"] or {}).get("visits", 0)

        wait_until(lambda: visits() > 300, what="pondering past the engine's own 100 simulations")
        first = visits()
        wait_until(lambda: visits() > first, what="the visits growing")
        assert gui.snapshot()["work"] == "ponder"
        gui.settings({"ponder": False})
        wait_until(lambda: gui.snapshot()["work"] is None and gui.job is None, what="pondering stopping")
        stopped = visits()
        time.sleep(0.6)
        assert visits() == stopped
    finally:
        gui.close()


def test_the_strength_set_is_the_budget_of_the_engines_next_move():
    game = games.make("gomoku", size=7, k=4)
    gui = Gui(game, Engine(game, "uct:300"), human=0)
    try:
        gui.settings({"simulations": 37, "ponder": False})
        assert gui.engine.simulations == 37 and gui.engine.seconds is None
        gui.move(24)
        wait_until(lambda: len(gui.session.actions) == 2, what="the engine's reply")
        assert gui.analyses[gui._keys([24])[1]]["visits"] == 37  # the search behind the reply
        gui.settings({"seconds": 0.25})
        assert gui.engine.seconds == 0.25 and gui.engine.simulations is None
        gui.move(17)
        wait_until(lambda: len(gui.session.actions) == 4, what="the engine's reply by time")
    finally:
        gui.close()


def test_an_sgf_record_loads_at_its_end_and_saves_back_the_same_moves(board):
    game = games.make("gomoku", size=9, k=5)
    text = to_sgf(game, [40, 41, 31, 32, 22], black="someone", white="uct:1000")
    board.load_sgf(text)
    assert board.game == game and board.session.actions == [40, 41, 31, 32, 22] and board.ply == 5
    assert board.human is None and board.snapshot()["columns"] == list("abcdefghi")
    saved = read_sgf(board.sgf())
    assert replay(game, saved).actions == [40, 41, 31, 32, 22] and saved.properties["PB"] == ["someone"]


def refusal(request, *args) -> str | None:
    """The GameError a request answers, or None if it was accepted."""
    try:
        request(*args)
    except GameError as error:
        return str(error)
    return None


def test_polls_go_on_while_a_new_games_engine_is_built_and_a_failed_build_changes_nothing(board, monkeypatch):
    import azero.web.gui as gui_module

    building, release = threading.Event(), threading.Event()

    class SlowEngine(Engine):  # another board's engine: kernels compile and networks load for seconds
        def __init__(self, game, *args, **kwargs):
            building.set()
            assert release.wait(10)
            if game.name == "othello":
                raise GameError("that engine could not be built")
            super().__init__(game, *args, **kwargs)

    monkeypatch.setattr(gui_module, "Engine", SlowEngine)
    board.move(24)
    switch = threading.Thread(target=board.new, args=({"game": "connect4"},))
    switch.start()
    assert building.wait(60)
    started = time.monotonic()
    snapshot = board.snapshot()  # the page's poll while the engine is built: answered, the old game shown
    assert time.monotonic() - started < 2 and snapshot["moves"] == ["d4"] and switch.is_alive()
    # a click on that board meanwhile waits for the switch, and is then refused, not played on the new game
    click = threading.Thread(target=lambda: clicked.append(refusal(board.move, 3, snapshot["game_number"])))
    clicked = []
    click.start()
    release.set()
    switch.join(60)
    click.join(60)
    assert clicked == ["the board changed before that click reached it (a new game); click again"]
    assert board.game.name == "connect4" and board.session.actions == [] and board.engine.game.name == "connect4"
    assert board.snapshot()["game_number"] == snapshot["game_number"] + 1
    board.move(3)
    with pytest.raises(GameError, match="could not be built"):
        board.new({"game": "othello"})
    assert board.game.name == "connect4" and board.session.actions == [3] and board.engine.game.name == "connect4"


def request(url, path, body=None):
    """(status, JSON answer) of a GET, or of a POST with a JSON body as the page sends it."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    headers = {"Content-Type": "application/json"} if data is not None else {}
    try:
        sent = urllib.request.Request(url + path, data=data, headers=headers)
        with urllib.request.urlopen(sent, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_every_bad_request_gets_one_clear_error_and_changes_nothing(board):
    server = start_server(board, 0)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        request(url, "api/move", {"action": 24})
        bad = [
            ("api/goto", {"ply": 9}, "from 0 to 1"),
            ("api/goto", {"ply": "1"}, "whole number"),
            ("api/goto", {"ply": 0, "main_line": "yes"}, "true or false"),
            ("api/goto", {"index": 1}, "unknown key index for /api/goto; its keys: main_line, ply"),
            ("api/undo", {"ply": 0}, "unknown key ply for /api/undo; its keys: none"),
            ("api/move", {"action": 30, "colour": "black"}, "unknown key colour"),
            ("api/move", {"action": 30, "game_number": "1"}, "game_number must be a whole number"),
            ("api/move", {"action": 30, "game_number": 0}, "the board changed before that click"),
            ("api/settings", {"strength": 3}, "unknown setting strength"),
            ("api/settings", {"simulations": 0}, "positive whole number"),
            ("api/settings", {"simulations": 10**12}, "at most"),
            ("api/settings", {"seconds": -1}, "above 0"),
            ("api/settings", {"seconds": 1, "simulations": 5}, "not both"),
            ("api/settings", {"human": 2}, "human must be"),
            ("api/settings", {"ponder": "no"}, "true or false"),
            ("api/sgf", {"sgf": "not an sgf"}, "SGF"),
            ("api/sgf", {"sgf": "(;GM[x])"}, "game type"),
            ("api/sgf", {"sgf": "(;GM[1]SZ[9];B[zz])"}, "SGF"),
            ("api/sgf", {}, "file's text"),
            ("api/new", {"game": 7}, "game spec"),
            ("api/new", {"game": "nim"}, "no board"),
            ("api/move", {"action": 24}, "not a legal move"),
            ("api/move", b"[1, 2]", "JSON object"),
        ]
        for path, body, words in bad:
            status, answer = request(url, path, body)
            assert status == 400 and words in answer["error"], (path, body, answer)
        status, state = request(url, "api/state")
        assert status == 200 and state["moves"] == ["d4"] and state["ply"] == 1 and state["human"] == "both"
        board.new({"game": "connect4"})
        status, answer = request(url, "api/sgf")
        assert status == 400 and answer["error"].startswith("SGF has no game type for connect4")
    finally:
        server.shutdown()


def test_a_player_without_a_search_only_plays(board):
    for action in (24, 25, 17):
        board.move(action)
    wait_until(lambda: board.searchless is board.engine, what="the first look finding no search")
    calls = board.engine.calls
    board.goto(1)
    time.sleep(0.6)
    assert board.engine.calls == calls and board.snapshot()["analysis"] is None  # no look, no graph, no pondering
    board.settings({"human": 0})  # the random player takes the second side: at the end it is to move and plays
    board.goto(3)
    wait_until(lambda: len(board.session.actions) == 4, what="the random player's move")
