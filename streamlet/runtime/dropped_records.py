"""Kafka Streams' `dropped-records` sensor: the records a task's processors skipped, per processor and reason.

Kafka Streams records every record a processor skips (a late record for a closed window, a null key in an
aggregation, a record the deserialization handler skipped, ...) in the task-level sensor `dropped-records`
(`dropped-records-total` and `dropped-records-rate`, group `stream-task-metrics`, tags `thread-id` and
`task-id`), and logs a WARN for each. A streamlet task has one `DroppedRecords`: the processor nodes call
it only on their drop path, so a record that is not dropped costs nothing here.

Counts are kept per `(processor, reason)`, so the metrics can say which window or join dropped what. The
stream thread keeps each task's sensor across task moves (`DroppedRecordsSensors`), so, like the processed
counts, a client's counts are totals since it started.

The WARN of a late record follows Kafka's wording ("Skipping record for expired window. topic=[..] ...
window=[..,..) expiration=[..] streamTime=[..]") and adds the processor and task. A backlog can drop most of
its records, and Kafka's one line per record buries everything else, so here each processor logs at most
one line per `WARN_INTERVAL_S`, and the next line says how many it did not log in between.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

from streamlet.task_id import TaskId

__all__ = [
    "DESERIALIZATION",
    "INVALID_TIMESTAMP",
    "LATE",
    "NULL_KEY_OR_VALUE",
    "PROCESSING_ERROR",
    "PRODUCTION_ERROR",
    "STALE",
    "RATE_WINDOW_S",
    "WARN_INTERVAL_S",
    "DroppedRecords",
    "DroppedRecordsRates",
    "DroppedRecordsSensors",
]

log = logging.getLogger("streamlet.dropped_records")

#: A processor logs at most one WARN per this many seconds; the next one counts those it did not log.
WARN_INTERVAL_S = 10.0
#: `dropped-records-rate` is over about this many seconds (Kafka's rate: 2 samples of 30 s, the newest partial).
RATE_WINDOW_S = 30.0

# Why a record was dropped (the `reason` of a count).
LATE = "late"  # its window (or join window) had closed: stream time passed its end plus the grace period
NULL_KEY_OR_VALUE = "null-key-or-value"  # an aggregation, join or table cannot place it
INVALID_TIMESTAMP = "invalid-timestamp"  # the timestamp extractor gave a negative timestamp
# skipped by an exception handler (`log_and_continue`, `dead_letter`), which logged it
DESERIALIZATION = "deserialization-error"
PROCESSING_ERROR = "processing-error"
PRODUCTION_ERROR = "production-error"
STALE = "stale"  # a foreign-key join response overtaken by a newer update of its left record


class Record(Protocol):
    """The record being processed, as a WARN names it (a `RecordContext`, or a processor's context)."""

    @property
    def topic(self) -> str | None: ...

    @property
    def partition(self) -> int: ...

    @property
    def offset(self) -> int: ...

    @property
    def timestamp(self) -> int: ...


class _Warnings:
    """When one processor last logged, and how many drops it has not logged since."""

    __slots__ = ("logged_at", "suppressed")

    def __init__(self, logged_at: float) -> None:
        self.logged_at = logged_at
        self.suppressed = 0


class DroppedRecords:
    """The dropped-records sensor of one task (see the module docstring)."""

    __slots__ = ("task_id", "counts", "_warnings", "_clock", "_interval")

    def __init__(
        self,
        task_id: TaskId,
        *,
        clock: Callable[[], float] = time.monotonic,
        warn_interval_s: float = WARN_INTERVAL_S,
    ) -> None:
        self.task_id = task_id
        self.counts: dict[tuple[str, str], int] = {}  # (processor, reason) -> records dropped
        self._warnings: dict[str, _Warnings] = {}
        self._clock = clock
        self._interval = warn_interval_s

    @property
    def total(self) -> int:
        """Kafka's `dropped-records-total` of the task."""
        return sum(self.counts.values())

    def by_processor(self) -> dict[str, int]:
        """Records dropped per processor node, every reason together."""
        out: dict[str, int] = {}
        for (node, _), count in self.counts.items():
            out[node] = out.get(node, 0) + count
        return out

    def record(self, node: str, reason: str) -> None:
        """Count one record `node` dropped, without a log line (the caller logs, or Kafka logs nothing)."""
        key = (node, reason)
        counts = self.counts
        counts[key] = counts.get(key, 0) + 1

    def skipped(self, node: str, reason: str, message: str, *args: object) -> None:
        """Count one record `node` dropped and WARN `message % args` about it, at most once per interval."""
        self.record(node, reason)
        now = self._clock()
        warnings = self._warnings.get(node)
        if warnings is None:
            self._warnings[node] = _Warnings(now)
        elif now - warnings.logged_at < self._interval:
            warnings.suppressed += 1
            return
        else:
            if warnings.suppressed:
                message += " (and %d more records skipped by this processor in the last %.0f s, not logged)"
                args = (*args, warnings.suppressed, now - warnings.logged_at)
            warnings.logged_at, warnings.suppressed = now, 0
        log.warning(message, *args)

    def late(
        self,
        node: str,
        record: Record,
        window_start: int,
        window_end: int,
        expiration: int,
        stream_time: int,
        *,
        inclusive_end: bool = False,
    ) -> None:
        """Count a record `node` dropped because its window had closed, with Kafka's WARN: the window is
        `[start,end)`, or `[start,end]` for session and sliding windows and join windows (`inclusive_end`)."""
        self.skipped(
            node,
            LATE,
            "Skipping record for expired window. processor=[%s] task=[%s] topic=[%s] partition=[%d] offset=[%d] "
            "timestamp=[%d] window=[%d,%d%s expiration=[%d] streamTime=[%d]",
            node,
            self.task_id,
            record.topic,
            record.partition,
            record.offset,
            record.timestamp,
            window_start,
            window_end,
            "]" if inclusive_end else ")",
            expiration,
            stream_time,
        )

    def null_key_or_value(self, node: str, record: Record) -> None:
        """Count a record `node` cannot place for its null key (or value), with Kafka's WARN."""
        self.skipped(
            node,
            NULL_KEY_OR_VALUE,
            "Skipping record due to null key or value. processor=[%s] task=[%s] topic=[%s] partition=[%d] offset=[%d]",
            node,
            self.task_id,
            record.topic,
            record.partition,
            record.offset,
        )

    def __repr__(self) -> str:
        return f"DroppedRecords({self.task_id}, total={self.total})"


class DroppedRecordsSensors:
    """The dropped-records sensors of one stream thread's tasks, kept when a task closes: a task that comes
    back counts on, and the metrics report totals since the thread started (as its processed counts)."""

    __slots__ = ("_tasks",)

    def __init__(self) -> None:
        self._tasks: dict[TaskId, DroppedRecords] = {}

    def task(self, task_id: TaskId) -> DroppedRecords:
        sensor = self._tasks.get(task_id)
        if sensor is None:
            sensor = self._tasks[task_id] = DroppedRecords(task_id)
        return sensor

    def __iter__(self) -> Iterator[DroppedRecords]:
        return iter(list(self._tasks.values()))


class DroppedRecordsRates:
    """`dropped-records-rate` per task, from the totals each metrics sample reads: the records dropped since
    the oldest sample of the last `RATE_WINDOW_S` (or since the client started), per second. Computed when
    sampled, so dropping a record costs no clock read."""

    def __init__(self, started: float, window_s: float = RATE_WINDOW_S) -> None:
        self._window = window_s
        self._samples: deque[tuple[float, Mapping[TaskId, int]]] = deque([(started, {})])

    def rates(self, now: float, totals: Mapping[TaskId, int]) -> dict[TaskId, float]:
        """Rates at `now` of the tasks in `totals` (their totals now); remembers `totals` for later rates."""
        samples = self._samples
        while len(samples) > 1 and samples[1][0] <= now - self._window:
            samples.popleft()
        then, before = samples[0]
        elapsed = now - then
        out = {
            task: round((total - before.get(task, 0)) / elapsed, 3) if elapsed > 0 else 0.0
            for task, total in totals.items()
        }
        samples.append((now, dict(totals)))
        return out
