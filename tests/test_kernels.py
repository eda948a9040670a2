"""The compiled CPU loops (games/kernels.py, azero/search/kernels.py) against their torch twins.

Every test runs the same work twice, once with the kernels and once with them switched
off (as on a GPU or without numba), and requires the same answer.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os

import pytest
import torch

import games
from azero.search import PUCT, UCB1, RolloutEvaluator, new_tree, search, simulate
from azero.search.tree import Tree
from games import NO_ACTION, kernels
from games.keyed_random import _hash32, make_keys, random_true

FIELD_NAMES = [f.name for f in Tree.FIELDS]
PROOF_FIELDS = ("proof", "proof_plies", "child_proof", "child_plies")  # the solver's (search/proofs.py)

# Skipped where the kernels are switched off (AZERO_NO_KERNELS) or numba is missing, except
# in CI (the CI variable set), where a missing numba fails below instead of passing quietly.
if not kernels.AVAILABLE and (os.environ.get("AZERO_NO_KERNELS", "") not in ("", "0") or not os.environ.get("CI")):
    pytest.skip("the compiled loops are off (AZERO_NO_KERNELS) or numba is not installed", allow_module_level=True)


def test_the_compiled_loops_are_in_use():
    assert kernels.AVAILABLE, "numba is not importable: pip install -e '.[dev]' installs it"


def test_direct_entries_type_once_per_key_and_compute_what_the_dispatcher_computes():
    """games.kernels.Entries: the search's walks call compiled code without numba's typing of
    their records at each call; the answer is the dispatcher's, and a new key types afresh."""
    import numpy as np

    @kernels.njit
    def weighted(record, scale):
        total = 0.0
        for i in range(record.values.shape[0]):
            total += record.values[i] * record.weights[i]
        return total * scale

    Pair = collections.namedtuple("Pair", ["values", "weights"])
    floats = Pair(np.arange(4, dtype=np.float32), np.full(4, 2.0, dtype=np.float32))
    ints = Pair(np.arange(4, dtype=np.int64), np.full(4, 3, dtype=np.int64))
    entries = kernels.Entries(weighted)
    for _ in range(3):
        assert entries("floats", floats, 0.5) == weighted(floats, 0.5) == 6.0
    assert entries("ints", ints, 1.0) == weighted(ints, 1.0) == 18.0
    assert len(entries._points) == 2  # one typing per key, not per call


@contextlib.contextmanager
def torch_only():
    """Run the torch twins (what a GPU or a machine without numba runs)."""
    saved = kernels.AVAILABLE
    kernels.AVAILABLE = False
    try:
        yield
    finally:
        kernels.AVAILABLE = saved


def both(fn):
    """fn() with the kernels, then with the torch twins."""
    first = fn()
    with torch_only():
        second = fn()
    return first, second


def test_hash_is_the_same_for_every_shape_and_sign():
    g = torch.Generator().manual_seed(0)
    for shape in [(1,), (1024,), (7, 13), (3, 4, 5)]:
        x = torch.randint(-(2**62), 2**62, shape, generator=g)
        a, b = both(lambda: _hash32(x))
        assert a.shape == x.shape and torch.equal(a, b)
        assert int(a.min()) >= 0 and int(a.max()) < 2**32


@pytest.mark.parametrize("width", [1, 3, 7, 64, 225, 361])
def test_random_true_picks_the_same_index_and_count(width):
    g = torch.Generator().manual_seed(width)
    for density in (0.0, 0.05, 0.5, 1.0):
        mask = torch.rand(512, width, generator=g) < density
        mask[::7] = False  # rows without a True: some index, count 0
        draw = torch.randint(0, 1 << 24, (512,), generator=g).float() / (1 << 24)
        draw[0], draw[1] = 0.0, 1.0 - 2.0**-24  # both ends of the range
        (ia, ca), (ib, cb) = both(lambda: random_true(mask, draw))
        assert torch.equal(ca, cb) and torch.equal(ca.long(), mask.sum(dim=1))
        assert torch.equal(ia, ib)
        rows = ca > 0
        assert bool(mask[rows].gather(1, ia[rows].unsqueeze(1)).all())  # a True of its row


