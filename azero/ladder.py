"""Evaluation during training: the network against a ladder of opponents (random-rollout UCT
players by default, any player specs) and against the network evaluated before it.

Each evaluation plays the current network (searching with the run's search settings, PUCT or
Gumbel, at evaluation.simulations a move, no noise) against `opponents` rungs of the ladder
around its current strength (the window moves up when it scores over 75% against the top rung,
down when under 25% against the bottom one), and `previous_games` games against
the previously evaluated network. Every game opens with `opening_plies` random moves, each
opening played with both colours: the network searches without noise, and against a
deterministic rung (a Gomocup brain at a node budget, GNU Go, an earlier network) a match
would otherwise repeat two games. All results so far feed one
Bradley-Terry fit in which every evaluated network and every rung is a
player, anchored at the first (weakest) rung = 0 Elo. The games between successive
networks chain the rungs together, so no separate calibration of the ladder is
needed even when each network meets a single rung.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from games import Game

from .arena import play_match
from .config import EvaluationConfig
from .elo import ladder
from .network import PolicyValueNet
from .players import check_spec
from .players import make as make_player
from .players.az import AZPlayer
from .search.settings import DEFAULTS, SearchSettings


def rung_tag(rung: str) -> str:
    """A rung's name in metric names (eval/score_vs_TAG): `uct:1000` -> uct1000; an external
    engine (gtp:, pbrain:) -> its program's file name with its arguments and options, so that
    two levels of one engine differ and a folder path stays out:
    `gtp:gnugo --mode gtp --level 10` -> gnugo_mode_gtp_level_10,
    `pbrain:/opt/rapfi/pbrain-rapfi:nodes=250,turn=0` -> pbrain_rapfi_nodes_250_turn_0."""
    kind, _, rest = rung.partition(":")
    if kind not in ("gtp", "pbrain") or not rest.strip():
        return re.sub(r"[^A-Za-z0-9]+", "", rung.split(" ")[0])
    words = rest.replace('"', " ").replace("'", " ").split()
    program, _, options = words[0].partition(":") if kind == "pbrain" else (words[0], "", "")
    words = [PurePath(program).name, *words[1:], options]
    return re.sub(r"[^A-Za-z0-9]+", "_", " ".join(words)).strip("_")


class LadderEvaluator:
    def __init__(self, game: Game, config: EvaluationConfig, seed: int = 0, device="cpu",
                 settings: SearchSettings = DEFAULTS):
        self.game, self.config, self.seed, self.device = game, config, seed, device
        self.settings = settings  # the run's search settings (its [search]); evaluation.simulations a move
        self.rungs = [f"uct:{rung}" if isinstance(rung, int) else rung for rung in config.ladder]
        self.level = 0
        self.records: list[tuple[str, str, float, int]] = []
        self.previous: tuple[str, dict] | None = None  # (name, network weights) of the last network evaluated

    def check(self) -> None:
        """UserError for a rung that names no player this game can have (made and closed here,
        so that a bad ladder fails at the start of a run, not at its first evaluation)."""
        for rung in self.rungs:
            check_spec(rung, self.game, "evaluation.ladder rung", device=self.device, seed=self.seed)

    @property
    def anchor(self) -> str:
        return self.rungs[0]

    def evaluate(self, net: PolicyValueNet, iteration: int, *, progress: bool = True) -> dict[str, float]:
        config = self.config
        name = f"az@{iteration}"
        player = AZPlayer(self.game, net, config.simulations, settings=self.settings, device=self.device, name=name)
        count = min(config.opponents, len(self.rungs))
        start = min(self.level, len(self.rungs) - count)
        chosen = self.rungs[start : start + count]
        metrics: dict[str, float] = {}
        scores = []
        for rung in chosen:
            opponent = make_player(rung, self.game, device=self.device, seed=self.seed)
            try:
                result = play_match(self.game, player, opponent, config.games, seed=self.seed * 1000 + iteration,
                                    progress=progress, description=f"eval vs {rung}",
                                    opening_plies=config.opening_plies)
            finally:
                opponent.close()
            self.records.append((name, rung, result.a_wins + 0.5 * result.draws, result.games))
            tag = rung_tag(rung)
            metrics[f"eval/score_vs_{tag}"] = result.a_score
            metrics[f"eval/win_rate_vs_{tag}"] = result.a_wins / result.games
            scores.append(result.a_score)
        if self.previous is not None and config.previous_games:
            earlier = PolicyValueNet(net.config, self.game).to(self.device).eval()
            earlier.load_state_dict(self.previous[1])
            opponent = AZPlayer(self.game, earlier, config.simulations, settings=self.settings, device=self.device,
                                name=self.previous[0])
            result = play_match(self.game, player, opponent, config.previous_games,
                                seed=self.seed * 1000 + iteration + 500, progress=progress,
                                description=f"eval vs {self.previous[0]}", opening_plies=config.opening_plies)
            self.records.append((name, self.previous[0], result.a_wins + 0.5 * result.draws, result.games))
            metrics["eval/score_vs_previous"] = result.a_score
        self.previous = (name, {k: v.detach().cpu().clone() for k, v in net.state_dict().items()})
        if scores[-1] > 0.75 and start + count < len(self.rungs):
            self.level = start + 1
        elif scores[0] < 0.25 and start > 0:
            self.level = start - 1
        else:
            self.level = start
        ratings = ladder(self.records, anchor=self.anchor)
        if name in ratings:
            rating = ratings[name]
            metrics.update({"eval/elo": rating.elo, "eval/elo_low": rating.low, "eval/elo_high": rating.high})
        return metrics

    def state_dict(self) -> dict:
        data = {"level": self.level, "records": [list(r) for r in self.records]}
        if self.previous is not None:
            data["previous_name"], data["previous_model"] = self.previous
        return data

    def load_state_dict(self, data: dict) -> None:
        self.level = int(data["level"])
        self.records = [(str(a), str(b), float(s), int(n)) for a, b, s, n in data["records"]]
        if "previous_name" in data:
            self.previous = (str(data["previous_name"]), data["previous_model"])
