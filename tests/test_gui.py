"""The browser GUI in a real browser: Debian's headless Chromium driven by Playwright."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import games
from azero.session import Engine
from azero.web.server import Gui, start_server

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

if not Path(CHROMIUM).exists() and not os.environ.get("CI"):
    pytest.skip("Chromium is not installed (CI installs Debian's chromium)", allow_module_level=True)

sync_api = pytest.importorskip("playwright.sync_api") if not os.environ.get("CI") else __import__(
    "playwright.sync_api", fromlist=["sync_playwright"])

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def gui():
    game = games.make("gomoku", size=7, k=4)
    gui = Gui(game, Engine(game, "uct:300"), human=0)
    server = start_server(gui, 0)
    yield gui, f"http://127.0.0.1:{server.server_address[1]}/"
    gui.close()
    server.shutdown()


@pytest.fixture
def page(tmp_path):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        context = browser.new_context()
        page = context.new_page()
        yield page
        browser.close()


def stones(page) -> int:
    return page.locator("#board .stone").count()


def test_play_a_move_see_the_reply_and_the_analysis_and_an_illegal_click_refused(gui, page):
    gui, url = gui
    page.goto(url)
    page.wait_for_function("document.querySelectorAll('#board .cell').length === 49")
    assert "gomoku 7x7" in page.locator("#title").inner_text()
    page.locator('#board .cell[data-index="24"]').click()  # d4, the centre
    page.wait_for_function("document.querySelectorAll('#board .stone').length === 2", timeout=60_000)
    assert gui.session.actions[0] == 24 and len(gui.session.actions) == 2
    # the analysis of the position (pondering on our turn) appears: win-rate, best move, PV, heat map
    page.wait_for_function("document.getElementById('winrate-text').textContent.includes('%')", timeout=60_000)
    page.wait_for_function("document.getElementById('pv').textContent.trim() !== '–'", timeout=60_000)
    page.wait_for_function("document.querySelectorAll('#board .heat').length > 0", timeout=60_000)
    assert page.locator("#top-moves tbody tr").count() >= 1
    # a click on an occupied square is refused with a reason, and nothing is played
    page.locator('#board .cell[data-index="24"]').click()
    page.wait_for_function("document.getElementById('message').textContent.includes('not a legal move')")
    assert stones(page) == 2 and len(gui.session.actions) == 2
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "gui.png"), full_page=True)
    # the game so far as SGF, from the page's link
    sgf = page.evaluate("fetch('/api/sgf').then(r => r.text())")
    assert sgf.startswith("(;FF[4]GM[4]SZ[7]") and ";B[dd]" in sgf
    # undo takes back our move and the reply
    page.locator("#undo").click()
    page.wait_for_function("document.querySelectorAll('#board .stone').length === 0")
    assert gui.session.actions == []


def test_new_game_with_the_engine_first_in_another_game(gui, page):
    gui, url = gui
    page.goto(url)
    page.wait_for_function("document.querySelectorAll('#board .cell').length === 49")
    page.select_option("#human", "1")
    page.select_option("#game", "connect4")
    page.locator("#new").click()
    page.wait_for_function("document.querySelectorAll('#board .cell').length === 42")
    page.wait_for_function("document.querySelectorAll('#board .stone').length === 1", timeout=60_000)
    assert gui.game.name == "connect4" and gui.human == 1
    # clicking anywhere in a column drops a disc into it
    page.locator('#board .cell[data-index="3"]').click()  # top row, column 4
    page.wait_for_function("document.querySelectorAll('#board .stone').length === 3", timeout=60_000)
    assert gui.session.actions[1] == 3
