"""`EventTimeMerge` takes a thread's single-partition queues in event-time order in bounded slices, waits for
partitions with records still on the broker, and stays under a ceiling; `StreamTimeWatermark` lets the threads of
a client hold each other to the slowest. Expected orders are computed from the timestamps alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aiokafka.structs import TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet.runtime.event_time_merge import NO_CEILING, EventTimeMerge
from streamlet.runtime.stream_time_watermark import StreamTimeWatermark
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.timestamps import UNKNOWN
from tests.unit.runtime._fakes import FakeKafka, FetchedTestRecord
from tests.unit.runtime._harness import Harness

A, B, C = TopicPartition("in", 0), TopicPartition("in", 1), TopicPartition("in", 2)


def _records(*timestamps: int, first_offset: int = 0) -> list[FetchedTestRecord]:
    return [FetchedTestRecord(first_offset + i, ts) for i, ts in enumerate(timestamps)]


def _caught_up(tp: TopicPartition) -> int | None:
    return 0


def _merge(slice_ms: int, *partitions: TopicPartition) -> EventTimeMerge:
    merge = EventTimeMerge(slice_ms)
    for tp in partitions:
        merge.add_partition(tp, None)
    return merge


def _drain(merge: EventTimeMerge, ceiling: int = NO_CEILING) -> Iterator[tuple[TopicPartition, list[int]]]:
    while (taken := merge.next_slice(_caught_up, ceiling)) is not None:
        tp, run = taken
        yield tp, [record.timestamp for record in run]


def test_slices_alternate_between_partitions_by_head_timestamp() -> None:
    merge = _merge(0, A, B)
    merge.add_records(A, _records(1, 2, 5, 6))
    merge.add_records(B, _records(3, 4, 7))
    assert list(_drain(merge)) == [(A, [1, 2]), (B, [3, 4]), (A, [5, 6]), (B, [7])]


def test_a_slice_reaches_slice_ms_past_the_next_head() -> None:
    merge = _merge(10, A, B)
    merge.add_records(A, _records(0, 5, 10, 20, 30))
    merge.add_records(B, _records(0, 15, 25))
    # A's head ties B's and goes first (dict order); then A up to B's head 0 + 10, B up to A's 20 + 10, ...
    assert list(_drain(merge)) == [(A, [0, 5, 10]), (B, [0, 15, 25]), (A, [20, 30])]


def test_a_lone_partition_is_one_slice() -> None:
    merge = _merge(0, A, B)
    merge.add_records(A, _records(9, 1, 5))  # out of order within the partition: offset order is kept
    assert list(_drain(merge)) == [(A, [9, 1, 5])]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 1_000), max_size=30), min_size=1, max_size=4),
    st.integers(0, 100),
)
def test_in_order_partitions_are_taken_in_time_order_up_to_the_slice(
    partitions: list[list[int]], slice_ms: int
) -> None:
    """Every record comes out once, in offset order per partition, and no record is taken more than slice_ms
    after a record still waiting in another partition (so output disorder is at most slice_ms)."""
    tps = [TopicPartition("in", i) for i in range(len(partitions))]
    merge = _merge(slice_ms, *tps)
    for tp, timestamps in zip(tps, partitions, strict=True):
        merge.add_records(tp, _records(*sorted(timestamps)))
    out: list[int] = []
    per_partition: dict[TopicPartition, list[int]] = {tp: [] for tp in tps}
    for tp, run in _drain(merge):
        per_partition[tp].extend(run)
        out.extend(run)
    assert per_partition == {tp: sorted(ts) for tp, ts in zip(tps, partitions, strict=True)}
    for i, timestamp in enumerate(out):
        assert all(later >= timestamp - slice_ms for later in out[i + 1 :]), (out, slice_ms)


def test_an_empty_partition_with_records_on_the_broker_is_waited_for() -> None:
    merge = _merge(0, A, B)
    merge.add_records(A, _records(1, 2))
    lags: dict[TopicPartition, int | None] = {A: 0, B: None}
    assert merge.next_slice(lags.get) is None  # B's lag unknown: not fetched yet
    lags[B] = 3
    assert merge.next_slice(lags.get) is None  # known to have records
    lags[B] = 0
    taken = merge.next_slice(lags.get)
    assert taken is not None and taken[0] == A and [r.timestamp for r in taken[1]] == [1, 2]


def test_a_partition_whose_task_is_not_processing_is_neither_taken_nor_waited_for() -> None:
    merge = _merge(0, A, B)
    merge.add_records(A, _records(5))
    merge.add_records(B, _records(1))
    merge.set_processing(B, False)
    lags: dict[TopicPartition, int | None] = {A: 0, B: None}
    assert [(tp, [r.timestamp for r in run]) for tp, run in [merge.next_slice(lags.get)] if run] == [(A, [5])]
    assert merge.next_slice(lags.get) is None
    merge.set_processing(B, True)
    taken = merge.next_slice(lags.get)
    assert taken is not None and taken[0] == B


def test_nothing_past_the_ceiling_is_taken() -> None:
    merge = _merge(100, A, B)
    merge.add_records(A, _records(10, 20, 30))
    merge.add_records(B, _records(25, 40))
    assert list(_drain(merge, ceiling=22)) == [(A, [10, 20])]
    assert list(_drain(merge, ceiling=5)) == []
    assert list(_drain(merge, ceiling=35)) == [(B, [25]), (A, [30])]


def test_position_is_the_earliest_head_or_where_a_partition_waiting_for_a_fetch_stopped() -> None:
    merge = _merge(0, A, B)
    lags: dict[TopicPartition, int | None] = {A: 0, B: 0}
    assert merge.position(lags.get) is None  # nothing queued, nothing to fetch: caught up
    lags[B] = None
    assert merge.position(lags.get) == UNKNOWN  # B not fetched yet: it may be anywhere
    merge.add_records(A, _records(10, 20))
    merge.add_records(B, _records(15))
    assert merge.position(lags.get) == 10
    merge.next_slice(lags.get)
    merge.next_slice(lags.get)  # A to 10, then B's 15
    lags[B] = 4  # B has more on the broker, not fetched yet
    assert merge.position(lags.get) == 15
    assert merge.next_slice(lags.get) is None  # A's 20 waits for B's next records


def test_a_cleared_partition_returns_its_first_unprocessed_offset() -> None:
    merge = _merge(0, A, B)
    merge.add_records(A, _records(1, 2, 3, first_offset=40))
    merge.add_records(B, _records(2, first_offset=7))
    merge.next_slice(_caught_up)  # A up to B's head: 1 and 2
    assert merge.clear_partition(A) == 42
    assert merge.clear_partition(A) is None
    assert merge.size(A) == 0 and merge.size(B) == 1


def test_the_watermark_bounds_a_thread_by_the_slowest_other_thread() -> None:
    now = [0.0]
    watermark = StreamTimeWatermark(stale_after_s=5.0, clock=lambda: now[0])
    assert watermark.ceiling("t1", 0, 100) == NO_CEILING
    watermark.report("t1", 0, 1_000)
    watermark.report("t2", 0, 5_000)
    assert watermark.ceiling("t1", 0, 100) == 5_100  # its own report does not bound it
    assert watermark.ceiling("t2", 0, 100) == 1_100
    assert watermark.ceiling("t2", 1, 100) == NO_CEILING  # per sub-topology
    watermark.report("t1", 0, None)  # caught up
    assert watermark.ceiling("t2", 0, 100) == NO_CEILING
    watermark.report("t1", 0, 2_000)
    now[0] = 5.5
    assert watermark.ceiling("t2", 0, 100) == NO_CEILING  # t1's report went stale
    watermark.report("t1", 0, 2_000)
    watermark.forget("t1")
    assert watermark.ceiling("t2", 0, 100) == NO_CEILING


# ---- the task manager: a thread's tasks writing to a repartition topic; two threads sharing a watermark --------

IN0, IN1 = TopicPartition("in", 0), TopicPartition("in", 1)
REPARTITION = "app-by-k-repartition"


def _regroup() -> Topology:
    """`in` re-keyed to one key through a repartition topic, then counted (sub-topology 1, not assigned here)."""
    builder = StreamsBuilder()
    builder.stream("in", "str", "str").group_by(lambda _k, _v: "k", "str", "str", name="by-k").count("counts")
    return builder.build()


def _kafka() -> FakeKafka:
    """`in` (2 partitions): 0 s, 1 s, ... 9 s on partition 0 and 0.5 s, 1.5 s, ... on partition 1."""
    kafka = FakeKafka({"in": 2, REPARTITION: 2, "app-counts-changelog": 2})
    for i in range(10):
        kafka.append(IN0, b"k", str(i * 1_000).encode(), i * 1_000)
        kafka.append(IN1, b"k", str(i * 1_000 + 500).encode(), i * 1_000 + 500)
    return kafka


def _written(kafka: FakeKafka) -> list[int]:
    """The values written to the repartition topic, in its order (one key: one partition)."""
    return [int(value) for tp, log in kafka.logs.items() if tp.topic == REPARTITION for _, value, _ in log if value]


def _harness(kafka: FakeKafka, path: Path, *tasks: TaskId, **overrides: Any) -> Harness:
    harness = Harness(kafka, path, topology=_regroup(), sources={"in": 2, REPARTITION: 2}, **overrides)
    harness.assign(*tasks)
    return harness


async def test_a_thread_writes_its_tasks_records_in_event_time_order(tmp_path: Path) -> None:
    kafka = _kafka()
    h = _harness(kafka, tmp_path, TaskId(0, 0), TaskId(0, 1), event_time_slice_ms=0)
    try:
        await h.poll_and_process()  # one fetch: all of partition 0, then all of partition 1
        assert _written(kafka) == sorted(_written(kafka)) and len(_written(kafka)) == 20
    finally:
        h.close()


async def test_without_the_merge_each_task_writes_its_whole_batch(tmp_path: Path) -> None:
    kafka = _kafka()
    h = _harness(kafka, tmp_path, TaskId(0, 0), TaskId(0, 1), event_time_slice_ms=-1)
    try:
        await h.poll_and_process()
        assert _written(kafka) == [i * 1_000 for i in range(10)] + [i * 1_000 + 500 for i in range(10)]
    finally:
        h.close()


async def test_two_threads_sharing_a_watermark_advance_together(tmp_path: Path) -> None:
    kafka = _kafka()
    watermark = StreamTimeWatermark()
    one = _harness(kafka, tmp_path / "1", TaskId(0, 0), name="t1", watermark=watermark, event_time_slice_ms=0)
    two = _harness(kafka, tmp_path / "2", TaskId(0, 1), name="t2", watermark=watermark, event_time_slice_ms=0)
    try:
        # t2 was assigned its task but has neither read its committed time nor fetched: it may be anywhere
        await one.poll_and_process()
        assert _written(kafka) == []
        for _ in range(30):  # each thread takes what the other allows, in turns
            for harness in (two, one):
                await harness.poll_and_process()
        assert _written(kafka) == sorted(i * 500 for i in range(20))
    finally:
        one.close()
        two.close()


async def test_threads_with_their_own_watermarks_run_apart(tmp_path: Path) -> None:
    """The control for the test above: without a shared watermark, t1 writes its whole partition first."""
    kafka = _kafka()
    one = _harness(kafka, tmp_path / "1", TaskId(0, 0), name="t1", event_time_slice_ms=0)
    two = _harness(kafka, tmp_path / "2", TaskId(0, 1), name="t2", event_time_slice_ms=0)
    try:
        await one.poll_and_process()
        await two.poll_and_process()
        assert _written(kafka) == [i * 1_000 for i in range(10)] + [i * 1_000 + 500 for i in range(10)]
    finally:
        one.close()
        two.close()


async def test_a_full_queue_is_left_out_of_the_poll_until_it_drains(tmp_path: Path) -> None:
    kafka = _kafka()
    h = _harness(kafka, tmp_path, TaskId(0, 0), TaskId(0, 1), event_time_slice_ms=0, buffered_records_per_partition=4)
    try:
        assert h.task_manager.fetch_partitions() is None  # nothing queued: poll everything
        await h.poll_and_process(max_records=10)  # all of partition 0; partition 1 not fetched yet: wait for it
        assert _written(kafka) == []
        assert h.task_manager.fetch_partitions() == [IN1]  # partition 0's queue (10) is over its bound (4)
        await h.poll_and_process(max_records=10)  # partition 1 only, then both are merged
        assert _written(kafka) == sorted(i * 500 for i in range(20))
        assert h.task_manager.fetch_partitions() is None
    finally:
        h.close()
