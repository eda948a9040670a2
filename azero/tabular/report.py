"""What an experiment hands back (a table, pictures, its numbers) and the intervals in its table."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

Z95 = 1.959964  # the normal quantile of a two-sided 95% interval


@dataclass
class Result:
    """One experiment's outcome: its Markdown table (intervals included), its SVG pictures by file
    name, and the numbers the tests and the docs read (`numbers`)."""

    name: str
    title: str
    table: str
    pictures: dict[str, str]
    numbers: dict = field(default_factory=dict)


def mean_interval(samples, axis: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and its 95% interval (normal approximation: mean -+ 1.96 standard errors) along `axis`."""
    samples = np.asarray(samples, dtype=np.float64)
    count = samples.shape[axis]
    mean = samples.mean(axis=axis)
    half = Z95 * samples.std(axis=axis, ddof=1) / math.sqrt(count) if count > 1 else np.zeros_like(mean)
    return mean, mean - half, mean + half


def share_interval(successes: int, count: int) -> tuple[float, float, float]:
    """A share and its 95% Wilson interval."""
    if count == 0:
        return float("nan"), 0.0, 1.0
    share = successes / count
    centre = (share + Z95 ** 2 / (2 * count)) / (1 + Z95 ** 2 / count)
    half = Z95 * math.sqrt(share * (1 - share) / count + Z95 ** 2 / (4 * count ** 2)) / (1 + Z95 ** 2 / count)
    return share, max(0.0, centre - half), min(1.0, centre + half)


def number(value: float, digits: int = 3) -> str:
    """A number for a table: whole from 100 on (thousands separated), `digits` significant digits below."""
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}" if value else "0"


def with_interval(mean: float, low: float, high: float, digits: int = 3) -> str:
    """`mean [low, high]` for a table."""
    return f"{number(mean, digits)} [{number(low, digits)}, {number(high, digits)}]"


def percent(share: float, low: float, high: float, decimals: int = 0) -> str:
    """`share% [low, high]` for a table."""
    return f"{100 * share:.{decimals}f}% [{100 * low:.{decimals}f}, {100 * high:.{decimals}f}]"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
