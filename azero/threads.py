"""torch's CPU threads for a block of code (small batches run faster on one thread)."""

from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def one_thread_if(condition: bool):
    """torch's intra-op threads set to one for the block, if `condition` (process-wide while it runs)."""
    before = torch.get_num_threads()
    change = condition and before != 1
    if change:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if change:
            torch.set_num_threads(before)
