"""Per-game random streams that do not depend on the batch.

A random *source* is either a `torch.Generator` (one stream for the whole batch)
or a tensor of per-game keys, long [B].  With keys, the numbers game i draws
depend only on its own key, so a game's search and playouts come out the same
whether it runs alone or inside any batch: results are reproducible from a seed
and batch independence is testable exactly.  New keys for each use are derived
with `fold(keys, tag)`, in the manner of splittable counter-based generators
(as in JAX), with a 32-bit integer hash (lowbias32).

Hot loops draw one number per game at a time (`uniform` with one column,
`uniform_draw`); random playouts take their orders of the cells from
`random_orders`, two lookups in fixed tables of permutations.
"""

from __future__ import annotations

import torch

from . import kernels

Source = torch.Generator | torch.Tensor | None

_MASK32 = 0xFFFFFFFF


@kernels.twin(kernels.hash32)
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
    return keys_of(seed, torch.arange(batch, dtype=torch.long, device=device))


def keys_of(seed: int, rows: torch.Tensor) -> torch.Tensor:
    """Rows `rows` (long [n]) of make_keys(seed, ...), without making the others: long [n]."""
    return fold(torch.full(rows.shape, int(seed) & _MASK32, dtype=torch.long, device=rows.device), rows)


@kernels.twin(kernels.fold)
def fold(keys: torch.Tensor, data) -> torch.Tensor:
    """New keys from old ones and a tag (int or long tensor broadcast against keys)."""
    data = torch.as_tensor(data, dtype=torch.long, device=keys.device)
    return _hash32(keys * 0x9E3779B1 + _hash32(data + 0x632BE5AB))


def uniform(source: Source, shape: tuple[int, int], device="cpu") -> torch.Tensor:
    """Uniform floats in [0, 1) (multiples of 2^-24), float32 [B, n]; with keys, row i depends only on keys[i]."""
    if isinstance(source, torch.Tensor):
        batch, n = shape
        if n == 1:
            return (_hash32(source) >> 8).to(torch.float32).mul_(1.0 / (1 << 24)).view(batch, 1)
        columns = torch.arange(n, dtype=torch.long, device=source.device) * 0x632BE5AB
        return (_hash32(source.view(-1, 1) + columns) >> 8).to(torch.float32).mul_(1.0 / (1 << 24))
    return torch.rand(shape, generator=source, device=device)


def step_keys(keys: torch.Tensor, counter: torch.Tensor) -> torch.Tensor:
    """New keys from keys that are already hashes and a per-game counter (long [B]), with one
    hash instead of fold's two: for loops that make keys at every step."""
    return _hash32(keys * 0x9E3779B1 + counter)


def uniform_draw(keys: torch.Tensor, tag: int) -> torch.Tensor:
    """One uniform float in [0, 1) per key (float32 [B]) for each small integer tag, one hash each."""
    return (_hash32(keys + ((tag + 1) * 0x632BE5AB & _MASK32)) >> 8).to(torch.float32).mul_(1.0 / (1 << 24))


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


@kernels.twin(kernels.random_true)
def random_true(mask: torch.Tensor, uniform_draw: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A uniformly random True index of each row, and the number of Trues.

    mask: bool [B, A] (A < 32768); uniform_draw: float [B] in [0, 1).
    Returns (long [B], int16 [B]); rows without a True get some index, check the count.
    (On a CPU a compiled scan, games.kernels; elsewhere an int16 running count and a
    binary search.)
    """
    running = torch.cumsum(mask, dim=1, dtype=torch.int16)
    count = running[:, -1]
    nth = (uniform_draw * count).to(torch.int16).unsqueeze(1)
    index = torch.searchsorted(running, nth, right=True).squeeze(1)
    return index.clamp_(max=mask.shape[1] - 1), count


_ORDER_BITS = 12  # tables of 4,096 permutations: two of them give 2^24 orders per cell count
_ORDERS: dict = {}


def _order_tables(cells: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    key = (cells, str(device))
    if key not in _ORDERS:
        with torch.inference_mode(False):  # a cache that outlives the search that may first ask for it
            generator = torch.Generator().manual_seed(0x0DE5 + cells)
            size = 1 << _ORDER_BITS
            first, second = (torch.rand(size, cells, generator=generator).argsort(dim=1).to(torch.int16) for _ in range(2))
            _ORDERS[key] = (first.to(device), second.to(device))
    return _ORDERS[key]


def random_orders(source: Source, batch: int, cells: int, device="cpu") -> torch.Tensor:
    """Each row an order of the cells 0..cells-1 (long [B, cells]), for random playouts.

    The order is a permutation from one fixed table of 4,096 random permutations
    composed with one from a second such table, the two picked by the row's key (or
    the generator): 2^24 different orders per cell count, each drawn with the same
    probability, made with two row lookups and a gather instead of sorting random keys
    (argsort of [B, cells] floats was two thirds of a gomoku playout's time).
    """
    first, second = _order_tables(cells, device)
    mask = (1 << _ORDER_BITS) - 1
    if isinstance(source, torch.Tensor):
        hashed = _hash32(source ^ 0x2545F491)
        pick_first, pick_second = hashed & mask, (hashed >> _ORDER_BITS) & mask
    else:
        pick = torch.randint(0, 1 << _ORDER_BITS, (2, batch), generator=source, device=source.device).to(device)
        pick_first, pick_second = pick[0], pick[1]
    inner = second.index_select(0, pick_second).long()
    return first.index_select(0, pick_first).gather(1, inner).long()
