"""A run's metrics.jsonl: one JSON object per iteration, appended by the training loop (azero/loop.py)
and read by the plots, the ablation reports and the crash tests."""

from __future__ import annotations

import json
from pathlib import Path

from .errors import exists

METRICS = "metrics.jsonl"


def read_metrics(run_dir: str | Path) -> list[dict]:
    """The records of a run's metrics.jsonl in order ([] for a run not started).

    A line that is not a whole JSON object is skipped: a stop in the middle of an append leaves
    the last line cut short, and the iteration it belongs to was not saved (the loop drops it
    when it resumes).
    """
    path = Path(run_dir) / METRICS
    if not exists(path):
        return []
    records = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records
