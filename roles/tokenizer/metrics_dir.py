"""The directory the tokenizer workers share their Prometheus metrics through (prometheus_client's
multiprocess mode): each worker writes its own mmap files there, a scrape of any worker reads them all.

prometheus_client picks how it stores values (in memory, or in files under PROMETHEUS_MULTIPROC_DIR) once,
when `prometheus_client.values` is first imported; this process may have imported it before it knew the
directory, so the choice is made again here, before any metric is built.
"""

from __future__ import annotations

import glob
import os
import re

import psutil
from prometheus_client import values
from prometheus_client.multiprocess import mark_process_dead

_LIVE_GAUGE_FILE = re.compile(r"gauge_live\w+_(\d+)\.db$")  # a live* gauge's file names its writer's pid


def share_metrics_dir(path: str) -> None:
    """Record this process's metrics in files under `path` (which must exist), and forget the live gauges
    of workers that are gone (a restarted worker's predecessor): their counts stay, their gauges go."""
    # For the library: the path is the launcher's, not a setting.
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    values.ValueClass = values.get_value_class()
    for pid in dead_writers(path):
        mark_process_dead(pid, path)


def dead_writers(path: str) -> set[int]:
    """The pids that wrote live gauges under `path` and no longer run."""
    pids = {
        int(m.group(1))
        for f in glob.glob(os.path.join(path, "gauge_live*.db"))
        if (m := _LIVE_GAUGE_FILE.search(f))
    }
    return {pid for pid in pids if not psutil.pid_exists(pid)}
