"""What ``/proc`` says about the sandbox's processes: sessions, memory, threads, owners; and killing them all.

The watchdog (:mod:`.process`) reads these each poll; Linux only.
"""

from __future__ import annotations

import os
import signal
import time

def session_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return None
    fields_ = text[text.rfind(b")") + 2:].split()
    return int(fields_[3])                  # state ppid pgrp session ...


def status_numbers(pid: int) -> tuple[int, int, int | None]:
    """(VmRSS bytes, thread count, real uid) of *pid*; zeros when it is gone."""
    rss = threads = 0
    uid = None
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith(b"Threads:"):
                    threads = int(line.split()[1])
                elif line.startswith(b"Uid:"):
                    uid = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return rss, threads, uid


def proportional_bytes(pid: int) -> int | None:
    """Physical memory of *pid* (PSS: each page divided by the number of mappings of it), or None.

    VmRSS counts a page once per mapping: the trace's tiled inputs (the verifier's tiled inputs) map
    one small tile thousands of times, so an honest kernel reading a multi-GB input that holds a
    few MB of real memory shows GBs of RSS.  PSS counts that tile once, and counts every page the
    process alone holds (private, or shared anonymous) in full, so nothing a child allocates
    escapes it."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def physical_bytes(pid: int) -> int:
    """PSS of *pid*; where the kernel gives none, its VmRSS read now (0 once the process is gone).

    A process tearing down its memory on exit shows an empty ``smaps_rollup`` while the VmRSS read
    a moment earlier still counted every mapping: the fresh read keeps an honest child exiting
    with a mapped tile from being killed for memory it no longer has."""
    pss = proportional_bytes(pid)
    return pss if pss is not None else status_numbers(pid)[0]


def sandbox_pids(session: int, uid: int | None) -> list[int]:
    """Every live process in *session* or owned by the sandbox *uid*."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if session_of(pid) == session or (uid is not None and status_numbers(pid)[2] == uid):
            pids.append(pid)
    return pids


def kill_all(session: int, uid: int | None) -> None:
    for _ in range(5):
        pids = sandbox_pids(session, uid)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)


def count_user_tasks(uid: int) -> int:
    n = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            _, threads, owner = status_numbers(int(entry.name))
            if owner == uid:
                n += threads
    return n
