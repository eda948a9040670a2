"""The search settings: one frozen object from the config or a player spec to the search, one name
per setting, each default written once."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
import torch

import games
from azero.checkpoint import atomic_save, load_checkpoint, network_checkpoint, search_settings
from azero.config import load_config
from azero.errors import UserError
from azero.loop import ladder_evaluator
from azero.network import NetworkConfig, PolicyValueNet
from azero.players import make
from azero.search import PUCT, Gumbel
from azero.search.settings import DEFAULTS, SearchSettings
from azero.selfplay import SelfPlay

REPO = Path(__file__).resolve().parent.parent
TTT = games.make("tictactoe")


def tiny_net():
    torch.manual_seed(0)
    return PolicyValueNet(NetworkConfig(blocks=1, channels=8, value_hidden=8), TTT).eval()


def test_puct_constants_are_written_once_in_the_source():
    """AlphaZero's c_init and c_base appear as numbers in one place (search/settings.py), which the
    config, the rules, forced playouts' pruning, NetworkSearch and the players all read."""
    places = {1.25: [], 19652: []}
    for path in sorted((REPO / "azero").rglob("*.py")) + sorted((REPO / "games").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value in places:
                places[node.value].append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert places == {1.25: [places[1.25][0]], 19652: [places[19652][0]]}, places
    assert all(place.startswith("azero/search/settings.py:") for found in places.values() for place in found)
    assert (PUCT().c_init, PUCT().c_base, Gumbel().c_scale) == (DEFAULTS.c_init, DEFAULTS.c_base, DEFAULTS.c_scale)


def test_settings_are_frozen_checked_and_changed_by_name():
    settings = SearchSettings(c_init=2)
    assert settings.c_init == 2.0 and isinstance(settings.c_init, float)  # read as the field's kind
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.c_init = 3.0
    with pytest.raises(UserError, match=r"^search.c_init=-1.0 is out of range; allowed: 0..100$"):
        SearchSettings(c_init=-1)
    with pytest.raises(UserError, match="search.algorithm='muzero' is not a valid choice; choose one of: puct, gumbel"):
        DEFAULTS.replace(algorithm="muzero")
    with pytest.raises(UserError, match="unknown search setting sims; valid settings: algorithm, simulations"):
        DEFAULTS.replace(sims=3)
    assert DEFAULTS.replace(c_visit=10).c_visit == 10.0 and DEFAULTS.c_visit == 50.0


def test_the_configs_settings_reach_self_play_the_ladder_and_checkpoints_whole(tmp_path):
    config = load_config(game="tictactoe", overrides=["search.c_init=2", "search.fpu_reduction=0.1",
                                                      "search.simulations=8", "selfplay.games=2"])
    assert isinstance(config.search, SearchSettings)
    play = SelfPlay(TTT, tiny_net(), config.search, config.selfplay, seed=0)
    assert play.searcher.settings is config.search
    assert play.searcher.rule == PUCT(c_init=2.0, fpu_reduction=0.1)
    assert ladder_evaluator(TTT, config, "cpu").settings is config.search
    saved, old = tmp_path / "saved.pt", tmp_path / "old.pt"
    atomic_save(network_checkpoint(tiny_net(), TTT, 1, config=config.to_dict()), saved)
    assert search_settings(load_checkpoint(saved)) == config.search
    atomic_save(network_checkpoint(tiny_net(), TTT, 1), old)  # written before checkpoints recorded them
    assert search_settings(load_checkpoint(old)) == DEFAULTS
    data = load_checkpoint(saved)
    data["config"]["search"]["c_init"] = -1.0
    with pytest.raises(UserError, match=r"checkpoint's saved search settings: search.c_init=-1.0 is out of range"):
        search_settings(data)


def test_an_az_spec_sets_the_settings_by_their_names(tmp_path):
    config = load_config(game="tictactoe", overrides=["search.c_init=3"])
    path = tmp_path / "net.pt"
    atomic_save(network_checkpoint(tiny_net(), TTT, 4, config=config.to_dict()), path)
    player = make(f"az:{path}:simulations=40,c_init=2,c_base=500,fpu_reduction=0.2", TTT)
    assert player.simulations == 40 and player.settings.simulations == 40
    assert player.searcher.rule == PUCT(c_init=2.0, c_base=500.0, fpu_reduction=0.2)
    assert player.spec == "az@4:sims=40,c_init=2,c_base=500,fpu_reduction=0.2"
    # the checkpoint's constants unless the spec gives others; the short spellings of before
    assert make(f"az:{path}:sims=40", TTT).searcher.rule == PUCT(c_init=3.0)
    gumbel = make(f"az:{path}:sims=8,algorithm=gumbel,considered=3", TTT)
    assert gumbel.searcher.considered_actions == 3 and gumbel.spec == "az@4:sims=8,algorithm=gumbel,considered=3"
    assert make(f"az:{path}:sims=8,algorithm=gumbel,considered_actions=3", TTT).spec == gumbel.spec
    with pytest.raises(UserError, match="az: options sims and simulations set the same search setting; give one"):
        make(f"az:{path}:sims=8,simulations=8", TTT)
    with pytest.raises(UserError, match="az: unknown option noise_fraction; valid options: sims"):
        make(f"az:{path}:noise_fraction=0.5", TTT)  # self-play's settings are no player's
    with pytest.raises(UserError, match=r"^az: option c_base=0.5 is out of range; allowed: 1..1e\+09$"):
        make(f"az:{path}:c_base=0.5", TTT)
    # a network trained with forced playouts plays without them
    forced = load_config(game="tictactoe", overrides=["search.forced_playouts=2"])
    atomic_save(network_checkpoint(tiny_net(), TTT, 5, config=forced.to_dict()), path)
    assert make(f"az:{path}:sims=8", TTT).searcher.rule.forced_playouts == 0.0


def test_a_zoo_spec_takes_the_long_names_over_its_card():
    player = make("zoo:tictactoe:simulations=12", TTT)
    assert player.simulations == 12 and player.spec.startswith("zoo:tictactoe:sims=12")
