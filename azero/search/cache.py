"""A bounded table of network evaluations keyed by a 64-bit hash of everything the network sees.

    cached = CachedEvaluator(evaluator, entries=1 << 16, version=evaluator.weights_version)
    prior, value = cached.evaluate_encoded(planes, legal, to_play)   # as the evaluator's own

Gomoku and Go reach one position by many move orders, consecutive moves of a game share most
of their trees, and the games of a batch share their openings; KataGo, OpenSpiel and
AlphaZero.jl keep a table of evaluations for that. The key is a hash of the position's planes
(the network's input: the board, the side to move's view, and whatever else a game encodes,
such as history planes), its legal moves (the network masks its policy with them; Go's superko
makes them depend on more than the board) and the player to move; two positions the network
cannot tell apart share an entry, which is what a cache of a function of its input should do.

The table is direct-mapped: entry `hash mod entries` holds the last position stored there, with
its full 64-bit key, so a lookup is one comparison and the memory is fixed when the table is
made (`entries` x (A + 1) float32 numbers and a key each). A hit returns the stored prior and
value unchanged, so a search with the table makes the same choices as one without it whenever
the network's outputs for a position do not depend on the rest of its batch (float32 on a CPU
does not promise that to the last bit; the tests use an evaluator that does).

`version()`, when given, names the weights: the table empties itself when it changes (the next
iteration's network must not read the last one's evaluations). An evaluator that draws random
numbers (`uses_keys`, e.g. rollouts) is not cached: its answers are not a function of the
position.

The hash: each 32-bit word of the row (planes as float32 bits, then the legal mask and the
player to move, one word each) times its own odd 64-bit constant, summed modulo 2**64, then
mixed (splitmix64's finaliser). The same arithmetic runs compiled on the CPU (numba, unsigned
wrap-around) and in torch on other devices (int64 wrap-around gives the same bits).
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from games.kernels import njit, twin

from .memory import memory_limit, size_text

MAX_ENTRIES = 1 << 24
_SEED = 0x5D2C9E1F3A7B4C61


@functools.lru_cache(maxsize=16)
def _constants(count: int) -> np.ndarray:
    """`count` odd 64-bit multipliers (uint64), the same in every process; made once for each row
    width and shared (never written)."""
    rng = np.random.Generator(np.random.PCG64(_SEED))
    return rng.integers(0, 1 << 63, size=count, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


@njit(cache=True, nogil=True, inline="always")
def _mix(h):  # pragma: no cover - compiled; splitmix64's finaliser
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    return h


@njit(cache=True, nogil=True)
def _hash_rows(words, legal, to_play, constants, out):  # pragma: no cover - compiled
    """out[i] = the key of row i: words uint32 [n, W], legal uint8 [n, A], to_play int64 [n]."""
    width, actions = words.shape[1], legal.shape[1]
    for i in range(words.shape[0]):
        h = np.uint64(0)
        for j in range(width):
            h += np.uint64(words[i, j]) * constants[j]
        for a in range(actions):
            h += np.uint64(legal[i, a]) * constants[width + a]
        h += np.uint64(to_play[i]) * constants[width + actions]
        out[i] = _mix(h)


def _mix_torch(h: torch.Tensor) -> torch.Tensor:
    """_mix on int64 tensors (logical shifts done on the two's-complement bits)."""
    def shift(x, bits):
        return (x >> bits) & ((1 << (64 - bits)) - 1)

    h = h ^ shift(h, 30)
    h = h * _signed(0xBF58476D1CE4E5B9)
    h = h ^ shift(h, 27)
    h = h * _signed(0x94D049BB133111EB)
    return h ^ shift(h, 31)


def _signed(value: int) -> int:
    """A uint64 value as the int64 with the same bits."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _words(planes: torch.Tensor) -> torch.Tensor:
    """int32 [n, W]: each row's planes as the bits of float32 numbers."""
    return planes.to(torch.float32).contiguous().view(planes.shape[0], -1).view(torch.int32)


def _hash_compiled(planes, legal, to_play, constants):
    """hash_positions' compiled form (CPU tensors)."""
    words = _words(planes)
    out = np.empty(words.shape[0], dtype=np.uint64)
    _hash_rows(words.numpy().view(np.uint32), legal.contiguous().view(torch.uint8).numpy(),
               to_play.contiguous().numpy(), constants, out)
    return torch.from_numpy(out.view(np.int64))


@twin(_hash_compiled)
def _hash(planes, legal, to_play, constants):
    """hash_positions' torch form: the same arithmetic, int64 wrapping as uint64 does."""
    words = _words(planes)
    width, actions = words.shape[1], legal.shape[1]
    multipliers = torch.from_numpy(constants.view(np.int64)).to(planes.device)
    h = (words.long() & 0xFFFFFFFF).mul(multipliers[:width]).sum(dim=1)
    h = h + legal.long().mul(multipliers[width:width + actions]).sum(dim=1)
    h = h + to_play.long() * multipliers[width + actions]
    return _mix_torch(h)


def hash_positions(planes: torch.Tensor, legal: torch.Tensor, to_play: torch.Tensor) -> torch.Tensor:
    """int64 [n]: the keys of n positions (planes float [n, C, H, W], legal bool [n, A], to_play
    long [n]), the uint64 hash's bits. Compiled on the CPU, torch elsewhere; the same keys."""
    return _hash(planes, legal, to_play, _constants(planes[0].numel() + legal.shape[1] + 1))


class CachedEvaluator:
    """An evaluator that remembers its answers by position (see the module docstring).

    evaluator: one without random keys that has `evaluate_encoded` (the network's);
    entries: table size (rounded down to a power of two); version: a callable naming the weights.
    Counts `lookups` and `hits` since it was made; `bytes` is the table's memory.
    """

    uses_keys = False

    def __init__(self, evaluator, entries: int, *, version=None):
        if getattr(evaluator, "uses_keys", True) or not hasattr(evaluator, "evaluate_encoded"):
            raise ValueError("only a deterministic evaluator of encoded positions can be cached")
        if not 1 <= entries <= MAX_ENTRIES:
            raise ValueError(f"a cache of {entries} entries; 1..{MAX_ENTRIES:,}")
        self.inner, self.version = evaluator, version
        self.game = evaluator.game
        self.entries = 1 << (int(entries).bit_length() - 1)
        actions = self.game.num_actions
        self.bytes = self.entries * (8 + 4 * (actions + 1))
        if self.bytes > memory_limit():
            raise ValueError(f"a cache of {self.entries:,} entries takes {size_text(self.bytes)}, above the tree "
                             f"memory limit {size_text(memory_limit())}")
        self.keys = torch.zeros(self.entries, dtype=torch.int64)
        self.filled = torch.zeros(self.entries, dtype=torch.bool)
        self.priors = torch.zeros(self.entries, actions, dtype=torch.float32)
        self.values = torch.zeros(self.entries, dtype=torch.float32)
        self.lookups = self.hits = 0
        self._seen_version = None

    def __getattr__(self, name):  # the evaluator's other parts (fixed_weights, precision, calls, ...)
        if name == "inner":  # (not set yet)
            raise AttributeError(name)
        return getattr(self.inner, name)

    def clear(self) -> None:
        self.filled.zero_()

    def hit_rate(self) -> float:
        return self.hits / self.lookups if self.lookups else 0.0

    def __call__(self, states, keys=None, legal=None):
        legal = self.game.legal_mask(states) if legal is None else legal
        return self.evaluate_encoded(self.game.encode(states), legal, states.to_play)

    def evaluate_encoded(self, planes: torch.Tensor, legal: torch.Tensor,
                         to_play: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.version is not None:
            version = self.version()
            if version != self._seen_version:
                self.clear()
                self._seen_version = version
        n = planes.shape[0]
        key = hash_positions(planes, legal, to_play).cpu()
        slot = key & (self.entries - 1)
        hit = self.filled[slot] & (self.keys[slot] == key)
        home = to_play.device
        self.lookups += n
        if bool(hit.all()):
            self.hits += n
            return self.priors[slot].to(home), self.values[slot].to(home)
        miss = (~hit).nonzero().squeeze(1)
        # a position twice in the batch (the games of a batch share their openings) is evaluated once
        unique, inverse = torch.unique(key[miss], return_inverse=True)
        first = torch.full((unique.shape[0],), n, dtype=torch.long).scatter_reduce_(0, inverse, miss, "amin")
        self.hits += n - unique.shape[0]
        prior_new, value_new = self.inner.evaluate_encoded(planes[first.to(planes.device)],
                                                           legal[first.to(legal.device)], to_play[first.to(home)])
        prior_new, value_new = prior_new.to(torch.float32).cpu(), value_new.to(torch.float32).cpu()
        prior, value = self.priors[slot], self.values[slot]
        prior[miss], value[miss] = prior_new[inverse], value_new[inverse]
        stored = slot[first]  # (two keys of one slot: the later stays, either is right for its own key)
        self.keys[stored], self.priors[stored], self.values[stored] = unique, prior_new, value_new
        self.filled[stored] = True
        return prior.to(home), value.to(home)
