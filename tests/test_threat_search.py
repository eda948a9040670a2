"""The threat search at the root of a network search (azero/search/threat_proofs.py): a VCF's first
move proven won and played whatever the priors, the moves that do not stop the opponent's VCF
proven lost, self-play's target on the win, the switch, the compiled and torch forms alike, a kept
subtree's root checked again, other games untouched."""

from __future__ import annotations

import pytest
import torch

import games
from azero.network import NetworkConfig, PolicyValueNet
from azero.network_search import NetworkSearch
from azero.search import PUCT, new_tree, proofs, search_with_budget, simulate, threat_proofs
from azero.search.proofs import LOST, UNKNOWN, WON
from azero.search.settings import DEFAULTS, SearchSettings
from azero.search.tree import subtree
from games import threats
from games.keyed_random import make_keys
from test_kernels import SmoothEvaluator, both
from test_threats import GOMOKU, LONG_VCF, position

ATTACK = position(GOMOKU, LONG_VCF, to_play=1)  # O to move wins by five fours (9 plies), no fewer
# X to move must stop that VCF (without e6, X has no VCF of its own)
DEFEND = position(GOMOKU, {"X": [x for x in LONG_VCF["X"] if x != "e6"], "O": LONG_VCF["O"]}, to_play=0)


def vcf_first_move() -> int:
    win = threats.find_win(GOMOKU, ATTACK)
    assert int(win.status[0]) == threats.FOUND and int(win.length[0]) == 9
    return int(win.action[0])


def stopping_moves() -> torch.Tensor:
    assert int(threats.find_win(GOMOKU, DEFEND).status[0]) == threats.NONE
    guard = threats.forced_defence(GOMOKU, DEFEND)
    assert int(guard.status[0]) == threats.DEFENDED
    return guard.moves[0]  # (the delaying fours among them: not lost, only not a stop yet)


class Misleading:
    """An evaluator whose prior puts everything on one move `bad` (the network's value kept)."""

    def __init__(self, inner, bad: int):
        self.inner, self.bad = inner, bad

    def _prior(self, prior, legal):
        if prior is None:
            return None
        out = torch.zeros_like(prior)
        out[:, self.bad] = 1.0
        return torch.where(legal.gather(1, torch.full((prior.shape[0], 1), self.bad)), out, prior)

    def __call__(self, states, keys=None, legal=None):
        prior, value = self.inner(states, keys) if legal is None else self.inner(states, keys, legal)
        return self._prior(prior, GOMOKU.legal_mask(states) if legal is None else legal), value

    def evaluate_encoded(self, planes, legal, to_play):
        prior, value = self.inner.evaluate_encoded(planes, legal, to_play)
        return self._prior(prior, legal), value

    def __getattr__(self, name):
        return getattr(self.inner, name)


def network() -> PolicyValueNet:
    torch.manual_seed(0)
    return PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), GOMOKU).eval()


def misled(searcher: NetworkSearch, bad: int) -> NetworkSearch:
    searcher.evaluator = Misleading(searcher.evaluator, bad)
    return searcher


BAD = GOMOKU.parse_action("h8")  # an empty cell far from both sides' lines


@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_the_vcf_first_move_is_played_with_few_simulations(algorithm):
    from azero.players.base import Analysis
    from azero.session import describe_analysis

    first = vcf_first_move()
    assert BAD != first and bool(GOMOKU.legal_mask(ATTACK)[0, BAD])
    searcher = misled(NetworkSearch(GOMOKU, network(), algorithm=algorithm), BAD)
    assert searcher.threat_nodes == DEFAULTS.threat_nodes == 20000 and DEFAULTS.threats
    if algorithm == "gumbel":
        result = searcher.gumbel_search(ATTACK, make_keys(0, 1), 8, noise=False)
        tree, action = result.tree, result.action
        assert float(result.policy[0, first]) == pytest.approx(1.0)
    else:
        tree = searcher.fresh_tree(ATTACK, make_keys(0, 1), 9)
        assert int(tree.prior[0, 0].argmax()) == BAD
        searcher.search(tree, 8)
        action = proofs.respect_proofs(tree, tree.root_visits().argmax(dim=1))
    assert int(action[0]) == first
    proof, plies = proofs.root_proofs(tree)
    assert int(proof[0, first]) == WON and int(plies[0, first]) == 9
    assert int(tree.proof[0, 0]) == LOST and int(tree.proof_plies[0, 0]) == 9  # the root, its mover's view
    info = describe_analysis(GOMOKU, Analysis.from_tree(tree, action))
    assert info["proof"] == "wins in 9"


