"""Hypothesis settings profiles for the fuzz tests (tests/test_fuzz_*.py), and the analysis board
that tests of the browser board's state share (`board`; test_web_guard.py has its own, with a server).

    pytest tests/test_fuzz_*.py                                   # default: a moderate number per surface
    pytest tests/test_fuzz_*.py --hypothesis-profile=slow --hypothesis-show-statistics   # >= 10,000 each

(HYPOTHESIS_PROFILE=slow does the same as --hypothesis-profile=slow.) No example database is
written: a failure prints the example that reproduces it.
"""

from __future__ import annotations

import os

import pytest

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the fuzz tests skip without Hypothesis (the dev extra installs it)
    settings = None

if settings is not None:
    common = dict(deadline=None, database=None, print_blob=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                         HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
    settings.register_profile("default", max_examples=60, **common)
    settings.register_profile("slow", max_examples=10_000, **common)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def board():
    """A 7x7 gomoku analysis board against the random player (no search: the tests drive the
    line), the person playing both sides."""
    import games
    from azero.session import Engine
    from azero.web.gui import Gui

    game = games.make("gomoku", size=7, k=4)
    gui = Gui(game, Engine(game, "random"), human=None)
    yield gui
    gui.close()
