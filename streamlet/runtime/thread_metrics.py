"""ThreadMetrics: the counters one stream thread keeps for its client's metrics.

The loop only adds to them: one dict update per partition batch processed, one append per commit, one
count per rebalance, and one `observe()` per loop iteration (at most every `OBSERVE_INTERVAL_S`) that
charges the time since the last observation to the tasks that were not RUNNING then. Nothing here is
per record. Readers (the metrics publisher, `/metrics`) run on the same event loop, so they see a
consistent state between two awaits without any lock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable

from streamlet.task_id import TaskId

#: The loop observes task states at most this often: the time not RUNNING is exact to this resolution.
OBSERVE_INTERVAL_S = 0.1
#: Commit latencies kept for the p50/max of the last interval (older ones fall off).
COMMIT_SAMPLES = 4096


class ThreadMetrics:
    """Counters since the thread started; written by its loop and rebalance callbacks."""

    def __init__(self) -> None:
        self.processed: dict[TaskId, int] = {}
        self.not_running_s: dict[TaskId, float] = {}
        self.rebalances = 0
        self.commits = 0
        self.commit_total_s = 0.0
        self._commits: deque[tuple[float, float]] = deque(maxlen=COMMIT_SAMPLES)  # (monotonic end, seconds)
        self._not_running: tuple[TaskId, ...] = ()
        self._observed: float | None = None

    def record_commit(self, seconds: float, now: float | None = None) -> None:
        self.commits += 1
        self.commit_total_s += seconds
        self._commits.append((time.monotonic() if now is None else now, seconds))

    def due(self, now: float) -> bool:
        """Whether `observe` should run now (the loop's cheap check before it lists the tasks)."""
        return self._observed is None or now - self._observed >= OBSERVE_INTERVAL_S

    def observe(self, not_running: Iterable[TaskId], now: float) -> None:
        """Charge the time since the last observation to the tasks not RUNNING then; remember the new set."""
        if self._observed is not None:
            elapsed = now - self._observed
            spent = self.not_running_s
            for task in self._not_running:
                spent[task] = spent.get(task, 0.0) + elapsed
        current = tuple(not_running)
        for task in current:
            self.not_running_s.setdefault(task, 0.0)
        self._not_running = current
        self._observed = now

    def commit_latencies_since(self, since: float) -> list[float]:
        """The commit durations (seconds) of the commits that ended after `since` (monotonic)."""
        return [seconds for ended, seconds in self._commits if ended > since]
