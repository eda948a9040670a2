"""A run's metrics.jsonl: one JSON object per iteration, appended by the training loop (azero/loop.py)
and read by the plots, the ablation reports and the crash tests."""

from __future__ import annotations

import json
from pathlib import Path

from .errors import UserError, exists, is_int, regular_file

METRICS = "metrics.jsonl"
LARGEST = 10**300  # an integer beyond any a run records (one of 400 digits overflows a float)


def read_metrics(run_dir: str | Path) -> list[dict]:
    """The records of a run's metrics.jsonl in order ([] for a run not started).

    A line that is not a whole JSON object is skipped: a stop in the middle of an append leaves
    the last line cut short, and the iteration it belongs to was not saved (the loop drops it
    when it resumes). So is a record the loop does not write (an iteration that is not a
    whole number, a value that is not a number or one beyond any run's, e.g. a line edited
    by hand), which every reader would trip on. A metrics.jsonl that cannot be read (a
    folder, a pipe, no permission) is a UserError.
    """
    path = Path(run_dir) / METRICS
    if not exists(path):
        return []
    regular_file(path, "metrics file")
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        raise UserError(f"cannot read {path}: {error.strerror or error}") from None
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and _written_by_the_loop(record):
            records.append(record)
    return records


def _written_by_the_loop(record: dict) -> bool:
    iteration = record.get("iteration")
    if not is_int(iteration) or iteration < 0:
        return False
    # (a float is any: a diverged loss is written as NaN or Infinity)
    return all(isinstance(value, float) or is_int(value) and abs(value) <= LARGEST for value in record.values())