@pytest.mark.parametrize(
    "spec", ["gomoku:size=9,k=5", "gomoku:size=8,k=5,rule=standard", "gomoku:size=6,k=4", "tictactoe", "connect4"]
)
def test_random_games_step_the_same(spec):
    game = games.make_from_spec(spec)

    def play():
        state, states = game.initial_state(64), []
        for ply in range(400):
            if bool(state.done.all()):
                break
            action = games.sample_uniform_legal(game.legal_mask(state), make_keys(ply, 64))
            state = game.step(state, action)
            states.append(state)
        return states

    ours, theirs = both(play)
    assert all(a.equal(b) for a, b in zip(ours, theirs))
    assert bool(ours[-1].done.all()) and bool((ours[-1].winner != 0).any())


@pytest.mark.parametrize("spec", ["gomoku:size=8,k=5", "gomoku:size=15,width=9,height=7", "tictactoe"])
def test_network_planes_are_the_same(spec):
    game = games.make_from_spec(spec)
    state, positions = game.initial_state(32), []
    for ply in range(40):
        positions.append(state)
        if bool(state.done.all()):
            break
        state = game.step(state, games.sample_uniform_legal(game.legal_mask(state), make_keys(ply, 32)))
    ours, theirs = both(lambda: [game.encode(s) for s in positions])
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))
    assert bool(ours[-1][:, 0].sum(dim=(1, 2)).gt(0).all())  # stones on every board by then


@pytest.mark.parametrize("encode", [True, False])
@pytest.mark.parametrize(
    "spec", ["gomoku:size=8,k=5", "gomoku:size=6,k=4,rule=standard", "gomoku:size=15,width=7,height=5", "tictactoe",
             "connect4", "connect4:rows=4,columns=4,k=4"]
)
def test_the_compiled_expansion_gives_what_the_separate_steps_give(spec, encode):
    """A game's expand_rows (one compiled pass: gomoku's, Connect Four's) against the sequence a
    search runs without it: take, step, put, legal mask, result, encoding (not made when not
    asked); on rows of random games, winning moves and board-filling moves among them."""
    game = games.make_from_spec(spec)
    cells = game.board_shape[0] * game.board_shape[1]
    state, rows = game.initial_state(48), []
    for ply in range(cells):
        rows.append(state)
        if bool(state.done.all()):
            break
        state = game.step(state, games.sample_uniform_legal(game.legal_mask(state), make_keys(ply, 48)))
    table = games.State.cat(rows)  # every ply of 48 games: a tree's positions
    live = (~table.done).nonzero().squeeze(1)
    parent = live[torch.randperm(live.numel(), generator=torch.Generator().manual_seed(1))[:200]]
    last_cell = live[table.move_number.index_select(0, live) == cells - 1]  # moves that fill the board
    parent = torch.cat([parent[~torch.isin(parent, last_cell)], last_cell])
    spare = torch.tensor(sorted(set(range(table.batch_size)) - set(parent.tolist())))
    child = spare[torch.randperm(spare.numel(), generator=torch.Generator().manual_seed(2))[:parent.numel()]]
    action = games.sample_uniform_legal(game.legal_mask(table.take(parent)), make_keys(3, parent.numel()))

    fused = table.clone()
    expansion = game.expand_rows(fused, parent, child, action, encode=encode)
    assert expansion is not None  # numba is here (the module skips otherwise)
    separate = table.clone()
    before = separate.take(parent)
    after = game.step(before, action, trusted=True)
    separate.put_(child, after)
    assert fused.equal(separate)
    expected = (game.legal_mask(after), game.result(after), game.encode(after) if encode else None, after.to_play,
                before.to_play, after.done)
    for name, ours, theirs in zip(expansion._fields, expansion, expected):
        assert (ours is None and theirs is None) or (ours.dtype == theirs.dtype and torch.equal(ours, theirs)), name
    assert bool(expansion.done.any()) and bool((expansion.result != 0).any())  # games won by these moves
    if spec in ("tictactoe", "connect4:rows=4,columns=4,k=4"):  # and drawn by filling the board
        assert bool((expansion.done & (expansion.result == 0)).any())
    with torch_only():  # the torch form has none: the search runs the separate steps
        assert game.expand_rows(table.clone(), parent, child, action) is None


