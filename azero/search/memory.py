"""How much memory a search tree may take, and the error a search gets when it would need more.

A tree of B roots with room for N nodes holds, per node, its position, a few per-node
numbers and one entry per action of each per-edge array (search/tree.py's FIELDS). A
search never allocates more than the limit: a request for more is refused before any
allocation, with the sizes in the message, and a search bounded by time stops growing
at the limit. The limit is AZERO_TREE_MEMORY (bytes, or with a suffix K, M, G, T: "8G"),
by default half of the machine's physical memory; inside `limited(bytes)` (a Piskvork
manager's INFO max_memory) it is at most that.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading

from ..errors import UserError

LIMIT_VARIABLE = "AZERO_TREE_MEMORY"
MAX_SIMULATIONS = 100_000_000  # one search's simulations, at most (the memory limit refuses most such sooner)
_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class TreeTooLarge(UserError):
    """A search would need more tree memory than the limit allows."""


def physical_memory() -> int | None:
    """The machine's physical memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


_caller = threading.local()  # .limit: the bytes set by `limited` in this thread, if any


@contextlib.contextmanager
def limited(limit: int):
    """Searches in this block (in this thread) keep their trees within `limit` bytes as well."""
    saved = getattr(_caller, "limit", None)
    _caller.limit = limit if saved is None else min(saved, limit)
    try:
        yield
    finally:
        _caller.limit = saved


def resident_bytes() -> int | None:
    """This process's resident memory in bytes (None where the system does not say)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def memory_limit() -> int:
    """The most bytes one search's tree may take (AZERO_TREE_MEMORY, else half the physical
    memory; at most the bytes of an enclosing `limited`)."""
    caller = getattr(_caller, "limit", None)
    limit = _configured_limit()
    return limit if caller is None else min(limit, caller)


def _configured_limit() -> int:
    text = os.environ.get(LIMIT_VARIABLE, "").strip()
    if text:
        match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)B?", text.upper())
        if not match:
            raise UserError(f"{LIMIT_VARIABLE}={text!r} is not a size; write bytes or a number with K, M, G or T, "
                            "e.g. 8G")
        return int(float(match.group(1)) * _SUFFIXES[match.group(2)])
    physical = physical_memory()
    return physical // 2 if physical else 4 << 30


def size_text(count: float) -> str:
    """'1.5 GB', '640 KB', '12 B' (binary units)."""
    for unit, scale in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{int(count)} B"


def check_tree_size(batch: int, nodes: int, node_bytes: int, *, limit: int | None = None) -> None:
    """TreeTooLarge unless `batch` trees of `nodes` nodes, `node_bytes` each, fit in the limit."""
    limit = memory_limit() if limit is None else limit
    needed = batch * nodes * node_bytes
    if needed > limit:
        trees = f"{batch:,} trees of " if batch > 1 else ""
        raise TreeTooLarge(
            f"this search needs {size_text(needed)} for its tree ({trees}{nodes:,} nodes of {size_text(node_bytes)}; "
            f"a search adds up to one node per simulation); the limit is {size_text(limit)}, "
            f"at most {max(limit // max(batch * node_bytes, 1) - 1, 0):,} simulations here "
            f"(set {LIMIT_VARIABLE}, e.g. {LIMIT_VARIABLE}=16G, to change it)")


def max_nodes(batch: int, node_bytes: int, *, limit: int | None = None) -> int:
    """The most nodes per tree that `batch` trees of `node_bytes`-byte nodes may have."""
    limit = memory_limit() if limit is None else limit
    return limit // max(batch * node_bytes, 1)
