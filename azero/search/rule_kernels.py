"""The selection rules' compiled form (numba), for the walks of search/kernels.py: a record of
each rule's constants, named as the rule's fields (`rule_params`), and one select function per
rule, which `select_child` picks by the record's type when a walk compiles, so each rule
compiles its own walk and reads its constants and the tree's fields by name.

Same formulas, random draws and tie-breaking (the first maximum) as azero.search.selection;
the float32 logarithm and exponential here are numba's, not torch's (see search/kernels.py).
The loops compile with numpy's error model: no check for a division by zero (every divisor
here is positive; PUCT refuses constants that would make one zero), which leaves the compiler
free to vectorise the score loops.
See games.kernels for the why, AZERO_NO_KERNELS, and a note on numba's disk cache.
"""

from __future__ import annotations

import typing
from typing import NamedTuple

import numpy as np

from games.kernels import hash_one, njit, nth_of, overload

from .proofs import LOST
from .selection import LOWEST_SCORE, PUCT, RESCALE_EPSILON, UCB1, Gumbel

_INF = np.float32(np.inf)
_TINY = np.float32(np.finfo(np.float32).tiny)
_RESCALE_EPSILON = np.float32(RESCALE_EPSILON)
_LOWEST = np.float32(LOWEST_SCORE)
_PROVEN_LOST = np.int8(LOST)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _uniform_draw(key, depth):  # pragma: no cover - compiled; games.keyed_random.uniform_draw, one value
    v = hash_one(key + (((depth + 1) * 0x632BE5AB) & 0xFFFFFFFF))
    return np.float32(v >> 8) * np.float32(1.0 / (1 << 24))


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _first_max(scores, count):  # pragma: no cover - compiled; torch.argmax: the first maximum
    best, index = scores[0], 0
    for a in range(1, count):
        if scores[a] > best:
            best, index = scores[a], a
    return index


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _legal_score(score):  # pragma: no cover - compiled; selection.legal_scores, one legal move's score
    return score if score > _LOWEST else _LOWEST  # (NaN and -inf: the lowest, above an illegal move's -inf)


# -- the rules' constants, by name ------------------------------------------------------------------
# Each rule the walks know has a record of its constants, named as the rule's own fields
# (`rule_params` reads them off the rule), and a select function below; `select_child` picks the
# function by the record's type when a walk compiles, so each rule compiles its own walk.


class UCB1Params(NamedTuple):
    """selection.UCB1's constants in the compiled walk."""

    c: float
    virtual_loss: bool


class PUCTParams(NamedTuple):
    """selection.PUCT's constants in the compiled walk."""

    c_init: float
    c_base: float
    fpu_reduction: float
    forced_playouts: float
    virtual_loss: bool


class GumbelParams(NamedTuple):
    """selection.Gumbel's constants in the compiled walk."""

    c_visit: float
    c_scale: float
    rescale: bool


_PARAMS = {UCB1: UCB1Params, PUCT: PUCTParams, Gumbel: GumbelParams}


