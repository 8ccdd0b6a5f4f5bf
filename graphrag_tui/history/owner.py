"""Which process records a run, and whether it still runs.

A run whose status is still `running` is `interrupted` when its owner is gone: the owner is
recorded as host, boot id, pid and the process's start time (Linux's /proc), so a reused
pid or a reboot is not taken for the owner. Elsewhere only the pid is checked. A run
recorded on another host is shown as `running`: whether its process lives cannot be told
from here."""

from __future__ import annotations

import json
import os
import socket


def _read(path: str) -> str | None:
    """A small /proc file (os.open: a run reads two as it starts, and pathlib's read costs
    it a tenth of a millisecond more)."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(descriptor, 4096).decode("ascii", "replace")
    except OSError:
        return None
    finally:
        os.close(descriptor)


def _boot_id() -> str | None:
    found = _read("/proc/sys/kernel/random/boot_id")
    return None if found is None else found.strip()


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def this_process() -> str:
    pid = os.getpid()
    return json.dumps({"host": socket.gethostname(), "boot": _boot_id(), "pid": pid, "start": _start_time(pid)})


def is_alive(owner: str | None) -> bool:
    try:
        found = json.loads(owner or "")
        host, boot, pid, start = found["host"], found["boot"], int(found["pid"]), found["start"]
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError):
        return False
    if not 0 < pid < 2**31:  # no process has it (a damaged record)
        return False
    if host != socket.gethostname():
        return True
    if boot is not None and _boot_id() is not None:
        if boot != _boot_id():
            return False
        return start is not None and _start_time(pid) == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
