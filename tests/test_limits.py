"""Bounded resources: a search's memory follows its simulations and never exceeds the tree memory
limit; requests are checked for range with the limit in the error, and the engine keeps serving."""

from __future__ import annotations

import io
import json
import os
import re

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import azero.search.run as search_module
import games
from azero.players.base import MAX_SECONDS
from azero.players.flatmc import FlatMCPlayer
from azero.protocols import analysis, gtp, piskvork
from azero.protocols.gtp import KEPT_ENGINES, Clock, GTPEngine
from azero.protocols.piskvork import Brain
from azero.search import UCB1, RolloutEvaluator, search, search_with_budget
from azero.search.memory import LIMIT_VARIABLE, TreeTooLarge, max_nodes, memory_limit
from azero.search.tree import node_bytes
from azero.session import Engine
from azero.wire.line_reader import PROTOCOL_LINE, TooLong, bounded_lines
from games.keyed_random import make_keys


def test_an_absurd_search_is_refused_before_anything_is_allocated():
    game = games.make("gomoku", size=15)
    roots = game.initial_state(1)
    for run in (lambda: search(game, roots, RolloutEvaluator(game), UCB1(), 10**12, make_keys(0, 1)),
                lambda: search_with_budget(game, roots, RolloutEvaluator(game), UCB1(), make_keys(0, 1),
                                           simulations=10**12)):
        with pytest.raises(TreeTooLarge, match=r"1,000,000,000,001 nodes .* the limit is .* at most [\d,]+ simulations"):
            run()


def test_the_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(LIMIT_VARIABLE, "2M")
    assert memory_limit() == 2 << 20
    game = games.make("tictactoe")
    roots = game.initial_state(1)
    most = max_nodes(1, node_bytes(roots, game.num_actions, False))
    search(game, roots, RolloutEvaluator(game), UCB1(), most - 1, make_keys(0, 1))  # fits
    with pytest.raises(TreeTooLarge, match=f"the limit is 2.0 MB, at most {most - 1:,} simulations"):
        search(game, roots, RolloutEvaluator(game), UCB1(), most, make_keys(0, 1))
    monkeypatch.setenv(LIMIT_VARIABLE, "lots")
    with pytest.raises(ValueError, match="AZERO_TREE_MEMORY='lots' is not a size"):
        memory_limit()


def test_a_big_search_grows_its_tree_with_its_simulations_and_searches_the_same(monkeypatch):
    game = games.make("tictactoe")
    roots = game.initial_state(3)
    keys = make_keys(5, 3)
    whole = search(game, roots, RolloutEvaluator(game), UCB1(), 1500, keys)
    assert whole.capacity == 1501
    monkeypatch.setattr(search_module, "INITIAL_TREE_BYTES", 1)  # start at MIN_NODES, then double
    used_at_growth = []
    original_grow = search_module.grow

    def grow(tree, capacity):
        used_at_growth.append((int(tree.next_node.max()), tree.capacity))
        return original_grow(tree, capacity)

    monkeypatch.setattr(search_module, "grow", grow)
    grown = search(game, roots, RolloutEvaluator(game), UCB1(), 1500, keys, extra_capacity=10)
    assert grown.capacity == 1511
    assert [capacity for _, capacity in used_at_growth[:5]] == [64, 128, 256, 512, 1024]
    assert all(used > capacity - 64 for used, capacity in used_at_growth[:-1])  # grown only when (nearly) full
    assert torch.equal(grown.root_visits(), whole.root_visits())
    used = int(whole.next_node.max())
    assert torch.equal(grown.child_value_sum[:, :used], whole.child_value_sum[:, :used])
    assert torch.equal(grown.next_node, whole.next_node)


def test_a_search_bounded_by_time_stops_growing_at_the_memory_limit(monkeypatch):
    game = games.make("tictactoe")
    roots = game.initial_state(1)
    monkeypatch.setenv(LIMIT_VARIABLE, "64K")
    most = max_nodes(1, node_bytes(roots, game.num_actions, False))
    tree = search_with_budget(game, roots, RolloutEvaluator(game), UCB1(), make_keys(0, 1), seconds=3.0)
    assert tree.capacity <= most and int(tree.root_visits().sum()) >= most - 64


def test_flat_monte_carlo_counts_the_same_in_chunks_of_any_size():
    game = games.make("connect4", rows=4, columns=5)
    states = game.initial_state(2)
    keys = make_keys(3, 2)
    one = FlatMCPlayer(game, 203, chunk=65536).analyse(states, keys)
    many = FlatMCPlayer(game, 203, chunk=7).analyse(states, keys)
    assert torch.equal(one.visits, many.visits) and torch.allclose(one.q, many.q)
    assert one.visits.sum(dim=1).tolist() == [203.0, 203.0]