def test_gomoku_move_checks_agree_on_legal_and_illegal_moves():
    game = games.make("gomoku", size=7, k=4)
    state = game.initial_state(256)
    for ply in range(30):
        state = game.step(state, games.sample_uniform_legal(game.legal_mask(state), make_keys(ply, 256)))
    g = torch.Generator().manual_seed(1)
    for _ in range(5):
        action = torch.randint(-2, game.num_actions + 2, (256,), generator=g)
        action[state.done] = torch.where(torch.rand(int(state.done.sum()), generator=g) < 0.5, NO_ACTION, 3)
        ok_kernel, ok_torch = both(lambda: game.check_actions(state, action))
        assert torch.equal(ok_kernel, ok_torch)
        assert 0 < int(ok_kernel.sum()) < 256
        # the compiled step checks as it plays: the same error, naming the first bad game
        errors = []
        for context in (contextlib.nullcontext, torch_only):
            with context(), pytest.raises(games.IllegalActionError) as caught:
                game.step(state, action)
            errors.append(str(caught.value))
        assert len(errors) == 2 and errors[0] == errors[1]
        assert f"in game {int((~ok_kernel).nonzero()[0, 0])} of the batch" in errors[0]
        # legal where they were not (finished games: no action): the same next state, and
        # finished games keep theirs, last move included
        legal = torch.where(ok_kernel, action, games.sample_uniform_legal(game.legal_mask(state), make_keys(7, 256)))
        played, reference = both(lambda: game.step(state, legal))
        assert played.equal(reference) and played[state.done].equal(state[state.done])
        live = ~state.done
        trusted, reference = both(lambda: game.step(state[live], legal[live], trusted=True))
        assert trusted.equal(reference)


@pytest.mark.parametrize("spec", ["tictactoe", "gomoku:size=7,k=4"])
def test_uct_searches_the_same(spec):
    game = games.make_from_spec(spec)
    roots = game.initial_state(6)
    roots = game.step(roots, torch.tensor([0, 1, 2, 3, 4, 5]))

    def run():
        tree = search(game, roots, RolloutEvaluator(game), UCB1(), 300, make_keys(3, 6))
        return tree.root_visits(), tree.child_value_sum[:, 0], tree.next_node

    (va, qa, na), (vb, qb, nb) = both(run)
    assert torch.equal(va, vb) and torch.equal(qa, qb) and torch.equal(na, nb)
    assert torch.equal(va.sum(dim=1), torch.full((6,), 300.0))


class SmoothEvaluator:
    """A deterministic stand-in for a network: priors and values from a hash of the board,
    row by row (a sum, not a matrix product, whose rounding may depend on the batch), so a
    leaf's value does not depend on where it sits in the batch."""

    uses_keys = False

    def __init__(self, game):
        self.game = game

    def __call__(self, states, keys=None, legal=None):
        legal = self.game.legal_mask(states) if legal is None else legal
        board = states.board.view(states.batch_size, -1).float()
        weights = torch.linspace(0.3, 2.9, board.shape[1])
        mixed = torch.sin((board * weights).sum(dim=1, keepdim=True) * 7.0 + states.move_number.view(-1, 1))
        logits = torch.cos(mixed * torch.arange(1, self.game.num_actions + 1).float())
        prior = torch.softmax(logits.masked_fill(~legal, float("-inf")), dim=1)
        return prior, torch.tanh(mixed.squeeze(1) * 3.0)


@pytest.mark.parametrize("fpu_reduction", [0.0, 0.25])
def test_puct_searches_the_same(fpu_reduction):
    game = games.make("gomoku", size=6, k=4)
    roots = game.step(game.initial_state(5), torch.tensor([0, 7, 14, 21, 35]))
    evaluator, rule = SmoothEvaluator(game), PUCT(fpu_reduction=fpu_reduction)

    def run():
        prior, _ = evaluator(roots)
        tree = new_tree(game, roots, 201, make_keys(0, 5), root_prior=prior)
        simulate(tree, game, evaluator, rule, 200)
        return tree.root_visits(), tree.visits, tree.value_sum, tree.parent, tree.proof, tree.child_proof

    ours, theirs = both(run)
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b)


@pytest.mark.parametrize("parallel, virtual_loss", [(1, True), (8, True), (8, False)])
def test_puct_with_forced_playouts_searches_the_same(parallel, virtual_loss):
    game = games.make("gomoku", size=6, k=4)
    roots = game.step(game.initial_state(5), torch.tensor([0, 7, 14, 21, 35]))
    evaluator, rule = SmoothEvaluator(game), PUCT(forced_playouts=2.0, virtual_loss=virtual_loss)

    def run(rule):
        prior, _ = evaluator(roots)
        tree = new_tree(game, roots, 201, make_keys(0, 5), root_prior=prior)
        simulate(tree, game, evaluator, rule, 200, parallel=parallel)
        return tree.root_visits(), tree.visits, tree.value_sum, tree.parent, tree.pending

    ours, theirs = both(lambda: run(rule))
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b)
    assert torch.equal(ours[0].sum(dim=1), torch.full((5,), 200.0)) and not bool(ours[4].any())
    plain = run(PUCT(virtual_loss=virtual_loss))
    assert not torch.equal(plain[0], ours[0])  # the forced visits changed the search


