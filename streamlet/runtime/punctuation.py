"""Punctuation: periodic callbacks of `process()` processors (Kafka Streams' `ProcessorContext#schedule`).

A processor schedules `punctuator(timestamp)` every `interval_ms` of either clock:

* `PunctuationType.STREAM_TIME`: the task's stream time (the largest timestamp it has processed). Schedules
  are aligned to 0, so the first fires as soon as the task has seen a record; each check fires a schedule
  at most once, however far stream time jumped, and the next is the first multiple of the interval (from the
  schedule's start) after the current time. Only records move stream time, so an idle task never fires.
* `PunctuationType.WALL_CLOCK_TIME`: the system clock. The first fires `interval_ms` after scheduling; the
  stream thread checks every loop iteration (and waits for records no longer than the next is due), the
  TopologyTestDriver when its wall clock is advanced.

Both follow Kafka's `PunctuationQueue` and `PunctuationSchedule#next` exactly, schedules of one task in
one `java.util.PriorityQueue` order per type, so ties fire in the order Kafka fires them. A punctuator
runs inside its task, with the record context of a punctuation (the punctuation time as timestamp, no
topic, partition and offset -1): what it writes to stores and sends commits with the task, and what it
forwards carries the punctuation time.
"""

from __future__ import annotations

import contextlib
import enum
import time
from collections.abc import Callable, Iterator, Sequence

from streamlet.assignment.java_collections import JavaPriorityQueue
from streamlet.runtime.record_context import RecordContext

__all__ = [
    "Cancellable",
    "PunctuationQueue",
    "PunctuationSchedule",
    "PunctuationType",
    "Punctuator",
    "TaskPunctuations",
    "punctuation_record",
    "system_time_ms",
]

#: `punctuator(timestamp)`: the punctuation time (stream time, or wall-clock time in ms).
Punctuator = Callable[[int], None]


class PunctuationType(enum.Enum):
    STREAM_TIME = "stream_time"
    WALL_CLOCK_TIME = "wall_clock_time"


class Cancellable:
    """What `schedule()` returns: `cancel()` stops the punctuation (also from inside the punctuator)."""

    __slots__ = ("_schedule",)

    def __init__(self) -> None:
        self._schedule: PunctuationSchedule | None = None

    def cancel(self) -> None:
        if self._schedule is not None:
            self._schedule.cancelled = True


class PunctuationSchedule:
    """The next firing of one punctuator; its successor shares the same `Cancellable`."""

    __slots__ = ("node", "time", "interval", "punctuator", "cancellable", "cancelled")

    def __init__(
        self, node: str, time: int, interval: int, punctuator: Punctuator, cancellable: Cancellable | None = None
    ) -> None:
        self.node = node
        self.time = time
        self.interval = interval
        self.punctuator = punctuator
        self.cancellable = Cancellable() if cancellable is None else cancellable
        self.cancellable._schedule = self
        self.cancelled = False

    def next(self, current: int) -> PunctuationSchedule:
        """The following firing: one interval on, or past `current` if punctuations were missed."""
        time = self.time + self.interval
        if current >= time:
            missed = (current - self.time) // self.interval
            time = self.time + (missed + 1) * self.interval
        return PunctuationSchedule(self.node, time, self.interval, self.punctuator, self.cancellable)


class PunctuationQueue:
    """The schedules of one clock of one task."""

    __slots__ = ("_queue",)

    def __init__(self) -> None:
        self._queue: JavaPriorityQueue[PunctuationSchedule] = JavaPriorityQueue(key=lambda s: s.time)

    def schedule(self, schedule: PunctuationSchedule) -> Cancellable:
        self._queue.offer(schedule)
        return schedule.cancellable

    def next_time(self) -> int | None:
        """When the earliest live schedule is due (None: nothing scheduled)."""
        queue = self._queue
        while True:
            top = queue.peek()
            if top is None or not top.cancelled:
                return None if top is None else top.time
            queue.poll()

    def maybe_punctuate(self, now: int, run: Callable[[PunctuationSchedule, int], None]) -> bool:
        """Fire every schedule due at `now` once (`run(schedule, now)`); True if any fired."""
        queue = self._queue
        punctuated = False
        top = queue.peek()
        while top is not None and top.time <= now:
            queue.poll()
            if not top.cancelled:
                run(top, now)
                if not top.cancelled:  # the punctuator may have cancelled itself
                    queue.offer(top.next(now))
                punctuated = True
            top = queue.peek()
        return punctuated

    def clear(self) -> None:
        while self._queue.poll() is not None:
            pass


