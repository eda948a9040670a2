"""Expected against sample updates (the book's section 8.5, figure 8.7).

One state-action pair with b equally likely successors whose values are known exactly (drawn from
a standard normal). The expected update computes their mean: exact after b max computations, no
better before. Sample updates draw successors at random and average them (step size 1/t): after t
samples the RMS error is sqrt((b - 1) / (b t)) in units of the standard deviation the values
are drawn with. Both start from an error of 1, as in the book's figure.
"""

from __future__ import annotations

import numpy as np


def sample_update_errors(branching: int, computations: int, runs: int, rng: np.random.Generator) -> np.ndarray:
    """RMS error over `runs` problems of the sample-average estimate after t = 0..computations
    samples [computations + 1] (t = 0: the estimate before any update, error 1 by definition).
    Each problem's successor values are standard normal, and the true value is their mean."""
    values = rng.standard_normal((runs, branching))
    true = values.mean(axis=1, keepdims=True)
    squared = np.zeros(computations + 1)
    squared[0] = 1.0
    chunk = max(1, 4_000_000 // max(runs, 1))  # samples drawn at a time per problem, to bound memory
    total = np.zeros((runs, 1))
    for first in range(1, computations + 1, chunk):
        last = min(computations, first + chunk - 1)
        picks = rng.integers(branching, size=(runs, last - first + 1))
        sums = total + np.cumsum(np.take_along_axis(values, picks, axis=1), axis=1)
        total = sums[:, -1:]
        estimates = sums / np.arange(first, last + 1)
        squared[first:last + 1] = ((estimates - true) ** 2).mean(axis=0)
    return np.sqrt(squared)


def expected_update_errors(branching: int, computations: int) -> np.ndarray:
    """The expected update's error after t = 0..computations max computations [computations + 1]:
    1 until the b-th, 0 from then on."""
    errors = np.ones(computations + 1)
    errors[branching:] = 0.0
    return errors


def sample_error_formula(branching: int, samples: np.ndarray) -> np.ndarray:
    """The book's sqrt((b - 1) / (b t)) for t = samples (> 0)."""
    return np.sqrt((branching - 1) / (branching * np.asarray(samples, dtype=np.float64)))