class Counted:
    """An evaluator that counts its calls and the positions it was given."""

    def __init__(self, evaluator):
        self.evaluator, self.calls, self.positions = evaluator, 0, 0
        self.uses_keys = getattr(evaluator, "uses_keys", True)

    def __call__(self, states, keys=None, legal=None):
        self.calls += 1
        self.positions += states.batch_size
        return self.evaluator(states, keys, legal)


def test_a_subclass_with_rules_or_planes_of_its_own_runs_the_separate_steps():
    class Doubled(games.Gomoku):  # other planes: gomoku's compiled expansion would be wrong for it
        def encode(self, state):
            return super().encode(state) * 2

    class Tall(games.ConnectFour):  # another rule for the moves
        def legal_mask(self, state):
            return super().legal_mask(state)

    for game in (Doubled(size=6, k=4), Tall(), games.make("tictactoe"), games.make("connect4")):
        rows = game.initial_state(3)
        expansion = game.expand_rows(rows, torch.tensor([0]), torch.tensor([1]), torch.tensor([2]))
        assert (expansion is None) == (type(game) in (Doubled, Tall)), type(game).__name__


class PlanesEvaluator:
    """A deterministic stand-in for a network that reads only the network's input (a hash of
    the planes, row by row), with the network evaluator's two entries: positions, or positions
    already encoded (the search's compiled expansion gives those)."""

    uses_keys = False

    def __init__(self, game, reads_planes: bool = True):
        self.game, self.encoded_calls, self.reads_planes = game, 0, reads_planes

    def __call__(self, states, keys=None, legal=None):
        legal = self.game.legal_mask(states) if legal is None else legal
        return self._evaluate(self.game.encode(states) if self.reads_planes else None, legal, states.to_play)

    def evaluate_encoded(self, planes, legal, to_play):
        self.encoded_calls += 1
        assert (planes is None) == (not self.reads_planes)  # planes made exactly when read
        return self._evaluate(planes, legal, to_play)

    def _evaluate(self, planes, legal, to_play):
        # without planes (reads_planes False): from the legal moves and the player to move only
        flat = torch.cat([legal.float(), to_play.float().unsqueeze(1)], dim=1) if planes is None else planes.flatten(1)
        mixed = torch.sin((flat * torch.linspace(0.3, 2.9, flat.shape[1])).sum(dim=1, keepdim=True) * 7.0)
        logits = torch.cos(mixed * torch.arange(1, self.game.num_actions + 1).float())
        prior = torch.softmax(logits.masked_fill(~legal, float("-inf")), dim=1).nan_to_num_(0.0)  # 0 if none legal
        value = torch.tanh(mixed.squeeze(1) * 3.0)
        return prior, torch.where(to_play == 0, value, -value)


class CallOnly:
    """An evaluator's call alone, without `evaluate_encoded`: the search runs the expansion's separate steps."""

    def __init__(self, evaluator):
        self.evaluator, self.uses_keys = evaluator, evaluator.uses_keys

    def __call__(self, states, keys=None, legal=None):
        return self.evaluator(states, keys, legal)

    @property
    def encoded_calls(self):
        return self.evaluator.encoded_calls


class PUCTOfItsOwn(PUCT):
    """PUCT under another name: a rule the compiled walks do not know (the torch form walks it)."""