def ask(engine: Engine, *requests) -> list[dict]:
    sink = io.StringIO()
    analysis.serve(engine, io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), sink)
    return [json.loads(line) for line in sink.getvalue().splitlines()]


def test_the_analysis_engine_answers_an_absurd_budget_with_its_limit_and_keeps_serving():
    game = games.make("gomoku", size=9)
    replies = ask(Engine(game, "uct:50"), {"id": 5, "simulations": 1e12}, {"id": 6, "seconds": 1e9},
                  {"id": 7, "simulations": 2.5}, {"id": 8, "simulations": 20})
    assert replies[0] == {"id": 5, "error": "simulations=1000000000000 is out of range; allowed: a whole number "
                                            "1..100,000,000"}
    assert replies[1]["error"] == f"seconds=1000000000.0 is out of range; allowed: above 0 and at most {MAX_SECONDS:g}"
    assert "out of range" in replies[2]["error"]
    assert replies[3]["id"] == 8 and replies[3]["visits"] == 20


def test_the_analysis_engine_survives_json_nested_too_deeply():
    sink = io.StringIO()
    analysis.serve(Engine(games.make("tictactoe"), "random"), io.StringIO("[" * 100_000 + "\n" + '{"id": 1}\n'), sink)
    first, second = (json.loads(line) for line in sink.getvalue().splitlines())
    assert "nested too deeply" in first["error"] and second["id"] == 1 and "best_move" in second


def test_player_budgets_are_limited_where_they_are_read():
    game = games.make("tictactoe")
    for spec, word in (("uct:1000000000000", "iterations"), ("flatmc:1000000000000", "rollouts"),
                       ("az:x.pt:sims=1000000000000", "option sims")):
        with pytest.raises(ValueError, match=f"{word}=1000000000000 is out of range; allowed: 1..100,000,000"):
            Engine(game, spec)
    with pytest.raises(ValueError, match="simulations=1000000000000 is out of range"):
        Engine(game, "uct:10", simulations=10**12)


def test_gtp_time_settings_are_checked_and_a_move_never_thinks_past_the_limit():
    lines = []
    engine = GTPEngine(games.make("go", size=5), lambda game: Engine(game, "random"), write=lines.append)
    for command in ("time_settings nan 0 0", "time_settings inf 0 0", "time_settings -5 0 0",
                    "time_left b 1e400 0", "time_left w 10 -1"):
        lines.clear()
        engine.handle(command)
        assert lines[0].startswith("? syntax error") and "out of range" in lines[0], (command, lines)
    lines.clear()
    engine.handle("genmove b")
    assert lines[0].startswith("= ")
    clock = Clock(main_time=366 * 24 * 3600.0)
    assert clock.seconds(0, 1) == MAX_SECONDS


def test_a_gtp_session_stepping_through_komis_keeps_a_few_engines_not_all():
    made = []

    def make_engine(game):
        made.append(game.spec)
        return Engine(game, "random")

    lines = []
    engine = GTPEngine(games.make("go", size=5), make_engine, write=lines.append)
    for komi in range(40):  # a controller that sets each game's komi: one engine each, the last few kept
        engine.handle(f"komi {komi + 0.25}")
        engine.handle("genmove b")
    assert len(made) == 41 and len(engine.engines) == KEPT_ENGINES
    engine.handle("komi 36.25")  # the oldest kept: used again, not made again
    engine.handle("komi 100.25")  # a new one: the least recently used (37.25) makes room, not 36.25
    engine.handle("komi 36.25")
    engine.handle("boardsize 5")
    assert made[41:] == ["go:size=5,komi=100.25"] and all(line.startswith("=") for line in lines), lines


def test_a_piskvork_turn_never_thinks_past_the_limit():
    brain = Brain(lambda game: Engine(game, "random"), write=lambda text: None)
    brain.handle("START 10")
    brain.handle("INFO timeout_turn 99999999999")
    assert brain._budget() == MAX_SECONDS


def _split_at_newlines(text: str) -> list[str]:
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


@given(st.lists(st.tuples(st.integers(0, 12), st.sampled_from(["\n", "\r\n", "\r\r\n", ""]),
                          st.sampled_from("ab\r ")), max_size=8),
       st.integers(1, 6))
def test_bounded_lines_hands_on_every_line_within_the_limit_and_refuses_each_longer_one(shape, limit):
    text = "".join(character * length + end for length, end, character in shape)
    assert list(bounded_lines(io.StringIO(text), limit)) == _reference(text, limit)


