"""The records of a thread's single-partition tasks of one sub-topology, taken in event-time order across them.

Kafka Streams orders records only within a task (`PartitionGroup`): a task with one input partition processes
what it is handed, and a poll hands a task up to `max.poll.records` of one partition. A worker that replays a
backlog therefore writes its repartition topics in long runs, each from one input partition and spanning
minutes of event time; downstream, a windowed aggregation's stream time jumps ahead with every run, and the
next run's records are late (issue 23: 77.7 % of a 40-minute backlog dropped with 1 minute of grace).

Here the single-partition tasks of one sub-topology on one thread share one `EventTimeMerge`: each partition's
fetched records wait in a `RecordQueue`, and the thread takes, slice by slice, the queue with the smallest head
timestamp, and from it every record up to `slice_ms` past the next smallest head. Its writes to a repartition
topic are then in time order up to `slice_ms` (plus the input's own disorder within a partition).

As with `max.task.idle.ms`'s rule for fetched lag, the merge does not go past an empty queue whose partition
still has records on the broker (or whose lag is not known yet): processing the others would run ahead of
them. An empty queue whose partition is caught up (lag 0) is not waited for, so a live stream is processed as
it is fetched. On a live stream, or a backlog fetched in batches whose time spans overlap within `slice_ms`,
a slice is a whole fetched batch: the batch path's speed.

`ceiling` bounds a slice from outside (the other threads of the client, `StreamTimeWatermark`): no record
later than it is taken; the thread waits for them instead, and the partitions that ran ahead fill their
queues, which the task manager then leaves out of its polls (`TaskManager.fetch_partitions`).

Only sub-topologies that write to a repartition topic are merged: elsewhere the order across tasks changes
nothing the application computes (each task has its own stream time).
"""

from __future__ import annotations

from collections.abc import Iterable

from aiokafka.structs import TopicPartition

from streamlet.runtime.fetched_records import FetchedRecord
from streamlet.runtime.partition_group import LagProvider, RecordQueue
from streamlet.runtime.task_context import Stamper
from streamlet.topology.timestamps import UNKNOWN

#: `event_time_slice_ms` that turns the merge off: each single-partition task processes its fetched batch at once
MERGE_DISABLED = -1

#: no bound from outside
NO_CEILING = 2**63 - 1


class EventTimeMerge:
    """The queues of one sub-topology's single-partition tasks on one thread, and the order they are taken in."""

    def __init__(self, slice_ms: int) -> None:
        self._slice_ms = slice_ms
        self._queues: dict[TopicPartition, RecordQueue] = {}
        # partitions whose task is not processing (restoring, suspended): neither taken nor waited for
        self._disabled: set[TopicPartition] = set()
        # the largest timestamp taken from each partition: where a partition waiting for a fetch stands
        self._taken_time: dict[TopicPartition, int] = {}

    # ---- membership -------------------------------------------------------------------------------------------

    def add_partition(self, tp: TopicPartition, stamp: Stamper | None) -> None:
        if tp not in self._queues:
            self._queues[tp] = RecordQueue(tp, stamp)

    def clear_partition(self, tp: TopicPartition) -> int | None:
        """Drop the queued records of `tp` (its task stops processing); returns the first unprocessed offset
        (None if none was queued): the consumer must resume there, or those records are lost."""
        self._taken_time.pop(tp, None)
        queue = self._queues.get(tp)
        if queue is None or not queue.records:
            return None
        first = queue.records[0].offset
        queue.records.clear()
        return first

    def remove_partition(self, tp: TopicPartition) -> None:
        """Forget `tp` (its task closed, after `clear_partition`)."""
        self._disabled.discard(tp)
        self._taken_time.pop(tp, None)
        self._queues.pop(tp, None)

    def partitions(self) -> set[TopicPartition]:
        return set(self._queues)

    def set_processing(self, tp: TopicPartition, processing: bool) -> None:
        if processing:
            self._disabled.discard(tp)
        else:
            self._disabled.add(tp)

    # ---- records ----------------------------------------------------------------------------------------------

    def add_records(self, tp: TopicPartition, records: Iterable[FetchedRecord]) -> int:
        """Queue a fetched batch; returns the partition's queue size (the caller pauses it past its bound)."""
        queue = self._queues[tp]
        was_empty = not queue.records
        queue.records.extend(records)
        if was_empty and queue.records:
            queue.update_head()
        return len(queue.records)

    def size(self, tp: TopicPartition) -> int:
        queue = self._queues.get(tp)
        return 0 if queue is None else len(queue.records)

    def position(self, lag: LagProvider) -> int | None:
        """How far this thread stands in event time: the smallest head timestamp, or, for a partition that waits
        for a fetch, the last timestamp taken from it (UNKNOWN before the first). None: nothing queued and
        nothing on the broker, i.e. caught up (not catching up, so nothing to hold the others back for)."""
        position: int | None = None
        for tp, queue in self._queues.items():
            if tp in self._disabled:
                continue
            if queue.records:
                at = queue.head_timestamp
            else:
                fetched_lag = lag(tp)
                if fetched_lag is not None and fetched_lag <= 0:
                    continue
                at = self._taken_time.get(tp, UNKNOWN)
            if position is None or at < position:
                position = at
        return position

    def next_slice(
        self, lag: LagProvider, ceiling: int = NO_CEILING
    ) -> tuple[TopicPartition, list[FetchedRecord]] | None:
        """The next slice: the records of the queue with the smallest head timestamp, oldest first, up to
        `slice_ms` past the smallest head of the others and never past `ceiling`. None when there is none to
        take, or when an empty queue's partition still has records to fetch (take nothing before them)."""
        lowest: RecordQueue | None = None
        second = NO_CEILING
        disabled = self._disabled
        for tp, queue in self._queues.items():
            if tp in disabled:
                continue
            if not queue.records:
                fetched_lag = lag(tp)
                if fetched_lag is None or fetched_lag > 0:
                    return None
                continue
            head = queue.head_timestamp
            if lowest is None or head < lowest.head_timestamp:
                if lowest is not None:
                    second = min(second, lowest.head_timestamp)
                lowest = queue
            else:
                second = min(second, head)
        if lowest is None or lowest.head_timestamp > ceiling:
            return None
        bound = ceiling if second == NO_CEILING else min(ceiling, second + self._slice_ms)
        records = lowest.records
        taken_time = lowest.head_timestamp
        run = [records.popleft()]
        if lowest._stamp is None:  # with an extractor only the head's timestamp is known: one record at a time
            while records and records[0].timestamp <= bound:
                record = records.popleft()
                run.append(record)
                if record.timestamp > taken_time:
                    taken_time = record.timestamp
        self._taken_time[lowest.partition] = max(taken_time, self._taken_time.get(lowest.partition, UNKNOWN))
        if records:
            lowest.update_head()
        return lowest.partition, run