@pytest.mark.parametrize("kind", ["puct", "puct-parallel", "gumbel", "torch-walks", "connect4", "no-planes"])
def test_a_search_with_the_compiled_expansion_is_the_same_search(kind):
    """The same search with the game's compiled expansion, with the separate steps, and in
    the torch form: PUCT one leaf or 8 leaves a step, Gumbel, PUCT walked by the torch
    form over the compiled expansion, Connect Four, and an evaluator that reads no planes."""
    from azero.search import Gumbel, gumbel_noise, gumbel_search

    game = games.make("connect4") if kind == "connect4" else games.make("gomoku", size=6, k=4)
    reads_planes = kind != "no-planes"
    roots = game.initial_state(5)
    for ply in range(8):  # positions where lines are near: some walks reach finished games
        roots = game.step(roots, games.sample_uniform_legal(game.legal_mask(roots), make_keys(ply, 5)))
    assert not bool(roots.done.any())

    def run(evaluator):
        prior, value = evaluator(roots)
        tree = new_tree(game, roots, 201, make_keys(0, 5), root_prior=prior, root_value=value)
        if kind == "gumbel":
            noise = gumbel_noise(make_keys(1, 5), game.num_actions)
            gumbel_search(tree, game, evaluator, Gumbel(), 200, noise, considered=8)
        else:
            rule = PUCTOfItsOwn() if kind == "torch-walks" else PUCT()
            simulate(tree, game, evaluator, rule, 200, parallel=8 if kind == "puct-parallel" else 1)
        fields = [getattr(tree, f.name) for f in type(tree).FIELDS]
        return [*fields, *(getattr(tree.states, f.name) for f in dataclasses.fields(tree.states))], \
            evaluator.encoded_calls

    fused, calls = run(PlanesEvaluator(game, reads_planes))
    assert calls > 0  # the search took the compiled expansion
    separate, none = run(CallOnly(PlanesEvaluator(game, reads_planes)))
    with torch_only():
        torch_form, torch_calls = run(PlanesEvaluator(game, reads_planes))
    assert none == 0 and torch_calls == 0
    for ours, steps, theirs in zip(fused, separate, torch_form):
        assert torch.equal(ours, steps) and torch.equal(ours, theirs)
    assert bool(fused[FIELD_NAMES.index("terminal")].any())  # games ended inside the trees


@pytest.mark.parametrize("virtual_loss", [True, False])
@pytest.mark.parametrize("parallel", [3, 16])
@pytest.mark.parametrize("kind", ["ucb1", "puct", "puct-rollouts"])
def test_leaf_parallel_searches_the_same(kind, parallel, virtual_loss):
    game = games.make("gomoku", size=6, k=4)
    roots = game.step(game.initial_state(5), torch.tensor([0, 7, 14, 21, 35]))
    if kind == "ucb1":
        rule, evaluator = UCB1(virtual_loss=virtual_loss), RolloutEvaluator(game)
    else:
        rule = PUCT(virtual_loss=virtual_loss, fpu_reduction=0.25 if kind == "puct-rollouts" else 0.0)
        evaluator = SmoothEvaluator(game) if kind == "puct" else RolloutEvaluator(game)
    calls = []

    def run():
        counted = Counted(evaluator)
        prior = SmoothEvaluator(game)(roots)[0] if rule.uses_prior else None
        tree = new_tree(game, roots, 401, make_keys(0, 5), root_prior=prior, with_prior=rule.uses_prior)
        simulate(tree, game, counted, rule, 400, parallel=parallel)
        calls.append(counted.calls)
        return tree

    ours, theirs = both(run)
    for name in ("visits", "value_sum", "child_visits", "child_value_sum", "parent", "action", "children", "pending",
                 "next_node", *PROOF_FIELDS):
        assert torch.equal(getattr(ours, name), getattr(theirs, name)), name
    assert torch.equal(ours.root_visits().sum(dim=1), torch.full((5,), 400.0))  # exactly the budget
    assert not bool(ours.pending.any())  # nothing left in flight
    assert calls[0] == calls[1] and calls[0] < 400 // parallel * 2  # one call per step of up to `parallel` leaves


@pytest.mark.parametrize("rule, solver", [(UCB1(), False), (PUCT(), False), (UCB1(), True), (PUCT(), True)])
def test_walks_that_collide_on_a_small_tree_add_only_the_budget(rule, solver):
    # Three empty squares: 15 positions below the root, fewer than the walks of one step,
    # so most walks end at a leaf another walk of the step found, or at a finished game.
    game = games.make("tictactoe")
    root = game.from_board(torch.tensor([[1, -1, 1], [1, -1, -1], [0, 0, 0]]), to_play=0)
    roots = root.repeat_interleave(2)
    calls = []

    def run():
        counted = Counted(RolloutEvaluator(game))
        tree = new_tree(game, roots, 201, make_keys(5, 2), with_prior=rule.uses_prior)
        simulate(tree, game, counted, rule, 200, parallel=16, solver=solver)
        calls.append(counted.positions)
        return tree

    ours, theirs = both(run)
    for name in ("visits", "value_sum", "child_visits", "child_value_sum", "children", "pending", "next_node",
                 *PROOF_FIELDS):
        assert torch.equal(getattr(ours, name), getattr(theirs, name)), name
    assert bool(ours.proof.any()) == solver  # (proofs: the solver's, search/proofs.py)
    if solver:  # the root is proven: later walks stop there (search/proofs.py)
        assert int(ours.proof[0, 0]) != 0 and torch.equal(ours.visits[:, 0], torch.full((2,), 200.0))
        return
    assert torch.equal(ours.root_visits().sum(dim=1), torch.full((2,), 200.0))
    assert not bool(ours.pending.any())
    assert int(ours.next_node.max()) <= 16 and calls[0] == calls[1] == int(ours.next_node.sum()) - 2