def _reference(text: str, limit: int) -> list:
    out = []
    for line in _split_at_newlines(text):
        body = line[:-2] if line.endswith("\r\n") else line[:-1] if line.endswith("\n") else line
        out.append(TooLong(line[:limit], limit) if len(body) > limit else line)
    return out


def test_each_protocol_refuses_a_line_over_the_limit_in_its_own_form_and_keeps_serving():
    long = "x" * (PROTOCOL_LINE + 1)
    exact = "y" * PROTOCOL_LINE  # at the limit (its ending not counted): read, and refused for what it says
    sink = io.StringIO()
    analysis.serve(Engine(games.make("tictactoe"), "random"),
                   io.StringIO('{"id": 1, "moves": ["' + long + '"]}\n' + exact + "\r\n" + '{"id": 2}\n'), sink)
    first, second, third = (json.loads(line) for line in sink.getvalue().splitlines())
    assert first == {"id": None, "error": f"a line longer than {PROTOCOL_LINE:,} characters; refused (the line was "
                                          "read and dropped)"}
    assert "cannot read request as JSON" in second["error"] and third["id"] == 2 and "best_move" in third

    out = io.StringIO()
    gtp.serve(GTPEngine(games.make("go", size=5), lambda game: Engine(game, "random")),
              io.StringIO(f"7 komi {long}\n8 protocol_version\nquit\n"), out)
    assert out.getvalue().startswith(f"?7 a line longer than {PROTOCOL_LINE:,} characters") and "=8 2\n\n" in out.getvalue()

    replies = []
    brain_lines = ["START 8", "x" * (PROTOCOL_LINE + 5), "BOARD", "1,1,1", long, "DONE", "BOARD", "1,1,2", "DONE", "END"]
    piskvork.serve(lambda game: Engine(game, "random"), io.StringIO("\n".join(brain_lines) + "\n"), _Sink(replies))
    assert replies[0] == "OK" and replies[1].startswith("ERROR a line longer than")
    assert replies[2].startswith("ERROR BOARD: a line longer than")  # said at DONE, not inside BOARD
    assert len(replies) == 4 and "," in replies[3]  # the next BOARD is played


class _Sink(io.StringIO):
    def __init__(self, replies):
        super().__init__()
        self.replies = replies

    def write(self, text):
        self.replies.extend(line for line in text.splitlines() if line)
        return len(text)


def test_a_piskvork_brain_keeps_its_tree_within_info_max_memory():
    """INFO max_memory bounds the search tree: the brain's trees stay within what the limit
    leaves over the memory it held once its engine was made (the tree's own bytes, measured)."""
    from azero.search.tree import tree_bytes

    replies = []
    brain = Brain(lambda game: Engine(game, "uct:100000000"), write=replies.append)
    brain.handle("START 15")
    brain.handle("INFO timeout_turn 1500")
    unbounded = brain.engine.player
    brain.handle("BEGIN")
    assert tree_bytes(unbounded._spare) > 8 << 20  # the move's tree, no limit said: tens of MB
    brain.handle("START 15")
    with open("/proc/self/statm") as statm:  # the process's resident memory now, its engine made
        resident = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    allowed = 2 << 20
    brain.handle(f"INFO max_memory {resident + allowed}")
    player = brain.engine.player
    for line in ("BEGIN", "TURN 7,8", "TURN 9,9"):
        replies.clear()
        brain.handle(line)
        assert replies and re.fullmatch(r"\d+,\d+", replies[-1]), replies
        assert 0 < tree_bytes(player._spare) <= allowed + (256 << 10)  # (the brain measured its memory itself)
    brain.handle("INFO max_memory 0")  # no limit
    assert brain.tree_limit() is None


def test_a_piskvork_rule_the_protocol_does_not_define_is_said_to_be_unknown():
    replies = []
    brain = Brain(lambda game: Engine(game, "random"), write=replies.append)
    brain.handle("START 10")
    for value in ("-1", "16", "-5"):
        replies.clear()
        brain.handle(f"INFO rule {value}")
        assert replies == [f"ERROR INFO rule {value}: that value is unknown (0 freestyle, 1 exactly five; 2 "
                           "continuous, 4 renju and 8 caro are bits added to them)"]
    replies.clear()
    brain.handle("INFO rule 4")
    assert replies[0].startswith("ERROR renju rules are not supported")


def test_the_analysis_engine_speaks_its_own_words_for_a_move_after_the_end():
    """A move after the game's end is refused in the protocol's words: no terminal's 'new' or 'undo'."""
    game = games.make("tictactoe")
    replies = ask(Engine(game, "random"), {"id": 1, "moves": ["a1", "a2", "b1", "b2", "c1", "c2"]})
    assert replies == [{"id": 1, "error": "move 6 (c2): the game is over (first player wins); no move follows "
                                          "its end"}], replies
