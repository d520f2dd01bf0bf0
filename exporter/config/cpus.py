"""How many CPUs this process may use: the CPUs it may run on, fewer under a container's CPU
limit (cgroup v2 `cpu.max`, or v1 `cpu.cfs_quota_us` over `cpu.cfs_period_us`), rounded up."""
from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


def usable_cpus(cgroup: Path = CGROUP) -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    quota = _quota(cgroup)
    return max(1, min(cpus, math.ceil(quota)) if quota else cpus)


def _quota(cgroup: Path) -> float | None:
    """The CPU limit in CPUs, or None when there is none (or it cannot be read)."""
    try:
        limit, period = (cgroup / "cpu.max").read_text().split()[:2]
        return None if limit == "max" else int(limit) / int(period)
    except (OSError, ValueError):
        pass
    try:
        limit = int((cgroup / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((cgroup / "cpu" / "cpu.cfs_period_us").read_text())
        return None if limit <= 0 or period <= 0 else limit / period
    except (OSError, ValueError):
        return None
