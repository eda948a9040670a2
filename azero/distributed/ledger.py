"""What a self-play actor sends the learner, and the learner's check that no finished game is
lost or counted twice.

An actor process is one *incarnation* (a restarted actor is a new one). Each incarnation numbers
its chunks 0, 1, 2, ... and its games by the ids SelfPlay gives them (ids rise as games start;
a game finishes once). A chunk also carries the lowest id of a game still in progress after it
(the watermark): no later chunk of that incarnation can hold a game below it. So the ledger
keeps per incarnation only the next chunk number, the watermark and the ids at or above it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch

from ..selfplay import Samples


@dataclass
class Chunk:
    """Finished games of one actor, its samples game after game.

    samples:   Samples of n positions; game i's positions are rows offsets[i] : offsets[i] + lengths[i]
    game_ids:  long [g], lengths long [g] (sum = n), results long [g] (first player's view)
    """

    actor: int
    incarnation: str
    sequence: int
    pid: int
    version: int  # of the weights that played these games
    samples: Samples
    game_ids: torch.Tensor
    lengths: torch.Tensor
    results: torch.Tensor
    watermark: int
    seconds: float  # spent playing
    network_calls: int
    network_positions: int
    load_seconds: float = 0.0  # spent fetching and loading new weights before playing


def select_games(chunk: Chunk, keep: torch.Tensor) -> Samples:
    """The samples of the games where `keep` (bool [g]) is true."""
    samples = chunk.samples
    if bool(keep.all()):
        return samples
    if not bool(keep.any()):  # a refused chunk, whose lengths may not even match its samples
        return type(samples)(**{f.name: getattr(samples, f.name)[:0] for f in dataclasses.fields(samples)})
    rows = torch.repeat_interleave(keep, chunk.lengths)
    return type(samples)(**{f.name: getattr(samples, f.name)[rows] for f in dataclasses.fields(samples)})


@dataclass
class Ledger:
    """Every incarnation's next chunk number, watermark and finished ids at or above it."""

    incarnations: dict = field(default_factory=dict)
    missing_chunks: int = 0  # chunks an incarnation numbered but the learner never got
    duplicate_chunks: int = 0
    duplicate_games: int = 0
    malformed_chunks: int = 0

    def admit(self, chunk: Chunk) -> torch.Tensor:
        """Which of the chunk's games are new: bool [g] (all false if the chunk is refused),
        recording every fault found."""
        refused = torch.zeros(chunk.lengths.shape, dtype=torch.bool)
        if int(chunk.lengths.sum()) != len(chunk.samples) or chunk.game_ids.shape != chunk.lengths.shape:
            self.malformed_chunks += 1
            return refused
        entry = self.incarnations.setdefault(chunk.incarnation, {"next": 0, "watermark": 0, "seen": set()})
        if chunk.sequence < entry["next"]:
            self.duplicate_chunks += 1
            return refused
        self.missing_chunks += chunk.sequence - entry["next"]
        entry["next"] = chunk.sequence + 1
        ids = chunk.game_ids.tolist()
        keep = []
        for game_id in ids:
            fresh = game_id >= entry["watermark"] and game_id not in entry["seen"]
            keep.append(fresh)
            if fresh:
                entry["seen"].add(game_id)
        self.duplicate_games += keep.count(False)
        entry["watermark"] = max(entry["watermark"], chunk.watermark)
        entry["seen"] = {g for g in entry["seen"] if g >= entry["watermark"]}
        return torch.tensor(keep, dtype=torch.bool)

    def faults(self) -> dict[str, float]:
        return {"actors/missing_chunks": self.missing_chunks, "actors/duplicate_chunks": self.duplicate_chunks,
                "actors/duplicate_games": self.duplicate_games, "actors/malformed_chunks": self.malformed_chunks}
