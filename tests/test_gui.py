"""The browser GUI in a real browser: Debian's headless Chromium driven by Playwright.

The screenshot docs/gui-analysis.png is the one test_the_analysis_board_of_a_loaded_game writes to
test-artifacts/gui-analysis.png (copy it there after a change to the page's look).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import games
from azero.session import Engine
from azero.sgf import read_sgf, replay, to_sgf
from azero.web.server import Gui, start_server

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

if not Path(CHROMIUM).exists() and not os.environ.get("CI"):
    pytest.skip("Chromium is not installed (CI installs Debian's chromium)", allow_module_level=True)

sync_api = pytest.importorskip("playwright.sync_api") if not os.environ.get("CI") else __import__(
    "playwright.sync_api", fromlist=["sync_playwright"])

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LONG = 60_000  # ms: an engine's move on a busy machine


@pytest.fixture
def serve():
    """serve(spec, engine, human, ponder=True) -> (gui, url); stopped after the test."""
    running = []

    def start(spec: str, engine: str, human=0, ponder: bool = True):
        game = games.make_from_spec(spec)
        gui = Gui(game, Engine(game, engine), human=human)
        gui.ponder = ponder
        server = start_server(gui, 0)
        running.append((gui, server))
        return gui, f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for gui, server in running:
        gui.close()
        server.shutdown()


@pytest.fixture
def page(tmp_path):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        context = browser.new_context(viewport={"width": 1240, "height": 900}, accept_downloads=True)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page
        browser.close()
        assert not errors, f"the page's script failed: {errors}"


def stones(page) -> int:
    return page.locator("#board .stone").count()


def texts(page, selector: str) -> list[str]:
    return page.locator(selector).all_inner_texts() if page.locator(selector).count() else []


def coordinates(page) -> tuple[list[str], list[str]]:
    """The column labels along the top edge, the row labels down the left edge."""
    return (page.eval_on_selector_all('#board text.coord.col[data-side="top"]', "es => es.map(e => e.textContent)"),
            page.eval_on_selector_all('#board text.coord.row[data-side="left"]', "es => es.map(e => e.textContent)"))


def number(page, selector: str) -> int:
    return int(page.locator(selector).inner_text().replace(",", "") or 0)


def test_play_a_move_see_the_reply_the_analysis_in_colour_and_the_coordinates(serve, page):
    gui, url = serve("gomoku:size=7,k=4", "uct:300")
    page.goto(url)
    page.wait_for_function("document.querySelectorAll('#board .cell').length === 49")
    assert "gomoku 7x7" in page.locator("#title").inner_text()
    assert coordinates(page) == (list("abcdefg"), ["7", "6", "5", "4", "3", "2", "1"])
    centre = page.locator('#board .cell[data-index="24"]')
    assert centre.get_attribute("data-move") == "d4"
    centre.click()
    page.wait_for_function("document.querySelectorAll('#board .stone').length === 2", timeout=LONG)
    assert gui.session.actions[0] == 24 and len(gui.session.actions) == 2
    # the move list uses the names on the board's edges
    reply = gui.game.format_action(gui.session.actions[1])
    assert texts(page, "#moves li") == ["1d4", f"2{reply}"]
    # the analysis of the position (on our turn): win-rate, best move, PV and the heat map in colour
    page.wait_for_function("document.getElementById('winrate-text').textContent.includes('%')", timeout=LONG)
    page.wait_for_function("document.getElementById('pv').textContent.trim() !== '–'", timeout=LONG)
    page.wait_for_function("document.querySelectorAll('#board .heat').length > 3", timeout=LONG)
    assert page.locator("#top-moves tbody tr").count() >= 1
    # colours, not one flat colour: the first analyses may show every move visited equally often
    # (UCT tries each once before any twice), so wait for one in which the visits differ
    page.wait_for_function("new Set([...document.querySelectorAll('#board .heat')].map(c => c.getAttribute('fill')))"
                           ".size > 1", timeout=LONG)
    heat = page.locator("#board .heat")
    fills = {heat.nth(i).get_attribute("fill") for i in range(heat.count())}
    assert all(fill.startswith("rgb(") for fill in fills) and len(fills) > 1
    assert page.locator("#board .heat-layer").text_content() == ""  # and no digits on the board
    assert page.locator("#legend rect").count() == 1 and "%" in page.locator("#legend").inner_html()
    assert "visits" in page.locator("#legend-what").inner_text()
    best = page.locator("#best-move").inner_text()
    assert page.locator(f'#board .cell[data-move="{best}"] title').text_content().startswith(best)
    # the heat map switches to the network's policy (this engine has none: no colour, and it says so)
    page.select_option("#heat", "policy")
    page.wait_for_function("document.querySelectorAll('#board .heat').length === 0")
    assert "no network" in page.locator("#legend-what").inner_text()
    page.select_option("#heat", "visits")
    # a click on an occupied square is refused with a reason, and nothing is played
    centre.click()
    page.wait_for_function("document.getElementById('message').textContent.includes('not a legal move')")
    assert stones(page) == 2 and len(gui.session.actions) == 2
    # undo takes back our move and the reply
    page.locator("#undo").click()
    page.wait_for_function("document.querySelectorAll('#board .stone').length === 0")
    assert gui.session.actions == []


def test_go_coordinates_are_gtp_letters_without_i(serve, page):
    gui, url = serve("go:size=9", "random")
    page.goto(url)
    page.wait_for_function("document.querySelectorAll('#board .cell').length === 81")
    assert coordinates(page) == (list("ABCDEFGHJ"), [str(n) for n in range(9, 0, -1)])
    page.locator('#board .cell[data-move="C7"]').click()
    page.wait_for_function("document.querySelectorAll('#board .stone').length === 2", timeout=LONG)
    assert gui.session.actions[0] == 2 * 9 + 2 and texts(page, "#moves li")[0] == "1C7"
    assert page.locator("#pass").is_visible()


def test_the_graph_after_moves_a_click_on_it_stepping_and_a_variation(serve, page):
    gui, url = serve("gomoku:size=7,k=4", "uct:100", ponder=False)
    page.goto(url)
    page.wait_for_function("document.querySelectorAll('#board .cell').length === 49")
    for count, index in ((2, 24), (4, 17)):
        page.locator(f'#board .cell[data-index="{index}"]').click()
        page.wait_for_function(f"document.querySelectorAll('#moves li').length === {count}", timeout=LONG)
    line = list(gui.session.actions)
    assert len(line) == 4
    # every position of the game gets a point on the graph
    page.wait_for_function("document.querySelectorAll('#graph circle.point').length === 5", timeout=LONG)
    assert page.locator("#graph polyline.series").count() >= 1
    # a click on the graph goes to that move
    page.locator('#graph circle.point[data-ply="1"]').click()
    page.wait_for_function("document.getElementById('ply-label').textContent === 'move 1 of 4'")
    assert gui.ply == 1 and stones(page) == 1
    # step forward and back with the buttons, the keys and the move list
    page.locator("#forward").click()
    page.wait_for_function("document.getElementById('ply-label').textContent === 'move 2 of 4'")
    assert stones(page) == 2
    page.locator("#last").click()
    page.wait_for_function("document.getElementById('ply-label').textContent === 'move 4 of 4'")
    page.locator("#first").click()
    page.wait_for_function("document.getElementById('ply-label').textContent === 'move 0 of 4'")
    assert stones(page) == 0 and gui.session.actions == line  # stepping changes nothing in the game
    page.locator("body").press("ArrowRight")
    page.wait_for_function("document.getElementById('ply-label').textContent === 'move 1 of 4'")
    page.locator('#moves li[data-ply="2"]').click()
    page.wait_for_function("document.getElementById('ply-label').textContent === 'move 2 of 4'")
    # another move there is a variation: the engine answers it, and the game's moves are kept
    other = next(i for i in (10, 11, 12, 13) if i not in line)
    page.locator(f'#board .cell[data-index="{other}"]').click()
    page.wait_for_function("!document.getElementById('variation').hidden")
    page.wait_for_function("document.querySelectorAll('#moves li').length === 4", timeout=LONG)
    assert gui.session.actions[:3] == line[:2] + [other] and gui.main_line == line
    assert page.locator("#moves li.variation").count() == 2
    page.locator("#main-line").click()
    page.wait_for_function("document.getElementById('variation').hidden")
    assert gui.session.actions == line and gui.ply == 2


def test_sgf_saved_from_the_page_loads_back_with_the_same_moves(serve, page, tmp_path):
    gui, url = serve("gomoku:size=7,k=4", "random")
    page.goto(url)
    page.wait_for_function("document.querySelectorAll('#board .cell').length === 49")
    for count, index in ((2, 24), (4, 16)):
        page.locator(f'#board .cell[data-index="{index}"]').click()
        page.wait_for_function(f"document.querySelectorAll('#moves li').length === {count}", timeout=LONG)
    moves = list(gui.session.actions)
    with page.expect_download() as download:
        page.locator("#save-sgf").click()
    saved = tmp_path / "game.sgf"
    download.value.save_as(saved)
    text = saved.read_text()
    assert text.startswith("(;FF[4]GM[4]SZ[7]") and replay(gui.game, read_sgf(text)).actions == moves
    page.locator("#new").click()
    page.wait_for_function("document.querySelectorAll('#moves li').length === 0")
    page.locator("#sgf-file").set_input_files(str(saved))
    page.wait_for_function("document.querySelectorAll('#moves li').length === 4")
    assert gui.session.actions == moves and page.locator("#human").input_value() == "both"
    assert "loaded 4 moves" in page.locator("#note").inner_text()
    # a game SGF has no type for: a clear message, nothing downloaded
    page.select_option("#game", "connect4")
    page.locator("#new").click()
    page.wait_for_function("document.querySelectorAll('#board .cell').length === 42")
    page.locator("#save-sgf").click()
    page.wait_for_function("document.getElementById('message').textContent"
                           ".includes('SGF has no game type for connect4')")


def test_pondering_shows_the_visits_growing_while_you_think(serve, page):
    gui, url = serve("gomoku:size=7,k=4", "uct:100")
    page.goto(url)
    page.wait_for_function("document.getElementById('work').textContent === 'pondering…'", timeout=LONG)
    page.wait_for_function("parseInt(document.getElementById('visits').textContent.replace(/,/g, '')) > 300",
                           timeout=LONG)
    seen = number(page, "#visits")
    page.wait_for_function(f"parseInt(document.getElementById('visits').textContent.replace(/,/g, '')) > {seen}",
                           timeout=LONG)
    page.locator("#ponder").uncheck()
    page.wait_for_function("document.getElementById('work').textContent === ''", timeout=LONG)
    assert gui.ponder is False


def test_the_strength_set_on_the_page_reaches_the_engine(serve, page):
    gui, url = serve("gomoku:size=7,k=4", "uct:300", ponder=False)
    page.goto(url)
    page.wait_for_function("document.querySelectorAll('#board .cell').length === 49")
    page.locator("#strength").fill("37")
    page.select_option("#strength-unit", "simulations")
    with page.expect_response("**/api/settings"):
        page.locator("#apply-strength").click()
    assert gui.engine.simulations == 37 and gui.engine.seconds is None
    page.locator('#board .cell[data-index="24"]').click()
    page.wait_for_function("document.querySelectorAll('#board .stone').length === 2", timeout=LONG)
    assert gui.analyses[gui._keys([24])[1]]["visits"] == 37  # the search behind the engine's reply
    page.select_option("#strength-unit", "seconds")
    page.locator("#strength").fill("0.3")
    with page.expect_response("**/api/settings"):
        page.locator("#strength").press("Enter")
    assert gui.engine.seconds == 0.3 and gui.engine.simulations is None


def test_new_game_with_the_engine_first_in_another_game(serve, page):
    gui, url = serve("gomoku:size=7,k=4", "uct:300")
    page.goto(url)
    page.wait_for_function("document.querySelectorAll('#board .cell').length === 49")
    page.select_option("#human", "1")
    page.select_option("#game", "connect4")
    page.locator("#new").click()
    page.wait_for_function("document.querySelectorAll('#board .cell').length === 42")
    page.wait_for_function("document.querySelectorAll('#board .stone').length === 1", timeout=LONG)
    assert gui.game.name == "connect4" and gui.human == 1
    assert coordinates(page) == ([str(n) for n in range(1, 8)], [])  # columns only, as its moves are written
    # clicking anywhere in a column drops a disc into it
    page.locator('#board .cell[data-index="3"]').click()  # top row, column 4
    page.wait_for_function("document.querySelectorAll('#board .stone').length === 3", timeout=LONG)
    assert gui.session.actions[1] == 3


def test_the_analysis_board_of_a_loaded_game(serve, page, tmp_path):
    """A gomoku game loaded from SGF, analysed move by move: the screenshot in docs/."""
    gui, url = serve("gomoku:size=9,k=5", "uct:400")
    game = gui.game
    record = tmp_path / "game.sgf"
    moves = ["e5", "d6", "f5", "d5", "d4", "e6", "f6", "c6", "g4", "f4", "g7", "c7"]  # black wins at c3 or h8
    record.write_text(to_sgf(game, [game.parse_action(m) for m in moves], black="Ada", white="Ben"))
    page.goto(url)
    page.wait_for_function("document.querySelectorAll('#board .cell').length === 81")
    page.locator("#sgf-file").set_input_files(str(record))
    page.wait_for_function(f"document.querySelectorAll('#moves li').length === {len(moves)}")
    page.wait_for_function(f"document.querySelectorAll('#graph circle.point').length === {len(moves) + 1}",
                           timeout=3 * LONG)
    page.wait_for_function("parseInt(document.getElementById('visits').textContent.replace(/,/g, '')) > 1500",
                           timeout=LONG)
    assert page.locator("#board .heat").count() > 0 and page.locator("#board .best").count() == 1
    assert page.locator("#best-move").inner_text() in ("c3", "h8")
    page.locator("#show-pv").check()
    page.wait_for_function("document.querySelectorAll('#board .pv-stone').length > 0")
    page.locator("#show-pv").uncheck()
    page.locator('#graph circle.point[data-ply="8"]').hover()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "gui-analysis.png"), full_page=True)
