"""Elo against training time as an SVG picture, from a run's metrics.jsonl (no plotting library needed).

    python scripts/plot_elo.py runs/gomoku-.../ -o docs/img/gomoku-elo.svg
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from .errors import UserError, exists
from .metrics import METRICS, read_metrics
from .svg import COLOURS, nice_ticks
from .svg import escape as _escape

PLOT_LIMIT = 1e9  # minutes or Elo beyond this are no run's (the axes' arithmetic would overflow on 1e308)


def read_elo(run_dir: Path) -> list[tuple[float, float, float, float]]:
    """(minutes, elo, low, high) of every evaluation in the run (a record without all four numbers,
    or with one no run makes, beyond +-PLOT_LIMIT, e.g. one edited by hand, is left out)."""
    path = Path(run_dir) / METRICS
    if not exists(path):
        raise UserError(f"{path} not found: is {run_dir} a run folder?")
    keys = ("charts/hours", "eval/elo", "eval/elo_low", "eval/elo_high")
    points = [(record["charts/hours"] * 60, record["eval/elo"], record["eval/elo_low"], record["eval/elo_high"])
              for record in read_metrics(run_dir)
              if all(isinstance(record.get(key), (int, float)) and math.isfinite(record[key]) for key in keys)]
    points = [point for point in points if all(abs(value) <= PLOT_LIMIT for value in point)]
    if not points:
        raise UserError(f"{run_dir} has no evaluations yet")
    return points


def read_sittings(run_dir: Path) -> list[float]:
    """The training minutes at which each sitting after the first began (a run resumed with
    --run-dir): the run's clock at the last iteration of the sitting before."""
    starts, previous = [], None
    for record in read_metrics(run_dir):
        sitting, hours = record.get("charts/sitting"), record.get("charts/hours")
        if not isinstance(sitting, int) or not isinstance(hours, (int, float)) or not math.isfinite(hours):
            continue
        if previous is not None and sitting != previous[0]:
            starts.append(previous[1] * 60)
        previous = (sitting, hours)
    return [minutes for minutes in starts if abs(minutes) <= PLOT_LIMIT]


def read_earlier_stages(run_dir: Path) -> list[tuple[str, float]]:
    """(game, minutes) of each stage the run's first network trained before it (a run begun with
    --init-from another run's network: provenance.json's init_from), earliest first; [] for a run
    begun from scratch, or whose source recorded no training time."""
    path = Path(run_dir) / "provenance.json"
    try:
        origin = json.loads(path.read_text()).get("init_from") if exists(path) else None
    except (OSError, ValueError, AttributeError):
        return []
    stages = origin.get("trained_on") if isinstance(origin, dict) else None
    if not isinstance(stages, list):
        return []
    found = [(str(stage.get("game")), stage["hours"] * 60) for stage in stages
             if isinstance(stage, dict) and isinstance(stage.get("hours"), (int, float))
             and math.isfinite(stage["hours"]) and 0 <= stage["hours"] * 60 <= PLOT_LIMIT]
    return found if len(found) == len(stages) else []


HOURS_FROM = 180  # a run longer than this many minutes is drawn against hours