@pytest.mark.parametrize("root_action", [[[4, 4], [2, 6]], [[4, 4, 4], [2, 6, 8]], [[4], [6]]])
def test_imposed_root_moves_per_walk_are_read_the_same_when_walks_collide(root_action):
    """Walk j of a step takes column j, a walk that collides counted; past the columns the
    rule chooses. The same in the compiled and the torch form (UCB1, pending visits)."""
    game = games.make("tictactoe")

    def run():
        tree = new_tree(game, game.initial_state(2), 40, make_keys(3, 2), with_prior=False)
        simulate(tree, game, RolloutEvaluator(game), UCB1(), 12, parallel=3, root_action=torch.tensor(root_action))
        return tree

    ours, theirs = both(run)
    for name in ("visits", "value_sum", "child_visits", "children", "pending", "next_node"):
        assert torch.equal(getattr(ours, name), getattr(theirs, name)), name
    assert ours.root_visits().sum(dim=1).tolist() == [12.0, 12.0]
    visited = ours.root_visits()[1].nonzero().squeeze(1).tolist()
    assert set(visited) == {a for a in root_action[1] if a >= 0}  # distinct moves: none collide at the root


@pytest.mark.parametrize("considered, simulations, parallel, rescale", [
    (8, 60, 1, False), (2, 30, 1, False), (8, 60, 8, False), (16, 40, 5, False), (8, 60, 1, True), (8, 60, 8, True),
])
def test_gumbel_searches_the_same(considered, simulations, parallel, rescale):
    """Gumbel's compiled descent and root choice against the torch forms, with noise at the root
    (and with sigma's Q rescaled, search.rescale_q)."""
    from azero.search import Gumbel, gumbel_noise, gumbel_search

    game = games.make("gomoku", size=6, k=4)
    roots = game.step(game.initial_state(5), torch.tensor([0, 7, 14, 21, 35]))
    evaluator, rule = SmoothEvaluator(game), Gumbel(c_scale=0.1, rescale=True) if rescale else Gumbel()

    def run():
        prior, value = evaluator(roots)
        tree = new_tree(game, roots, simulations + 1, make_keys(0, 5), root_prior=prior, root_value=value)
        noise = gumbel_noise(make_keys(1, 5), game.num_actions)
        result = gumbel_search(tree, game, evaluator, rule, simulations, noise, considered=considered,
                               parallel=parallel)
        return (tree.root_visits(), tree.visits, tree.value_sum, tree.parent, tree.proof, tree.proof_plies,
                tree.child_proof, result.action, result.policy)

    ours, theirs = both(run)
    for a, b in zip(ours[:-1], theirs[:-1]):
        assert torch.equal(a, b)
    assert torch.allclose(ours[-1], theirs[-1], atol=1e-6)
    assert int((ours[1][:, 1:] > 1).sum()) > 0  # below the root too: nodes visited more than once