def test_the_timed_search_and_a_budgeted_one_play_it_too():
    first = vcf_first_move()
    evaluator = Misleading(SmoothEvaluator(GOMOKU), BAD)
    tree = search_with_budget(GOMOKU, ATTACK, evaluator, PUCT(), make_keys(0, 1), simulations=8,
                              root_prior=evaluator(ATTACK)[0], threat_nodes=20000)
    assert int(proofs.respect_proofs(tree, tree.root_visits().argmax(dim=1))[0]) == first


@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_no_move_that_lets_the_opponent_win_is_played(algorithm):
    stop = stopping_moves()
    assert not bool(stop[BAD])  # the prior's only move does not stop the threat
    searcher = misled(NetworkSearch(GOMOKU, network(), algorithm=algorithm), BAD)
    if algorithm == "gumbel":
        result = searcher.gumbel_search(DEFEND, make_keys(1, 1), 8, noise=False)
        tree, action = result.tree, result.action
        assert float(result.policy[0][~stop].sum()) == pytest.approx(0.0)
    else:
        tree = searcher.fresh_tree(DEFEND, make_keys(1, 1), 9)
        searcher.search(tree, 8)
        action = proofs.respect_proofs(tree, tree.root_visits().argmax(dim=1))
    assert bool(stop[int(action[0])])
    proof, plies = proofs.root_proofs(tree)
    legal = tree.legal[0, 0]
    assert bool((proof[0][legal & ~stop] == LOST).all()) and bool((plies[0][legal & ~stop] == 10).all())
    assert bool((proof[0][stop] != LOST).all())


def test_self_play_targets_the_vcf():
    from azero.config import load_config
    from azero.selfplay import SelfPlay

    first = vcf_first_move()
    config = load_config(game="gomoku", overrides=["search.simulations=8", "search.cheap_simulations=4",
                                                   "search.temperature_moves=0", "selfplay.games=2"])
    play = SelfPlay(GOMOKU, network(), config.search, config.selfplay, seed=0)
    play.searcher = misled(play.searcher, BAD)
    play.states = ATTACK.repeat_interleave(play.batch)
    policy, action, _, _ = play._search()
    assert action.tolist() == [first] * play.batch
    assert torch.allclose(policy[:, first], torch.ones(play.batch))


def test_without_threats_the_search_is_as_before():
    searcher = misled(NetworkSearch(GOMOKU, network(), threats=False), BAD)
    assert searcher.threat_nodes == 0
    tree = searcher.fresh_tree(ATTACK, make_keys(0, 1), 9)
    searcher.search(tree, 8)
    assert not bool(tree.child_proof.any()) and not bool(tree.threats_checked.any())
    assert int(proofs.respect_proofs(tree, tree.root_visits().argmax(dim=1))[0]) == BAD
    assert NetworkSearch(GOMOKU, network(), threat_nodes=0).threat_nodes == 0
    with pytest.raises(Exception):
        SearchSettings(threat_nodes=10**7 + 1)


def test_the_compiled_and_torch_forms_build_the_same_tree():
    roots = games.BoardState.cat([ATTACK, DEFEND])
    evaluator = SmoothEvaluator(GOMOKU)

    def run():
        tree = new_tree(GOMOKU, roots, 40, make_keys(3, 2), root_prior=evaluator(roots)[0])
        simulate(tree, GOMOKU, evaluator, PUCT(), 30, solver=True, threat_nodes=20000)
        return [getattr(tree, f.name).clone() for f in type(tree).FIELDS]

    ours, theirs = both(run)
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b)