def rule_params(rule):
    """The record of `rule`'s constants for the compiled walk: the rule's fields of the record's
    names, converted to the record's declared types (None for a rule without a compiled walk)."""
    record = _PARAMS.get(type(rule))
    if record is None:
        return None
    kinds = typing.get_type_hints(record)
    return record(**{name: kinds[name](getattr(rule, name)) for name in record._fields})


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _gumbel_node(flat, tree, raw, rule):  # pragma: no cover - compiled
    """What sigma(completed Q) needs at node `flat` (selection.completed_q and sigma; raw: the
    node's raw value for the chooser): (the node's total child visits, sigma's scale, the low
    end and the span of q_hat's range (`rule.rescale`: the legal moves' completed Q), the mixed
    value that completes the Q of the unvisited moves, whether a legal move is unvisited)."""
    child_visits, child_value_sum, prior, legal = tree.child_visits, tree.child_value_sum, tree.prior, tree.legal
    total, most = np.float32(0.0), np.float32(0.0)
    weighted, weight_sum = np.float32(0.0), np.float32(0.0)
    low, high = _INF, -_INF  # (with rescale) the visited moves' Q, then the completed Q of the unvisited
    unvisited = False
    for a in range(child_visits.shape[1]):
        n = child_visits[flat, a]
        total += n
        most = max(most, n)
        if n > 0:  # (a visited move is legal)
            p = max(prior[flat, a], _TINY)
            q = child_value_sum[flat, a] / n
            weighted += p * q
            weight_sum += p
            if rule.rescale:
                low, high = min(low, q), max(high, q)
        elif legal[flat, a] != 0:
            unvisited = True
    mean_q = weighted / max(weight_sum, _TINY)
    mixed = (raw + total * mean_q) / (np.float32(1.0) + total)
    scale = (np.float32(rule.c_visit) + most) * np.float32(rule.c_scale)
    span = np.float32(1.0)  # (read only with rescale)
    if rule.rescale:
        if unvisited:
            low, high = min(low, mixed), max(high, mixed)
        span = max(high - low, _RESCALE_EPSILON)
    return total, scale, low, span, mixed, unvisited


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _q_hat(q, low, span, rescale):  # pragma: no cover - compiled; sigma's value on [0, 1]
    return (q - low) / span if rescale else np.float32(0.5) * (q + np.float32(1.0))


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _gumbel_sigma(flat, tree, raw, rule, out):  # pragma: no cover - compiled
    """out[a] = sigma(completed Q) at node `flat` for every action (selection.sigma; `rule.rescale`:
    q_hat min-max normalised over the legal moves); raw: the node's raw value for the chooser."""
    child_visits, child_value_sum = tree.child_visits, tree.child_value_sum
    _, scale, low, span, mixed, _ = _gumbel_node(flat, tree, raw, rule)
    for a in range(out.shape[0]):
        n = child_visits[flat, a]
        q = child_value_sum[flat, a] / n if n > 0 else mixed
        out[a] = scale * _q_hat(q, low, span, rule.rescale)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _gumbel_scores(flat, tree, raw, rule, out):  # pragma: no cover - compiled
    """out[a] = pi'(a) - N(a) / (1 + sum N) at node `flat`, -inf where illegal or proven lost for the
    chooser (selection.Gumbel.scores).

    pi' = softmax(log prior + sigma) is computed as prior * exp(sigma - max sigma), normalised:
    the same policy (but for float32 rounding) without a logarithm, and with one exponential
    for each visited move and one for all the unvisited, whose sigma is the mixed value's
    (those calls to the maths library were most of a walk's cost). A prior that underflowed to
    0 counts as float32's smallest normal, as in the logarithms; the move of largest sigma
    keeps its whole prior, so the sum is at least that, and products below float32's normals
    round by under 1e-7 of pi'."""
    child_visits, child_value_sum, prior, legal = tree.child_visits, tree.child_value_sum, tree.prior, tree.legal
    actions = out.shape[0]
    total, scale, low, span, mixed, unvisited = _gumbel_node(flat, tree, raw, rule)
    unvisited_sigma = scale * _q_hat(mixed, low, span, rule.rescale)
    top = unvisited_sigma if unvisited else -_INF
    for a in range(actions):  # sigma of the visited moves (the few), and the largest sigma
        n = child_visits[flat, a]
        if n > 0:
            out[a] = scale * _q_hat(child_value_sum[flat, a] / n, low, span, rule.rescale)
            top = max(top, out[a])
    shared = np.exp(unvisited_sigma - top)
    mass = np.float32(0.0)
    for a in range(actions):
        if legal[flat, a] != 0:
            weight = np.exp(out[a] - top) if child_visits[flat, a] > 0 else shared
            out[a] = max(prior[flat, a], _TINY) * weight
            mass += out[a]
    child_proof = tree.child_proof
    for a in range(actions):
        if legal[flat, a] != 0 and child_proof[flat, a] != _PROVEN_LOST:  # (selection.drop_lost)
            out[a] = _legal_score(out[a] / mass - child_visits[flat, a] / (np.float32(1.0) + total))
        else:
            out[a] = -_INF


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _pending_children(tree, flat, base, flight):  # pragma: no cover - compiled
    """flight[a]: the descents in flight through each child of node `flat` (zeros, and the
    sequential scores, when none is); returns those through the node itself."""
    children, pending = tree.children, tree.pending
    node_pending = pending[flat]
    for a in range(flight.shape[0]):
        flight[a] = np.float32(0.0)
    if node_pending > 0:
        for a in range(flight.shape[0]):
            child = children[flat, a]
            if child >= 0:
                flight[a] = pending[base + child]
    return node_pending


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _select_ucb1(rule, tree, flat, base, key, depth, flight, scores):  # pragma: no cover - compiled; UCB1.select
    children, visits, legal = tree.children, tree.visits, tree.legal
    child_visits, child_value_sum, child_proof = tree.child_visits, tree.child_value_sum, tree.child_proof
    actions = children.shape[1]
    n_parent = max(visits[flat] + _pending_children(tree, flat, base, flight), np.float32(1.0))
    action = 0
    untried = 0
    for a in range(actions):  # branch-free, vectorised
        untried += (legal[flat, a] != 0) & (child_visits[flat, a] == 0) & (flight[a] == 0)
    if untried > 0:
        nth = nth_of(_uniform_draw(key, depth), untried)
        seen = 0
        for a in range(actions):
            seen += (legal[flat, a] != 0) & (child_visits[flat, a] == 0) & (flight[a] == 0)
            if seen > nth:
                action = a
                break
    else:
        weight = np.sqrt(np.log(n_parent)) * np.float32(2.0 * rule.c)
        for a in range(actions):  # vectorised: every child's score, -inf if untried
            total = child_visits[flat, a] + flight[a]
            n = max(total, np.float32(1.0))
            if rule.virtual_loss:
                mean = (child_value_sum[flat, a] - flight[a]) / n
            else:
                mean = child_value_sum[flat, a] / max(child_visits[flat, a], np.float32(1.0))
            score = mean + weight * (np.float32(1.0) / np.sqrt(n))
            # (a child proven lost scores as an illegal move: selection.drop_lost)
            scores[a] = _legal_score(score) if total != 0 and child_proof[flat, a] != _PROVEN_LOST else -_INF
        action = _first_max(scores, actions)
    return action


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _select_puct(rule, tree, flat, base, key, depth, flight, scores):  # pragma: no cover - compiled; PUCT.select
    children, visits, value_sum, q_sign = tree.children, tree.visits, tree.value_sum, tree.q_sign
    child_visits, child_value_sum, prior, legal = tree.child_visits, tree.child_value_sum, tree.prior, tree.legal
    child_proof = tree.child_proof
    actions = children.shape[1]
    n_parent = max(visits[flat] + _pending_children(tree, flat, base, flight), np.float32(1.0))
    w = np.log1p((n_parent + np.float32(1.0)) * np.float32(1.0 / rule.c_base)) + np.float32(rule.c_init)
    w = w * np.sqrt(n_parent) * np.float32(2.0)
    q = value_sum[flat] / max(visits[flat], np.float32(1.0)) * q_sign[flat]
    fpu = min(max(q - np.float32(2.0 * rule.fpu_reduction), np.float32(-1.0)), np.float32(1.0)) / w
    for a in range(actions):  # vectorised: every child's score, -inf if illegal
        n = child_visits[flat, a] + flight[a]
        if rule.virtual_loss:
            exploit = (child_value_sum[flat, a] - flight[a]) / (n * w) if n > 0 else fpu
        else:
            done = child_visits[flat, a]
            exploit = child_value_sum[flat, a] / (done * w) if done > 0 else fpu
        score = exploit + prior[flat, a] / (n + np.float32(1.0))
        # (a child proven lost scores as an illegal move: selection.drop_lost)
        scores[a] = _legal_score(score) if legal[flat, a] != 0 and child_proof[flat, a] != _PROVEN_LOST else -_INF
    forced = rule.forced_playouts
    if depth == 0 and forced > 0:  # forced playouts (selection.PUCT._forced): visited root moves short first
        root_total = np.float32(0.0)  # the visits counting those in flight, n + o, as in selection.py
        for a in range(actions):
            root_total += child_visits[flat, a] + flight[a]
        for a in range(actions):
            n = child_visits[flat, a] + flight[a]
            if (legal[flat, a] != 0 and n > 0 and n < np.sqrt(np.float32(forced) * prior[flat, a] * root_total)
                    and child_proof[flat, a] != _PROVEN_LOST):
                scores[a] = _INF
    return _first_max(scores, actions)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _select_gumbel(rule, tree, flat, base, key, depth, flight, scores):  # pragma: no cover - compiled; Gumbel.select
    # (no pending visits: the walks of a step go below different root moves)
    raw = tree.raw_value[flat] * tree.q_sign[flat]
    _gumbel_scores(flat, tree, raw, rule, scores)
    return _first_max(scores, tree.children.shape[1])


_SELECTS = {UCB1Params: _select_ucb1, PUCTParams: _select_puct, GumbelParams: _select_gumbel}


def select_child(rule, tree, flat, base, key, depth, flight, scores):
    """The action `rule` (a record of `rule_params`) picks at node `flat` (b * N + node) of the trees
    `tree` (the tree's record, `tree_arrays`), `base` = b * N; key: the walk's random key, depth: the
    node's; flight, scores: float32 [A] scratch. Compiled code only: the implementation is the
    select function of the record's type, chosen when the caller compiles."""
    raise TypeError("select_child runs inside compiled code only")


@overload(select_child, inline="always", jit_options={"error_model": "numpy", "nogil": True})
def _select_child_of(rule, tree, flat, base, key, depth, flight, scores):  # pragma: no cover - compiled
    select = _SELECTS.get(getattr(rule, "instance_class", None))
    return None if select is None else select.py_func  # (its body, inlined into the walk)