@pytest.mark.parametrize("rescale", [False, True])
@pytest.mark.parametrize("priors", ["spread", "peaked", "underflowed"])
def test_gumbel_scores_below_the_root_match_the_torch_rule(priors, rescale):
    """The compiled Gumbel score of a node (pi' from prior * exp(sigma - max sigma), without
    logarithms) against selection.Gumbel.scores (softmax of log prior + sigma) on random nodes:
    equal to float32 rounding, the same move chosen, also where the priors underflowed to 0
    (products of float32's smallest normal)."""
    import numpy as np

    from azero.search import Gumbel, rule_kernels
    from azero.search.selection import NodeView

    generator = torch.Generator().manual_seed(7)
    batch, actions = 64, 36
    legal = torch.rand(batch, actions, generator=generator) < 0.8
    legal[:, 0] = True
    legal[1] = False  # a node without a legal move: every score -inf
    visits = torch.where(legal & (torch.rand(batch, actions, generator=generator) < 0.3),
                         torch.randint(1, 20, (batch, actions), generator=generator).float(), torch.zeros(()))
    visits[2:4] = torch.where(legal[2:4], 3.0, 0.0)  # every legal move visited
    visits[4] = 0.0  # none visited
    value_sum = visits * (torch.rand(batch, actions, generator=generator) * 2 - 1)
    value_sum[3] = visits[3] * 0.25  # all moves of equal Q (rescale's range is empty)
    logits = torch.randn(batch, actions, generator=generator) * {"spread": 1.0, "peaked": 6.0, "underflowed": 1.0}[priors]
    prior = torch.softmax(logits.masked_fill(~legal, -float("inf")), dim=1)
    if priors == "underflowed":
        prior = torch.zeros_like(prior)
    raw = torch.rand(batch, generator=generator) * 2 - 1
    rule = Gumbel(c_visit=50.0, c_scale=0.1 if rescale else 1.0, rescale=rescale)
    view = NodeView(visits=visits.sum(dim=1), q=torch.zeros(batch), child_visits=visits, child_value_sum=value_sum,
                    prior=prior, legal=legal, uniform=torch.zeros(batch), active=None, pending=None,
                    child_pending=None, raw_value=raw)
    theirs = rule.scores(view)
    ours = torch.empty(batch, actions)
    # the B nodes as the rows of a tree record (the fields the scores read; the others unread)
    tree = Tree.Arrays(**{f.name: np.zeros((batch, actions) if f.per_edge else batch, np.float32)
                          for f in Tree.FIELDS})._replace(
        child_visits=visits.numpy(), child_value_sum=value_sum.numpy(), legal=legal.to(torch.uint8).numpy(),
        prior=prior.contiguous().numpy())
    for b in range(batch):  # (with the rule's record, as the walker passes it)
        rule_kernels._gumbel_scores(b, tree, np.float32(raw[b]), rule_kernels.rule_params(rule), ours[b].numpy())
    assert torch.equal(torch.isinf(ours), ~legal)
    assert torch.allclose(ours[legal], theirs[legal], rtol=1e-5, atol=1e-6)
    assert torch.equal(ours.argmax(dim=1), theirs.argmax(dim=1))


def test_a_tree_that_reaches_finished_games_backs_up_their_results():
    # X to move wins at c3 at once; every path through c3 ends at a finished game.
    game = games.make("tictactoe")
    root = game.from_board(torch.tensor([[1, 1, 0], [-1, -1, 0], [0, 0, 0]]), to_play=0)

    def run(parallel):
        tree = search(game, root, RolloutEvaluator(game), UCB1(), 400, make_keys(0, 1), parallel=parallel)
        return tree.root_visits(), tree.root_q()

    for parallel in (4, 1):
        (va, qa), (vb, qb) = both(lambda: run(parallel))
        assert torch.equal(va, vb) and torch.equal(qa, qb)
        assert int(va[0].argmax()) == game.parse_action("c3") and float(qa[0, game.parse_action("c3")]) == 1.0


@pytest.mark.parametrize("width", [1, 3, 64, 225])
def test_uniform_legal_moves_are_the_same_and_uniform(width):
    g = torch.Generator().manual_seed(width)
    mask = torch.rand(256, width, generator=g) < 0.3
    mask[:, 0] |= torch.arange(256) % 3 == 0
    mask[5] = False  # no legal move: NO_ACTION
    for seed in range(3):
        keys = make_keys(seed, 256)
        a, b = both(lambda: games.sample_uniform_legal(mask, keys))
        assert torch.equal(a, b)
        assert int(a[5]) == NO_ACTION
        rows = mask.any(dim=1)
        assert bool(mask[rows].gather(1, a[rows].unsqueeze(1)).all())
        ga, gb = both(lambda: games.sample_uniform_legal(mask, torch.Generator().manual_seed(seed)))
        assert torch.equal(ga, gb)
    # one row repeated: every legal action about equally often, whichever draw hits
    row = torch.zeros(1, width, dtype=torch.bool)
    row[0, ::3] = True
    n = 30000
    picks = games.sample_uniform_legal(row.expand(n, width), make_keys(9, n))
    counts = torch.bincount(picks, minlength=width)[row[0]].float()
    expected = n / int(row.sum())
    assert int(counts.sum()) == n and bool(((counts - expected).abs() < 5 * expected**0.5).all())


