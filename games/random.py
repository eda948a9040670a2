"""Per-game random streams that do not depend on the batch.

A random *source* is either a `torch.Generator` (one stream for the whole batch)
or a tensor of per-game keys, long [B].  With keys, the numbers game i draws are
a hash of its own key and a counter, so a game's search and playouts come out the
same whether it runs alone or inside any batch: results are reproducible from a
seed and batch independence is testable exactly.  New keys for each use are
derived with `fold(keys, tag)`, in the manner of counter-based generators
(splittable keys as in JAX), with a 32-bit integer hash (lowbias32).
"""

from __future__ import annotations

import torch

Source = torch.Generator | torch.Tensor | None

_MASK32 = 0xFFFFFFFF


def _hash32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit avalanche hash of int64 values (only the low 32 bits are used). long -> long in [0, 2^32)."""
    x = x & _MASK32
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _MASK32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & _MASK32
    return x ^ (x >> 16)


def make_keys(seed: int, batch: int, device="cpu") -> torch.Tensor:
    """Keys for `batch` games from one seed: long [B]."""
    rows = torch.arange(batch, dtype=torch.long, device=device)
    return fold(torch.full((batch,), int(seed) & _MASK32, dtype=torch.long, device=device), rows)


def fold(keys: torch.Tensor, data) -> torch.Tensor:
    """New keys from old ones and a tag (int or long tensor broadcast against keys)."""
    data = torch.as_tensor(data, dtype=torch.long, device=keys.device)
    return _hash32(keys * 0x9E3779B1 + _hash32(data + 0x632BE5AB))


def uniform(source: Source, shape: tuple[int, int], device="cpu") -> torch.Tensor:
    """Uniform floats in [0, 1), float32 [B, n]; with keys, row i depends only on keys[i]."""
    if isinstance(source, torch.Tensor):
        batch, n = shape
        counters = torch.arange(n, dtype=torch.long, device=source.device)
        bits = _hash32(source.view(-1, 1) * 0x9E3779B1 + _hash32(counters + 0x68E31DA4).view(1, -1))
        return (bits >> 8).to(torch.float32) * (1.0 / (1 << 24))
    return torch.rand(shape, generator=source, device=device)


def subset(source: Source, rows) -> Source:
    """The source for a subset of the games (keys are selected; a generator is shared)."""
    if isinstance(source, torch.Tensor):
        return source[rows]
    return source


def advance(source: Source, tag) -> Source:
    """The source for the next use: keys are folded with `tag`; a generator just continues."""
    if isinstance(source, torch.Tensor):
        return fold(source, tag)
    return source