def system_time_ms() -> int:
    """Kafka's `time.milliseconds()`: the wall clock in epoch milliseconds."""
    return time.time_ns() // 1_000_000


@contextlib.contextmanager
def punctuation_record(record: RecordContext, timestamp: int) -> Iterator[None]:
    """What a punctuator runs with: the punctuation time as timestamp, no topic, partition or offset (-1) and
    no old value; the record being processed, if any, is put back afterwards."""
    saved = (record.topic, record.partition, record.offset, record.timestamp, record.old_value)
    record.topic, record.partition, record.offset, record.timestamp = None, -1, -1, timestamp
    record.old_value = None
    try:
        yield
    finally:
        record.topic, record.partition, record.offset, record.timestamp, record.old_value = saved


class TaskPunctuations:
    """One task's punctuation queues (one per clock), and the record context a punctuator runs with."""

    __slots__ = ("stream_time", "wall_clock_time", "clock", "_record", "_held")

    def __init__(self, record: RecordContext, clock: Callable[[], int] = system_time_ms) -> None:
        self.stream_time = PunctuationQueue()
        self.wall_clock_time = PunctuationQueue()
        self.clock = clock
        self._record = record
        self._held: list[tuple[PunctuationQueue, PunctuationSchedule]] | None = None

    def hold(self) -> None:
        """Keep schedules back until `release`: a task's processors are created children first, while Kafka
        initializes them (and so schedules their punctuators) in topology order, which orders equal times."""
        self._held = []

    def release(self, topology_order: Sequence[str]) -> None:
        """Queue the held schedules as if their processors had been created in `topology_order`."""
        held, self._held = self._held or [], None
        rank = {node: i for i, node in enumerate(topology_order)}
        for queue, schedule in sorted(held, key=lambda item: rank.get(item[1].node, len(rank))):
            queue.schedule(schedule)

    def schedule(
        self, node: str, interval_ms: int, punctuation_type: PunctuationType, punctuator: Punctuator
    ) -> Cancellable:
        """Kafka's `StreamTask#schedule`: stream time aligned to 0, wall-clock time to now."""
        if not isinstance(interval_ms, int) or isinstance(interval_ms, bool) or interval_ms < 1:
            raise ValueError(f"The minimum supported scheduling interval is 1 millisecond, got {interval_ms!r}")
        if not callable(punctuator):
            raise TypeError(f"punctuator must be callable, got {punctuator!r}")
        if punctuation_type is PunctuationType.STREAM_TIME:
            queue, start = self.stream_time, 0
        elif punctuation_type is PunctuationType.WALL_CLOCK_TIME:
            queue, start = self.wall_clock_time, self.clock() + interval_ms
        else:
            raise ValueError(f"Unrecognized PunctuationType: {punctuation_type!r}")
        schedule = PunctuationSchedule(node, start, interval_ms, punctuator)
        if self._held is not None:
            self._held.append((queue, schedule))
            return schedule.cancellable
        return queue.schedule(schedule)

    def punctuate_stream_time(self, stream_time: int) -> bool:
        """Fire the stream-time schedules due at `stream_time` (none while it is unknown, -1)."""
        if stream_time < 0:
            return False
        return self.stream_time.maybe_punctuate(stream_time, self._run)

    def punctuate_wall_clock_time(self) -> bool:
        return self.wall_clock_time.maybe_punctuate(self.clock(), self._run)

    def ms_until_wall_clock_punctuation(self) -> int | None:
        """How long until the next wall-clock punctuation is due (0 if overdue; None: none scheduled)."""
        due = self.wall_clock_time.next_time()
        return None if due is None else max(0, due - self.clock())

    def _run(self, schedule: PunctuationSchedule, timestamp: int) -> None:
        with punctuation_record(self._record, timestamp):
            schedule.punctuator(timestamp)

    def close(self) -> None:
        self.stream_time.clear()
        self.wall_clock_time.clear()