def elo_svg(points: list[tuple[float, float, float, float]], title: str, width: int = 640, height: int = 360,
            sittings: list[float] = (), earlier: list[tuple[str, float]] = ()) -> str:
    """Elo against training time of one run (points as `read_elo` gives, minutes first), with its 95%
    band; `sittings`: the minutes where the run was resumed (`read_sittings`), drawn as dashed lines;
    `earlier`: the stages its first network trained on before it (`read_earlier_stages`), each
    drawn as a shaded span before the run's own time, which then starts where they end. Runs
    longer than HOURS_FROM minutes (the stages included) are drawn against hours."""
    before = sum(minutes for _, minutes in earlier)
    points = [(p[0] + before, *p[1:]) for p in points]
    sittings = [minutes + before for minutes in sittings]
    scale = 60 if max(p[0] for p in points) > HOURS_FROM else 1
    unit = "hours" if scale == 60 else "minutes"
    points = [(p[0] / scale, *p[1:]) for p in points]
    sittings = [minutes / scale for minutes in sittings]
    x_name = f"training {unit}" + (", the earlier stages first" if earlier else "")
    sx, sy, parts, _ = _axes(points, title, width, height, right=20, x_name=x_name)
    start = 0.0
    for game, minutes in earlier:
        end = start + minutes / scale
        parts.append(f'<rect x="{sx(start):.1f}" y="40" width="{sx(end) - sx(start):.1f}" height="{height - 85}" '
                     f'fill="#999" fill-opacity="0.12"><title>earlier stage: {_escape(game)}</title></rect>')
        parts.append(f'<text x="{(sx(start) + sx(end)) / 2:.1f}" y="54" text-anchor="middle" font-size="10" '
                     f'fill="#555">{_escape(game.split(",rule=")[0])}</text>')
        start = end
    for x in sittings:
        parts.append(f'<line x1="{sx(x):.1f}" x2="{sx(x):.1f}" y1="40" y2="{height - 45}" stroke="#999" '
                     'stroke-dasharray="2 4"><title>resumed</title></line>')
    band = [f"{sx(p[0]):.1f},{sy(p[3]):.1f}" for p in points] + [f"{sx(p[0]):.1f},{sy(p[2]):.1f}"
                                                                 for p in reversed(points)]
    parts.append(f'<polygon points="{" ".join(band)}" fill="#3498db" fill-opacity="0.2"/>')
    line = " ".join(f"{sx(p[0]):.1f},{sy(p[1]):.1f}" for p in points)
    parts.append(f'<polyline points="{line}" fill="none" stroke="#2c3e50" stroke-width="2"/>')
    for p in points:
        parts.append(f'<circle cx="{sx(p[0]):.1f}" cy="{sy(p[1]):.1f}" r="3" fill="#2c3e50"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _axes(points, title: str, width: int, height: int, *, right: int, x_name: str = "training minutes"):
    """The picture's frame for `points` (time, elo, low, high): the x and y scales (data to
    pixels), the SVG parts so far (title, grid at round values, axis labels, the zero line) and
    the plot's right edge. The y range always shows 0 and 100 Elo."""
    left, top, bottom = 60, 40, 45
    x_max = max(p[0] for p in points) * 1.05 or 1.0
    y_min = min(min(p[2] for p in points), 0.0)
    y_max = max(max(p[3] for p in points), 100.0)
    pad = (y_max - y_min) * 0.08
    y_min, y_max = y_min - pad, y_max + pad
    plot_right = width - right

    def sx(x):
        return left + (plot_right - left) * x / x_max

    def sy(y):
        return top + (height - top - bottom) * (1 - (y - y_min) / (y_max - y_min))

    middle = (left + plot_right) / 2
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="{middle}" y="22" text-anchor="middle" font-size="15">{_escape(title)}</text>']
    for y in nice_ticks(y_min, y_max):
        parts.append(f'<line x1="{left}" x2="{plot_right}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
    for x in nice_ticks(0.0, x_max):
        parts.append(f'<text x="{sx(x):.1f}" y="{height - bottom + 16}" text-anchor="middle">{x:g}</text>')
    parts.append(f'<text x="{middle}" y="{height - 8}" text-anchor="middle">{x_name}</text>')
    parts.append(f'<text x="16" y="{height / 2}" text-anchor="middle" transform="rotate(-90 16 {height / 2})">'
                 'Elo (first ladder rung = 0)</text>')
    parts.append(f'<line x1="{left}" x2="{plot_right}" y1="{sy(0):.1f}" y2="{sy(0):.1f}" stroke="#999" '
                 'stroke-dasharray="4 3"/>')
    return sx, sy, parts, plot_right


# One colour per arm (colour-blind safe, from Okabe and Ito); seeds of an arm share it, with dashes.
ARM_COLOURS = COLOURS
SEED_DASHES = ("", "6 3", "2 3", "8 3 2 3")


def arms_svg(arms: list[tuple[str, list[list[tuple[float, float, float, float]]]]], title: str,
             width: int = 720, height: int = 400) -> str:
    """Elo against training minutes for the arms of an ablation, on one pair of axes.

    arms: (label, runs) per arm; each run (one seed) a list of (minutes, elo, low, high) as
    `read_elo` gives. Each arm has its colour and a legend entry; its seeds are drawn as
    lines of that colour, solid for the first seed and dashed for the others, with the
    95% band of the first seed shaded.
    """
    points = [p for _, runs in arms for run in runs for p in run]
    if not points:
        raise UserError("no evaluations to plot yet")
    sx, sy, parts, plot_right = _axes(points, title, width, height, right=170)
    top = 40
    for index, (label, runs) in enumerate(arms):
        colour = ARM_COLOURS[index % len(ARM_COLOURS)]
        for seed, run in enumerate(runs):
            if not run:
                continue
            if seed == 0:
                band = [f"{sx(p[0]):.1f},{sy(p[3]):.1f}" for p in run] + [f"{sx(p[0]):.1f},{sy(p[2]):.1f}"
                                                                          for p in reversed(run)]
                parts.append(f'<polygon points="{" ".join(band)}" fill="{colour}" fill-opacity="0.12"/>')
            dash = SEED_DASHES[seed % len(SEED_DASHES)]
            dash_attribute = f' stroke-dasharray="{dash}"' if dash else ""
            line = " ".join(f"{sx(p[0]):.1f},{sy(p[1]):.1f}" for p in run)
            parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"{dash_attribute}/>')
            for p in run:
                parts.append(f'<circle cx="{sx(p[0]):.1f}" cy="{sy(p[1]):.1f}" r="2.5" fill="{colour}"/>')
        y = top + 10 + 20 * index
        parts.append(f'<line x1="{plot_right + 12}" x2="{plot_right + 36}" y1="{y}" y2="{y}" stroke="{colour}" '
                     'stroke-width="3"/>')
        seeds = f" ({len(runs)} seeds)" if len(runs) > 1 else ""
        parts.append(f'<text x="{plot_right + 42}" y="{y + 4}">{_escape(label)}{seeds}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def xy_svg(points: list[tuple[float, float]], x_labels: list[str], title: str, x_name: str, y_name: str,
           width: int = 640, height: int = 360) -> str:
    """A line through (x, y) points, labelled x_labels on the x axis, y from 0, as an SVG picture."""
    left, right, top, bottom = 70, 20, 40, 45
    x_min, x_max = min(p[0] for p in points), max(p[0] for p in points)
    x_span = (x_max - x_min) or 1.0
    y_max = max(p[1] for p in points) * 1.1 or 1.0

    def sx(x):
        return left + (width - left - right) * (x - x_min) / x_span

    def sy(y):
        return top + (height - top - bottom) * (1 - y / y_max)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="14">{_escape(title)}</text>']
    for i in range(6):
        y = y_max * i / 5
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.0f}</text>')
    for (x, _), label in zip(points, x_labels):
        parts.append(f'<text x="{sx(x):.1f}" y="{height - bottom + 16}" text-anchor="middle">{label}</text>')
    parts.append(f'<text x="{width / 2}" y="{height - 8}" text-anchor="middle">{x_name}</text>')
    parts.append(f'<text x="16" y="{height / 2}" text-anchor="middle" transform="rotate(-90 16 {height / 2})">'
                 f'{y_name}</text>')
    line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
    parts.append(f'<polyline points="{line}" fill="none" stroke="#2c3e50" stroke-width="2"/>')
    for x, y in points:
        parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="#2c3e50"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
