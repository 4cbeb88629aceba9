"""The buffered input of a task with several input partitions (Kafka Streams' `PartitionGroup` and `RecordQueue`).

A stream-table join reads an orders partition and a customers partition; `merge()` and multi-topic sources
read several. Kafka Streams does not process a fetch partition by partition: each partition's records wait in
a queue, and the task takes, one record at a time, the head with the smallest timestamp, so an order stamped
after a customer update sees it even when the order was fetched first.

Before it takes a record the task checks `ready_to_process` (KIP-695, `max.task.idle.ms`): while an input
partition is empty and records are known (or not known not) to wait for it on the broker, processing would
skip ahead of them, so the task waits. An empty partition whose fetched lag is 0 waits up to `max_task_idle_ms`
of wall-clock time, then processing is enforced; -1 never waits.

Records are ordered by the timestamp their source will give them: with a `timestamp_extractor`, the head
record of a user topic's queue is deserialized and stamped when it becomes the head, at its partition's time
(the source node extracts the same timestamp again when it processes it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence

from aiokafka.structs import TopicPartition

from streamlet.assignment.java_collections import JavaPriorityQueue
from streamlet.runtime.fetched_records import FetchedRecord
from streamlet.runtime.task_context import Stamper
from streamlet.topology.timestamps import UNKNOWN

#: `max_task_idle_ms` that never waits for an empty partition (Kafka's MAX_TASK_IDLE_MS_DISABLED)
MAX_TASK_IDLE_MS_DISABLED = -1

#: the records between a partition's fetch position and its high watermark (or LSO); None: not known yet
LagProvider = Callable[[TopicPartition], "int | None"]


class RecordQueue:
    """The fetched, unprocessed records of one input partition, oldest first, and the timestamp of the head."""

    __slots__ = ("partition", "records", "head_timestamp", "_stamp")

    def __init__(self, partition: TopicPartition, stamp: Stamper | None) -> None:
        self.partition = partition
        self.records: deque[FetchedRecord] = deque()
        self.head_timestamp = UNKNOWN
        self._stamp = stamp  # the source's timestamp extractor; None: the record's own timestamp

    def update_head(self) -> None:
        """The head changed: stamp it (Kafka's `RecordQueue#updateHead`, which extracts only the head's)."""
        head = self.records[0]
        stamp = self._stamp
        self.head_timestamp = (
            head.timestamp
            if stamp is None
            else stamp(self.partition.partition, head.offset, head.timestamp, head.key, head.value)
        )


def _head_timestamp(queue: RecordQueue) -> int:
    return queue.head_timestamp


class PartitionGroup:
    """One queue per input partition of a task, and the order the task takes their records in."""

    def __init__(
        self,
        partitions: Iterable[TopicPartition],
        max_task_idle_ms: int,
        stampers: Mapping[str, Stamper] | None = None,
    ) -> None:
        stampers = stampers or {}
        self._queues = {tp: RecordQueue(tp, stampers.get(tp.topic)) for tp in sorted(partitions)}
        # the non-empty queues by head timestamp; ties fall out as Java's heap orders them
        self._by_time: JavaPriorityQueue[RecordQueue] = JavaPriorityQueue(key=_head_timestamp)
        self._max_task_idle_ms = max_task_idle_ms
        self._idle_deadlines: dict[TopicPartition, int] = {}  # empty partitions with lag 0: wait until then

    def add_records(self, tp: TopicPartition, records: Sequence[FetchedRecord]) -> int:
        """Queue a fetched batch; returns the partition's queue size (the caller pauses it past its bound)."""
        queue = self._queues[tp]
        was_empty = not queue.records
        queue.records.extend(records)
        if was_empty and queue.records:
            queue.update_head()
            self._by_time.offer(queue)
        return len(queue.records)

    def size(self, tp: TopicPartition) -> int:
        return len(self._queues[tp].records)

    def ready_to_process(self, now_ms: int, lag: LagProvider) -> bool:
        """Kafka's `PartitionGroup#readyToProcess`: may the task take a record now without skipping ahead of
        records that will still arrive for an empty partition?"""
        if self._max_task_idle_ms == MAX_TASK_IDLE_MS_DISABLED:
            return bool(self._by_time)
        deadlines = self._idle_deadlines
        for tp, queue in self._queues.items():
            if queue.records:
                deadlines.pop(tp, None)
                continue
            fetched_lag = lag(tp)
            if fetched_lag is None or fetched_lag > 0:  # data on the broker (or unknown yet): fetch it first
                deadlines.pop(tp, None)
                return False
            deadline = deadlines.setdefault(tp, now_ms + self._max_task_idle_ms)
            if now_ms < deadline:  # caught up: give the producer max_task_idle_ms to write more
                return False
        # every partition buffered, or the idle deadline of the empty ones passed (processing is enforced)
        return bool(self._by_time)

    def ms_until_idle_deadline(self, now_ms: int) -> int | None:
        """How long until an empty partition's idle deadline passes (None: none is ahead, or no record waits).
        A passed deadline is not waited for: the task processed then, or waits for a fetch."""
        if not self._by_time:
            return None
        return min((deadline - now_ms for deadline in self._idle_deadlines.values() if deadline > now_ms), default=None)

    def next_run(self) -> tuple[RecordQueue, list[FetchedRecord]] | None:
        """The head record with the smallest timestamp and, behind it in its queue, every record stamped before
        the head of every other queue: the records `next_record` would return one by one (a strictly smaller
        head always wins the heap), taken with one heap operation. With an extractor, one record."""
        queue = self._by_time.poll()
        if queue is None:
            return None
        records = queue.records
        run = [records.popleft()]
        if queue._stamp is None:
            other = self._by_time.peek()
            if other is None:
                run.extend(records)
                records.clear()
            else:
                bound = other.head_timestamp
                while records and records[0].timestamp < bound:
                    run.append(records.popleft())
        if records:
            queue.update_head()
            self._by_time.offer(queue)
        return queue, run

    def next_record(self) -> tuple[RecordQueue, FetchedRecord] | None:
        """The head record with the smallest timestamp, and the queue it came from."""
        queue = self._by_time.poll()
        if queue is None:
            return None
        record = queue.records.popleft()
        if queue.records:
            queue.update_head()
            self._by_time.offer(queue)
        return queue, record

    def clear(self) -> dict[TopicPartition, int]:
        """Drop every buffered record; returns, per partition that had any, the first unprocessed offset
        (where the consumer must resume, or they are lost)."""
        first = {tp: queue.records[0].offset for tp, queue in self._queues.items() if queue.records}
        for queue in self._queues.values():
            queue.records.clear()
        self._by_time = JavaPriorityQueue(key=_head_timestamp)
        self._idle_deadlines.clear()
        return first
