"""The order a test driver's task picks records in (Kafka Streams' `PartitionGroup` and `RecordQueue`).

Kafka's test driver runs the whole topology as one task with one queue per source topic (partition 0).
Each step takes the head record of the queue whose head has the smallest timestamp, using a
`java.util.PriorityQueue` of queues: a queue joins the heap when it stops being empty and is re-offered
after each record it gives up, so ties between queues fall out exactly as Java's heap orders them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from streamlet.assignment.java_collections import JavaPriorityQueue


@dataclass(frozen=True, slots=True)
class QueuedRecord:
    """A raw record waiting in a source topic's queue."""

    topic: str
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


class RecordQueue:
    """The buffered records of one source topic-partition, oldest first."""

    __slots__ = ("topic", "records", "next_offset")

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.records: deque[QueuedRecord] = deque()
        self.next_offset = 0

    def head_timestamp(self) -> int:
        return self.records[0].timestamp


class PartitionGroup:
    """All source queues of the driver's task; `next_record()` follows Kafka's choice of partition."""

    def __init__(self, topics: list[str]) -> None:
        self._queues = {topic: RecordQueue(topic) for topic in topics}
        self._by_time: JavaPriorityQueue[RecordQueue] = JavaPriorityQueue(key=RecordQueue.head_timestamp)
        self.stream_time = -1

    def __contains__(self, topic: object) -> bool:
        return topic in self._queues

    def add(self, topic: str, timestamp: int, key: bytes | None, value: bytes | None) -> None:
        queue = self._queues[topic]
        queue.records.append(QueuedRecord(topic, queue.next_offset, timestamp, key, value))
        queue.next_offset += 1
        if len(queue.records) == 1:
            self._by_time.offer(queue)

    def has_records(self) -> bool:
        return bool(self._by_time)

    def next_record(self) -> QueuedRecord | None:
        queue = self._by_time.poll()
        if queue is None:
            return None
        record = queue.records.popleft()
        if queue.records:
            self._by_time.offer(queue)
        self.stream_time = max(self.stream_time, record.timestamp)
        return record
