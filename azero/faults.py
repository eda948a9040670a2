"""Fault injection for crash tests: die, pause or fail with a full disk at a named point of a write.

    AZERO_FAULT=POINT[@COUNT][:ACTION]

kills the process (ACTION kill, the default), pauses it (pause: a line on stderr, then
sleep, for a harness to kill it there) or raises ENOSPC, "no space left on device"
(enospc), the COUNT-th time (default the first) the run reaches POINT. Nothing happens
without the variable. The points (`fault(...)` calls) are:

    FILE.write     half of the bytes written to FILE's temporary file
    FILE.fsync     all bytes written, before the fsync
    FILE.rename    before the temporary file takes FILE's name
    FILE.renamed   after the rename, before the folder's fsync

for FILE in checkpoint (latest.pt), snapshot (checkpoints/iter-N.pt), replay (a replay
chunk), config (config.toml, provenance.json), truncate (metrics.jsonl rewritten on resume); and

    metrics.write    half of an iteration's line appended to metrics.jsonl
    metrics.written  the whole line written, before its fsync
    replay.prune     after latest.pt is saved, before old replay chunks are deleted
    actor.start      a Ray self-play actor's constructor (in the actor's process)
    sgf              before each game's record of a match is written (evaluate.py --sgf; sgf@3:
                     the third game's file)

tests/test_crash.py aims its kills with these (tests/test_probing.py a full disk at sgf).
"""

from __future__ import annotations

import errno
import os
import re
import signal
import sys
import time

VARIABLE = "AZERO_FAULT"
ACTIONS = ("kill", "pause", "enospc")
_reached: dict[str, int] = {}


def fault(point: str) -> None:
    """Do what AZERO_FAULT asks if it names `point` and this is the time; otherwise nothing."""
    wanted = os.environ.get(VARIABLE)
    if not wanted:
        return
    match = re.fullmatch(r"([\w.]+)(?:@(\d+))?(?::(\w+))?", wanted.strip())
    if not match or match.group(1) != point:
        return
    _reached[point] = _reached.get(point, 0) + 1
    if _reached[point] != int(match.group(2) or 1):
        return
    action = match.group(3) or "kill"
    if action == "enospc":
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as write() and fsync() do: no file named
    if action == "pause":
        print(f"{VARIABLE}: paused at {point}", file=sys.stderr, flush=True)
        time.sleep(3600)
    os.kill(os.getpid(), signal.SIGKILL)
