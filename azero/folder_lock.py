"""The lock a command holds on a folder it writes (a training run's, an ablation's), for its whole life.

    lock = hold(run_dir, command)   # FolderInUse (a UserError naming the holder) if another process has it
    ...                             # write the folder
    lock.release()                  # (or let the process end: the system drops the lock with it)

The lock is the file FOLDER/lock, locked with flock(2): the system releases it when its holder
ends in any way (a kill -9 or a power cut included), so a lock left by a dead process is taken
over by the next command, and a live one can never be. The file records its holder (host, pid,
the process's start time, the command) for the message a second command prints; the holder
deletes it when it releases the lock. On a filesystem that cannot lock files (some network
mounts), the record decides instead: a holder on this host whose pid is gone, or is now another
process (another start time), has left a stale lock, which is taken over.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import platform
import shlex
import time
from pathlib import Path

from .errors import UserError

LOCK = "lock"
_UNSUPPORTED = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL)  # a filesystem without flock


class FolderInUse(UserError):
    """Another live process holds the folder's lock."""


class FolderLock:
    """A held lock: its file and open descriptor (closing the descriptor releases the lock)."""

    def __init__(self, path: Path, descriptor: int):
        self.path, self.descriptor = path, descriptor

    def release(self) -> None:
        """Delete the lock file and drop the lock (deleted first, while still held: a command that
        opened the file meanwhile finds it gone once it gets the lock, and opens the new one)."""
        if self.descriptor is None:
            return
        try:
            if _same_file(self.descriptor, self.path):
                self.path.unlink(missing_ok=True)
        except OSError:  # a folder gone read-only: the lock is dropped all the same
            pass
        os.close(self.descriptor)
        self.descriptor = None

    def __enter__(self) -> "FolderLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def hold(folder: str | Path, command: list[str] | None = None) -> FolderLock:
    """Lock the existing `folder` for this process; FolderInUse (nothing in the folder changed) if
    another live process holds it, UserError if the lock file cannot be made."""
    path = Path(folder) / LOCK
    while True:
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as error:
            raise UserError(f"cannot make the lock file {path}: {error.strerror or error}") from None
        try:
            locked = _flock(descriptor)
            if not locked:
                raise FolderInUse(in_use_message(Path(folder), _record(descriptor)))
            if locked is _UNLOCKABLE:
                holder = _record(descriptor)
                if holder and alive(holder):
                    raise FolderInUse(in_use_message(Path(folder), holder))
            if not _same_file(descriptor, path):  # its holder deleted it as we opened it: lock the new one
                os.close(descriptor)
                continue
            _write_record(descriptor, command)
            return FolderLock(path, descriptor)
        except BaseException:
            if _is_open(descriptor):
                os.close(descriptor)
            raise


_UNLOCKABLE = object()


def _flock(descriptor: int):
    """True if locked, False if another holds it, _UNLOCKABLE on a filesystem without locks."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as error:
        if error.errno in _UNSUPPORTED:
            return _UNLOCKABLE
        raise UserError(f"cannot lock the folder: {error.strerror or error}") from None
    return True


def _is_open(descriptor: int) -> bool:
    try:
        os.fstat(descriptor)
    except OSError:
        return False
    return True


def _same_file(descriptor: int, path: Path) -> bool:
    try:
        mine, named = os.fstat(descriptor), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (named.st_dev, named.st_ino)


def process_start(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (Linux's /proc/PID/stat), or None where
    that cannot be read: with the pid, it names one process (a pid alone may be reused)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:  # the fields after the command's name, which is in parentheses and may hold spaces
        return int(text[text.rindex(")") + 2:].split()[19])
    except (ValueError, IndexError):
        return None


def alive(holder: dict) -> bool:
    """Whether the process a lock file names may still run: none if it names none (not a record we
    wrote); on another host it cannot be told (so it may); on this one, its pid is there and, where
    start times are known, it started when the holder did (else the pid is another process's now)."""
    pid = holder.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    if holder.get("host") != platform.node():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # there, another user's
        pass
    except OSError:
        return False
    recorded, now = holder.get("process_start"), process_start(pid)
    return recorded is None or now is None or recorded == now


def _write_record(descriptor: int, command: list[str] | None) -> None:
    record = {"host": platform.node(), "pid": os.getpid(), "process_start": process_start(os.getpid()),
              "since": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "command": shlex.join(command or [])[:300]}
    data = (json.dumps(record) + "\n").encode()
    try:
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, data, 0)
    except OSError as error:  # a full disk: the lock holds all the same; only its record is missing
        if error.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise


def _record(descriptor: int) -> dict:
    """The holder a lock file records ({} if it holds none yet, or not one we wrote)."""
    try:
        record = json.loads(os.pread(descriptor, 4096, 0).decode("utf-8", "replace"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def in_use_message(folder: Path, holder: dict) -> str:
    """One line naming the holder and how to check it."""
    if not holder.get("pid"):
        return (f"{folder} is in use by another command (it is starting: its lock file {folder / LOCK} holds no "
                "details yet); nothing was changed; wait for it to end, then run this again")
    pid, host = holder["pid"], holder.get("host", "?")
    where = "" if host == platform.node() else f" on {host}"
    command = str(holder.get("command", ""))
    command = f" ({command[:120]}{'...' if len(command) > 120 else ''})" if command else ""
    return (f"{folder} is in use by process {pid}{where}, since {holder.get('since', '?')}{command}; nothing was "
            f"changed. Check it with: ps -o pid,lstart,args -p {pid}{where}; wait for it to end (or stop it), "
            "then run this again")