def test_each_root_is_checked_once_and_a_kept_root_again(monkeypatch):
    calls = []
    original = threats.find_win
    monkeypatch.setattr(threats, "find_win", lambda *a, **k: calls.append(1) or original(*a, **k))
    evaluator = SmoothEvaluator(GOMOKU)
    tree = new_tree(GOMOKU, DEFEND, 40, make_keys(0, 1), root_prior=evaluator(DEFEND)[0])
    for _ in range(3):
        simulate(tree, GOMOKU, evaluator, PUCT(), 4, threat_nodes=20000)
    assert len(calls) == 1 and bool(tree.threats_checked[0, 0])
    action = proofs.respect_proofs(tree, tree.root_visits().argmax(dim=1))
    assert int(tree.children[0, 0, action[0]]) >= 0
    kept, ok = subtree(tree, action)
    assert bool(ok[0]) and not bool(kept.threats_checked[0, 0])
    simulate(kept, GOMOKU, evaluator, PUCT(), 4, threat_nodes=20000)
    assert len(calls) == 2 and bool(kept.threats_checked[0, 0])


@pytest.mark.parametrize("compiled", [True, False])
def test_a_proven_edge_expanded_later_keeps_its_proof(compiled):
    """Gumbel's imposed root actions may expand a root move proven lost: the node takes the proof."""
    stop = stopping_moves()
    evaluator = SmoothEvaluator(GOMOKU)

    def run():
        tree = new_tree(GOMOKU, DEFEND, 10, make_keys(0, 1), root_prior=evaluator(DEFEND)[0])
        threat_proofs.check_roots(tree, GOMOKU, 20000)
        simulate(tree, GOMOKU, evaluator, PUCT(), 1, root_action=torch.tensor([BAD]))
        return tree

    tree = run() if compiled else both(run)[1]
    child = int(tree.children[0, 0, BAD])
    assert child > 0 and not bool(stop[BAD])
    assert int(tree.child_proof[0, 0, BAD]) == LOST and int(tree.proof[0, child]) == LOST
    assert int(tree.proof_plies[0, child]) == int(tree.child_plies[0, 0, BAD]) == 9
    assert int(proofs.root_proofs(tree)[1][0, BAD]) == 10


def test_other_games_are_unaffected():
    game = games.make("connect4")
    roots = game.initial_state(1)
    evaluator = SmoothEvaluator(game)
    tree = new_tree(game, roots, 20, make_keys(0, 1), root_prior=evaluator(roots)[0])
    simulate(tree, game, evaluator, PUCT(), 10, threat_nodes=20000)
    assert not bool(tree.threats_checked.any()) and not bool(tree.child_proof.any())
    assert int(tree.proof[0, 0]) == UNKNOWN


@pytest.mark.parametrize("options", ["sims=8", "sims=8,algorithm=gumbel", "sims=8,seconds=30"])
def test_the_az_player_plays_the_vcf_and_takes_the_settings(tmp_path, options):
    from azero.checkpoint import atomic_save, network_checkpoint
    from azero.players import make

    saved = tmp_path / "net.pt"
    atomic_save(network_checkpoint(network(), GOMOKU, 1), saved)
    player = make(f"az:{saved}:{options}", GOMOKU)
    misled(player.searcher, BAD)
    analysis = player.analyse(ATTACK)
    first = vcf_first_move()
    assert int(analysis.action[0]) == first
    assert int(analysis.proof[0, first]) == WON and int(analysis.proof_plies[0, first]) == 9
    plain = make(f"az:{saved}:{options},threats=false", GOMOKU)
    assert "threats=false" in plain.spec and plain.searcher.threat_nodes == 0
    misled(plain.searcher, BAD)
    assert int(plain.analyse(ATTACK).proof[0, first]) == UNKNOWN
    assert make(f"az:{saved}:sims=8,threat_nodes=500", GOMOKU).searcher.threat_nodes == 500


def test_a_refilled_tree_forgets_the_old_roots_proofs_and_values_a_proven_root():
    evaluator = SmoothEvaluator(GOMOKU)
    tree = new_tree(GOMOKU, ATTACK, 10, make_keys(0, 1), root_prior=evaluator(ATTACK)[0])
    simulate(tree, GOMOKU, evaluator, PUCT(), 4, threat_nodes=20000)
    assert bool(tree.child_proof[0, 0].any()) and int(tree.next_node[0]) == 1  # proven, no child expanded
    assert float(tree.root_value()[0]) == 1.0  # won for the player to move
    fresh = new_tree(GOMOKU, DEFEND, 10, make_keys(0, 1), reuse=tree)
    assert not bool(fresh.child_proof.any()) and not bool(fresh.child_plies.any())
    assert not bool(fresh.threats_checked.any()) and int(fresh.proof[0, 0]) == UNKNOWN