def test_fold_is_the_same_for_scalar_and_per_game_tags():
    keys = make_keys(11, 300)
    for tag in (0, 7, -3, 2**40, torch.arange(300), torch.tensor([5]), torch.arange(300).view(300, 1)):
        a, b = both(lambda: games.keyed_random.fold(keys, tag))
        assert torch.equal(a, b)


@pytest.mark.parametrize("with_prior", [True, False])
def test_kept_subtrees_are_the_same(with_prior):
    from azero.search.tree import subtree

    game = games.make("gomoku", size=6, k=4)
    roots = game.step(game.initial_state(6), torch.tensor([0, 7, 14, 21, 35, 8]))
    if with_prior:
        evaluator, rule = SmoothEvaluator(game), PUCT()
        tree = new_tree(game, roots, 120, make_keys(0, 6), root_prior=evaluator(roots)[0])
    else:
        evaluator, rule = RolloutEvaluator(game), UCB1()
        tree = new_tree(game, roots, 120, make_keys(0, 6), with_prior=False)
    simulate(tree, game, evaluator, rule, 100)
    # the most visited move, a visited one, one never expanded, and no move (a finished game)
    visits = tree.root_visits()
    taken = visits.argmax(dim=1)
    taken[1] = int((visits[1] > 0).nonzero()[-1])
    taken[2] = int((tree.legal[2, 0] & (visits[2] == 0)).nonzero()[0]) if bool((tree.legal[2, 0] & (visits[2] == 0)).any()) else -1
    taken[3] = -1
    (a, kept_a), (b, kept_b) = both(lambda: subtree(tree, taken))
    assert torch.equal(kept_a, kept_b) and bool(kept_a[0]) and not bool(kept_a[3])
    for name in ("parent", "action", "mover_sign", "q_sign", "visits", "value_sum", "terminal", "terminal_value",
                 "legal", "children", "child_visits", "child_value_sum", "prior", "next_node", "keys"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None and y is None) or torch.equal(x, y), name
    used = (torch.arange(120).unsqueeze(0) < a.next_node.unsqueeze(1)).view(-1)
    assert a.states[used].equal(b.states[used])


def test_a_trusted_move_off_the_board_is_an_error_not_a_write_elsewhere():
    game = games.make("gomoku", size=5, k=4)
    state = game.initial_state(2)
    for bad in (25, -1):
        with pytest.raises(IndexError):
            game.step(state, torch.tensor([0, bad]), trusted=True)
    assert bool((state.board == 0).all())


def test_puct_on_a_tree_without_priors_takes_the_torch_form():
    from azero.search import kernels as search_kernels

    game = games.make("gomoku", size=5, k=4)
    tree = new_tree(game, game.initial_state(2), 10, make_keys(0, 2), with_prior=False)
    assert not search_kernels.supports(PUCT(), tree) and search_kernels.supports(UCB1(), tree)


def test_float64_draws_pick_as_torch_does():
    mask = torch.tensor([[True, True, True, False]])
    draw = torch.tensor([1 / 3 - 1e-12], dtype=torch.float64)
    a, b = both(lambda: random_true(mask, draw))
    assert torch.equal(a[0], b[0]) and int(a[0]) == 0


def test_gumbel_rounds_refuse_log_priors_of_other_trees():
    """The compiled root rounds read the log priors a search made once; an array of another shape
    (another batch's) is refused instead of read past its end."""
    import numpy as np

    from azero.search import Gumbel
    from azero.search import kernels as search_kernels

    game = games.make("gomoku", size=6, k=4)
    tree = new_tree(game, game.initial_state(3), 9, make_keys(0, 3))
    target, lengths = torch.zeros(3), torch.ones(3, dtype=torch.long)
    noise = torch.zeros(3, game.num_actions)
    fine = search_kernels.gumbel_round_actions(tree, Gumbel(), noise, target, lengths, 1,
                                               search_kernels.root_log_prior(tree))
    assert torch.equal(fine, search_kernels.gumbel_round_actions(tree, Gumbel(), noise, target, lengths, 1))
    with pytest.raises(ValueError, match="log priors"):
        search_kernels.gumbel_round_actions(tree, Gumbel(), noise, target, lengths, 1,
                                            np.zeros((2, game.num_actions), np.float32))
