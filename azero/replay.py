"""The replay buffer: a bounded ring of training samples, sampled uniformly, with symmetries.

Samples arrive an iteration at a time. The loop saves each iteration's new
samples as one file (`replay/iter-000012.pt`); a resumed run rebuilds the same
ring by adding those files again in order, and files wholly overwritten by newer
samples are deleted. So the buffer on disk costs one write of new samples per
iteration, never a rewrite of the whole buffer.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from games import Game

from .checkpoint import atomic_save, safe_load
from .errors import UserError
from .selfplay import Samples


class ReplayBuffer:
    """Up to `capacity` samples; the oldest are overwritten first.

    One array per kept field of `Samples` (`names`; by default all), with the sample first:
    planes uint8 [N, C, H, W], policy float [N, A], legal bool [N, A], value float [N], and
    the fields after it. Batches carry the fields not kept at their defaults (no target).
    """

    def __init__(self, game: Game, capacity: int, names: list[str] | None = None):
        h, w = game.board_shape
        self.game, self.capacity = game, capacity
        empty = Samples(torch.zeros(1, game.num_planes, h, w, dtype=torch.uint8), torch.zeros(1, game.num_actions),
                        torch.zeros(1, game.num_actions, dtype=torch.bool), torch.zeros(1))
        self.names = list(empty.fields()) if names is None else list(names)
        for name in self.names:
            example = getattr(empty, name)
            setattr(self, name, torch.zeros(capacity, *example.shape[1:], dtype=example.dtype))
        self.size = 0
        self.cursor = 0
        self.total_added = 0

    def __len__(self) -> int:
        return self.size

    def sample_bytes(self) -> int:
        """The bytes one sample takes in the ring (all its kept fields)."""
        return sum(getattr(self, name)[0].nbytes for name in self.names) if self.capacity else 0

    def add(self, samples: Samples) -> None:
        """Sample k of all ever added goes to slot k % capacity (so a ring rebuilt from the
        newest chunks, starting at the right slot, is the same ring)."""
        n = len(samples)
        start = self.cursor
        if n > self.capacity:  # only the newest fit; they go where adding them all would leave them
            start = (self.cursor + n - self.capacity) % self.capacity
            samples = samples.map(lambda t: t[-self.capacity:])
        index = (start + torch.arange(len(samples))) % self.capacity
        for name in self.names:
            getattr(self, name)[index] = getattr(samples, name)
        self.cursor = int((self.cursor + n) % self.capacity)
        self.size = min(self.capacity, self.size + n)
        self.total_added += n

    def sample(self, batch: int, generator: torch.Generator, augment: bool = True) -> Samples:
        """A uniform batch of `Samples`, planes as float [n, C, H, W].

        With `augment`, each sample is seen through a random symmetry of the board: planes and
        ownership move as boards, policy, legal moves and the opponent's policy as actions.
        """
        index = torch.randint(0, self.size, (batch,), generator=generator)
        out = Samples(**{name: getattr(self, name)[index] for name in self.names})
        out.planes = out.planes.float()
        symmetries = self.game.symmetries
        if augment and len(symmetries) > 1:
            which = torch.randint(0, len(symmetries), (batch,), generator=generator)
            for k, sym in enumerate(symmetries[1:], start=1):
                rows = (which == k).nonzero().squeeze(1)
                if rows.numel():
                    for name in ("planes", "ownership"):
                        if name in self.names:
                            getattr(out, name)[rows] = sym.planes(getattr(out, name)[rows])
                    for name in ("policy", "legal", "opponent_policy"):
                        if name in self.names:
                            getattr(out, name)[rows] = sym.policy(getattr(out, name)[rows])
        return out


CHUNK = re.compile(r"^iter-(\d{6})-(\d+)\.pt$")


def save_chunk(folder: Path, iteration: int, samples: Samples, names: list[str] | None = None) -> None:
    """One iteration's new samples as `iter-<iteration>-<count>.pt` (written atomically): the
    fields `names` (by default all)."""
    path = folder / f"iter-{iteration:06d}-{len(samples)}.pt"
    fields = samples.fields()
    kept = {name: fields[name] for name in (fields if names is None else names)}
    atomic_save({"iteration": iteration, **kept}, path, point="replay")


def chunks(folder: Path) -> list[tuple[int, int, Path]]:
    """(iteration, sample count, path) of every chunk, oldest first."""
    found = []
    for path in folder.glob("iter-*.pt"):
        match = CHUNK.match(path.name)
        if match:
            found.append((int(match.group(1)), int(match.group(2)), path))
    return sorted(found)


def restore(buffer: ReplayBuffer, folder: Path, up_to: int, positions: int) -> None:
    """Refill an empty `buffer` from the chunks of iterations <= up_to, deleting chunks of later
    iterations (an iteration interrupted before its checkpoint was written) once the folder is
    known to fit the checkpoint and every chunk read is whole (UserError, and nothing deleted,
    if not).

    positions: the samples the run has added in all (latest.pt's count). The ring is rebuilt
    as the run left it, each sample in its slot: the chunks pruned away (wholly overwritten)
    are counted in, not read.
    """
    found = chunks(folder)
    kept = [(iteration, count, path) for iteration, count, path in found if iteration <= up_to]
    pruned = positions - sum(count for _, count, _ in kept)
    if pruned < 0:  # checked before anything is deleted: a refused folder stays as it was
        raise UserError(f"{folder} holds {-pruned} more replay samples than the run's checkpoint counts; "
                        "the folder does not belong to this checkpoint")
    buffer.cursor = pruned % buffer.capacity
    buffer.total_added = pruned
    for iteration, count, path in kept:
        buffer.add(read_chunk(path, buffer, iteration, count))
    for iteration, _, path in found:
        if iteration > up_to:
            path.unlink(missing_ok=True)


def read_chunk(path: Path, buffer: ReplayBuffer, iteration: int, count: int) -> Samples:
    """The samples of one chunk, checked against what save_chunk writes for `buffer` (its game and
    fields) and its name (`iteration`, `count`): the archive's checksums (safe_load's, as for
    checkpoints), each field's presence, dtype and shape, finite targets. UserError naming the
    file otherwise: a resume then stops with nothing changed; the file can be restored, or moved
    out of the folder to go on without its samples. Fields a chunk written before they existed
    lacks take their defaults."""
    data = safe_load(path, "replay file")
    problem = chunk_problem(data, buffer, iteration, count)
    if problem:
        raise UserError(f"{path} is a damaged replay chunk ({problem}); nothing was changed: restore it, or move "
                        f"it out of {path.parent} to resume without its {count} samples")
    return Samples(**{name: data[name] for name in buffer.names if name in data})


def chunk_problem(data, buffer: ReplayBuffer, iteration: int, count: int) -> str | None:
    """What in a loaded chunk differs from what save_chunk writes, in a few words, or None."""
    if not isinstance(data, dict):
        return f"it holds a {type(data).__name__}, not a table of fields"
    if data.get("iteration") != iteration:
        return f"it says iteration {data.get('iteration')!r:.40}, its name {iteration}"
    for name in buffer.names:
        if name not in data:
            if name in REQUIRED:
                return f"no {name!r} field"
            continue
        value, ring = data[name], getattr(buffer, name)
        if not isinstance(value, torch.Tensor):
            return f"its {name!r} is not a tensor"
        if value.dtype != ring.dtype:
            return f"its {name!r} is {value.dtype}, not {ring.dtype}"
        if value.shape != (count, *ring.shape[1:]):
            return f"its {name!r} has shape {list(value.shape)}, not {[count, *ring.shape[1:]]} ({count} rows, as " \
                   "its name says)"
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            return f"its {name!r} holds values that are not finite numbers"
    return None


REQUIRED = ("planes", "policy", "legal", "value")  # the fields every chunk has held


def prune(folder: Path, capacity: int) -> None:
    """Delete the oldest chunks whose samples the ring no longer holds."""
    newer = 0
    for _, count, path in reversed(chunks(folder)):
        if newer >= capacity:
            path.unlink(missing_ok=True)
        newer += count
