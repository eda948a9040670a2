"""Elo against training time as an SVG picture, from a run's metrics.jsonl (no plotting library needed).

    python scripts/plot_elo.py runs/gomoku-.../ -o docs/gomoku-elo.svg
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import UserError


def read_elo(run_dir: Path) -> list[tuple[float, float, float, float]]:
    """(minutes, elo, low, high) of every evaluation in the run."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        raise UserError(f"{path} not found: is {run_dir} a run folder?")
    points = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if "eval/elo" in record:
            points.append((record["charts/hours"] * 60, record["eval/elo"], record["eval/elo_low"],
                           record["eval/elo_high"]))
    if not points:
        raise UserError(f"{run_dir} has no evaluations yet")
    return points


def elo_svg(points: list[tuple[float, float, float, float]], title: str, width: int = 640, height: int = 360) -> str:
    left, right, top, bottom = 60, 20, 40, 45
    xs = [p[0] for p in points]
    lows = [p[2] for p in points]
    highs = [p[3] for p in points]
    x_max = max(xs) * 1.05 or 1.0
    y_min = min(min(lows), 0.0)
    y_max = max(max(highs), 100.0)
    pad = (y_max - y_min) * 0.08
    y_min, y_max = y_min - pad, y_max + pad

    def sx(x):
        return left + (width - left - right) * x / x_max

    def sy(y):
        return top + (height - top - bottom) * (1 - (y - y_min) / (y_max - y_min))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>']
    for i in range(6):  # grid and labels
        y = y_min + (y_max - y_min) * i / 5
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.0f}</text>')
        x = x_max * i / 5
        parts.append(f'<text x="{sx(x):.1f}" y="{height - bottom + 16}" text-anchor="middle">{x:.0f}</text>')
    parts.append(f'<text x="{width / 2}" y="{height - 8}" text-anchor="middle">training minutes</text>')
    parts.append(f'<text x="16" y="{height / 2}" text-anchor="middle" transform="rotate(-90 16 {height / 2})">'
                 'Elo (first ladder rung = 0)</text>')
    band = [f"{sx(p[0]):.1f},{sy(p[3]):.1f}" for p in points] + [f"{sx(p[0]):.1f},{sy(p[2]):.1f}"
                                                                 for p in reversed(points)]
    parts.append(f'<polygon points="{" ".join(band)}" fill="#3498db" fill-opacity="0.2"/>')
    line = " ".join(f"{sx(p[0]):.1f},{sy(p[1]):.1f}" for p in points)
    parts.append(f'<polyline points="{line}" fill="none" stroke="#2c3e50" stroke-width="2"/>')
    for p in points:
        parts.append(f'<circle cx="{sx(p[0]):.1f}" cy="{sy(p[1]):.1f}" r="3" fill="#2c3e50"/>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{sy(0):.1f}" y2="{sy(0):.1f}" stroke="#999" '
                 'stroke-dasharray="4 3"/>')
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
             f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>']
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
