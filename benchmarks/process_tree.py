"""The memory of a process and of everything it started, from Linux's ``/proc`` (used by
``notebooks.py`` and ``process_memory.py``).

PSS (proportional set size) shares each page among the processes that map it: the libraries
every process loads are counted once in all, which is what a memory limit charges; RSS counts
them in every process.
"""
from __future__ import annotations

import pathlib
import re


def descendants(root: int) -> list[tuple[int, str]]:
    """``(pid, name)`` of every process below ``root`` (its children, theirs, ...)."""
    children: dict[int, list[tuple[int, str]]] = {}
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, rest = stat.read_text().split(" (", 1)
            name, fields = rest.rsplit(") ", 1)
            children.setdefault(int(fields.split()[1]), []).append((int(pid), name))
        except (OSError, ValueError, IndexError):
            continue
    found, todo = [], [root]
    while todo:
        for pid, name in children.get(todo.pop(), []):
            found.append((pid, name))
            todo.append(pid)
    return found


def memory_mb(pid: int) -> tuple[float, float]:
    """``(RSS, PSS)`` of process ``pid`` in MB; ``(0, 0)`` once it has ended."""
    try:
        text = pathlib.Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0.0, 0.0
    return tuple(int(re.search(rf"^{key}:\s+(\d+)", text, re.M).group(1)) / 1024 for key in ("Rss", "Pss"))


def tree_mb(root: int) -> tuple[float, float, int]:
    """``(RSS summed, PSS summed, processes)`` over every process below ``root``."""
    members = [memory_mb(pid) for pid, _ in descendants(root)]
    return sum(m[0] for m in members), sum(m[1] for m in members), len(members)
