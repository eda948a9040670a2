"""SVG pictures without a plotting library: round tick values, escaped text, and line charts of
several series with shaded intervals (linear or logarithmic axes). Imports nothing of azero's, so
torch-free code (azero/tabular/) can draw with it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

# One colour per series (colour-blind safe, from Okabe and Ito).
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")


def nice_ticks(low: float, high: float, count: int = 6) -> list[float]:
    """About `count` round values (steps of 1, 2 or 5 times a power of ten) between low and high."""
    if high <= low:
        return [low]
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = min((m * power for m in (1, 2, 5, 10)), key=lambda step: abs((high - low) / step - count))
    first = math.ceil(low / step) * step
    return [round(first + i * step, 10) for i in range(int((high - first) / step + 1e-9) + 1)]


def log_ticks(low: float, high: float) -> list[float]:
    """The powers of ten between low and high (both > 0), or 1-2-5 steps when they span under two decades."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    multipliers = (1, 2, 5) if last - first < 2 else (1,)
    ticks = [m * 10.0 ** e for e in range(first, last + 1) for m in multipliers]
    return [tick for tick in ticks if low * (1 - 1e-9) <= tick <= high * (1 + 1e-9)]


def escape(text: str) -> str:
    """Text for the picture: XML's three characters escaped, and a name's bytes that are not
    UTF-8 (a folder Linux allows, read by Python as lone surrogates) as backslash escapes."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass(frozen=True)
class Series:
    """One line of a chart: x and y [n], optionally its interval low and high [n] (shaded), dashed
    or solid, with or without dots at the points; `colour` picks from COLOURS (default: the
    series' place in the chart)."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    low: Sequence[float] | None = None
    high: Sequence[float] | None = None
    dashed: bool = False
    dots: bool = False
    colour: int | None = None


def _scale(low: float, high: float, start: float, end: float, log: bool):
    """A function from data to pixels mapping [low, high] onto [start, end]."""
    if log:
        low, high = math.log10(low), math.log10(high)
    span = (high - low) or 1.0

    def to_pixel(value: float) -> float:
        value = math.log10(value) if log else value
        return start + (end - start) * (value - low) / span

    return to_pixel


def _label(value: float) -> str:
    """A tick's label: 1,000 rather than 1000, 0.001 rather than 1e-03."""
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:g}"


def line_chart(series: Sequence[Series], title: str, x_label: str, y_label: str, *, log_x: bool = False,
               log_y: bool = False, y_from_zero: bool = False, width: int = 780, height: int = 400) -> str:
    """Several series on one pair of axes, each with its colour, its shaded interval and a legend
    entry on the right; a logarithmic axis needs values > 0 (others are left out of the picture)."""
    left, top, bottom, right = 90, 40, 48, 250
    plot_right = width - right

    def kept(values, logarithmic):
        return [v for v in values if math.isfinite(v) and (v > 0 or not logarithmic)]

    xs = kept([float(x) for s in series for x in s.x], log_x)
    ys = kept([float(y) for s in series for y in (list(s.y) + list(s.low if s.low is not None else [])
                                                    + list(s.high if s.high is not None else []))], log_y)
    if not xs or not ys:
        raise ValueError("nothing to plot")
    x_low, x_high = min(xs), max(xs)
    y_low, y_high = min(ys), max(ys)
    if y_from_zero and not log_y:
        y_low = min(y_low, 0.0)
    if not log_y:
        pad = (y_high - y_low) * 0.05 or 1.0
        y_low, y_high = (y_low if y_from_zero and y_low == 0 else y_low - pad), y_high + pad
    sx = _scale(x_low, x_high, left, plot_right, log_x)
    sy = _scale(y_low, y_high, height - bottom, top, log_y)
    middle = (left + plot_right) / 2
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="{middle}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>',
             f'<rect x="{left}" y="{top}" width="{plot_right - left}" height="{height - top - bottom}" '
             'fill="none" stroke="#999"/>']
    for y in (log_ticks if log_y else nice_ticks)(y_low, y_high):
        parts.append(f'<line x1="{left}" x2="{plot_right}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{_label(y)}</text>')
    for x in (log_ticks if log_x else nice_ticks)(x_low, x_high):
        parts.append(f'<line x1="{sx(x):.1f}" x2="{sx(x):.1f}" y1="{top}" y2="{height - bottom}" stroke="#eee"/>')
        parts.append(f'<text x="{sx(x):.1f}" y="{height - bottom + 16}" text-anchor="middle">{_label(x)}</text>')
    parts.append(f'<text x="{middle}" y="{height - 10}" text-anchor="middle">{escape(x_label)}</text>')
    parts.append(f'<text x="16" y="{height / 2}" text-anchor="middle" transform="rotate(-90 16 {height / 2})">'
                 f'{escape(y_label)}</text>')

    def point(x, y):
        return f"{sx(x):.1f},{sy(y):.1f}"

    def usable(x, y):
        return math.isfinite(x) and math.isfinite(y) and (x > 0 or not log_x) and (y > 0 or not log_y)

    for index, line in enumerate(series):
        colour = COLOURS[(index if line.colour is None else line.colour) % len(COLOURS)]
        if line.low is not None and line.high is not None:
            upper = [point(x, y) for x, y in zip(line.x, line.high) if usable(x, y)]
            lower = [point(x, y) for x, y in zip(line.x, line.low) if usable(x, y)]
            if upper and lower:
                parts.append(f'<polygon points="{" ".join(upper + lower[::-1])}" fill="{colour}" '
                             'fill-opacity="0.15"/>')
        points = [point(x, y) for x, y in zip(line.x, line.y) if usable(x, y)]
        dash = ' stroke-dasharray="6 3"' if line.dashed else ""
        parts.append(f'<polyline points="{" ".join(points)}" fill="none" stroke="{colour}" '
                     f'stroke-width="2"{dash}/>')
        if line.dots:
            parts += [f'<circle cx="{p.split(",")[0]}" cy="{p.split(",")[1]}" r="3" fill="{colour}"/>'
                      for p in points]
        y = top + 10 + 20 * index
        parts.append(f'<line x1="{plot_right + 12}" x2="{plot_right + 36}" y1="{y}" y2="{y}" stroke="{colour}" '
                     f'stroke-width="3"{dash}/>')
        parts.append(f'<text x="{plot_right + 42}" y="{y + 4}">{escape(line.label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
