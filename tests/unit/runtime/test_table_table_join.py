"""KTable-KTable joins as task graphs: the oracle (tests/oracle/semantics/test_table_join_oracle.py) proves
them on Kafka's driver, which flushes caches after every record; here a flush covers several updates."""

from __future__ import annotations

import pytest

from streamlet.errors import TopologyError
from streamlet.state.caching_store import CachingKeyValueStore
from streamlet.state.record_cache import RecordCache
from streamlet.state.store import InMemoryKeyValueStore
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder
from streamlet.topology.windows import TimeWindows
from tests.unit.runtime._support import FakeContext, graph_of


def test_a_left_join_flushed_once_per_side_joins_the_latest_values_with_the_larger_timestamp() -> None:
    builder = StreamsBuilder()
    left = builder.table("l", "str", "str", "l-store")
    right = builder.table("r", "str", "str", "r-store")
    left.left_join(right, lambda v, w: f"{v}+{w}").to_stream().to("out", "str", "str")
    cache = RecordCache(1 << 20)
    ctx = FakeContext(
        TaskId(0, 0), store_factory=lambda name: CachingKeyValueStore(InMemoryKeyValueStore(name), cache, name)
    )
    graph = graph_of(builder.build(), TaskId(0, 0), ctx)
    for offset, (topic, key, value, timestamp) in enumerate(
        [("l", b"a", b"1", 5), ("l", b"a", b"2", 6), ("r", b"a", b"x", 9), ("l", b"b", b"3", 4)]
    ):
        graph.process(topic, 0, offset, timestamp, key, value)
    assert ctx.sent == []
    ctx.stores["l-store"].flush_cache()  # the left side first: the right store's cache already holds "x"
    ctx.stores["r-store"].flush_cache()
    assert [(s.key, s.value, s.timestamp) for s in ctx.sent if s.topic == "out"] == [
        (b"a", b"2+x", 9),
        (b"b", b"3+None", 4),
        (b"a", b"2+x", 9),
    ]


def test_a_stream_reading_an_unmaterialized_join_is_co_partitioned_with_both_tables() -> None:
    builder = StreamsBuilder()
    left, right = builder.table("l", "str", "str"), builder.table("r", "str", "str")
    joined = left.outer_join(right, lambda v, w: f"{v}+{w}")
    builder.stream("s", "str", "str").join(joined, lambda v, w: f"{v}:{w}").to("out", "str", "str")
    topology = builder.build()
    assert ("s", "l", "r") in topology.copartition_groups()
    with pytest.raises(TopologyError, match="not co-partitioned"):
        topology.internal_topics({"l": 2, "r": 2, "s": 3})
    ctx = FakeContext(TaskId(0, 0))
    graph = graph_of(topology, TaskId(0, 0), ctx)
    for offset, (topic, key, value, timestamp) in enumerate(
        [
            ("r", b"a", b"x", 9),
            ("s", b"a", b"1", 10),
            ("l", b"a", b"y", 3),
            ("s", b"a", b"2", 11),
            ("s", b"b", b"3", 12),
        ]
    ):
        graph.process(topic, 0, offset, timestamp, key, value)
    assert [(s.key, s.value) for s in ctx.sent if s.topic == "out"] == [(b"a", b"1:None+x"), (b"a", b"2:y+x")]


def test_windowed_tables_cannot_be_joined() -> None:
    builder = StreamsBuilder()
    left = builder.table("l", "str", "str")
    with pytest.raises(TopologyError, match="takes a KTable"):
        left.join(builder.stream("s2"), lambda v, w: v)  # type: ignore[arg-type]
    windowed = builder.stream("w", "str", "str").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(5))
    left.join(windowed.count(), lambda v, w: v)
    with pytest.raises(TopologyError, match="windowed table"):
        builder.build()


def test_the_joined_tables_topics_must_be_co_partitioned() -> None:
    builder = StreamsBuilder()
    employees = builder.table("employees", "str", "str")
    headcount = employees.group_by(lambda e, d: (d, e)).count("headcount")
    builder.table("departments", "str", "str").join(headcount, lambda name, n: n).to_stream().to("out")
    topology = builder.build()
    # each side of the join reads the other's store: one group per side
    assert topology.copartition_groups() == [
        ("departments", "headcount-repartition"),
        ("headcount-repartition", "departments"),
    ]
    # the repartition topic is sized like the table it is joined with, not like its own input
    sizes = {t.name: t.partitions for t in topology.internal_topics({"employees": 6, "departments": 4})}
    assert sizes["headcount-repartition"] == 4

    builder = StreamsBuilder()
    builder.table("a", "str", "str").outer_join(builder.table("b", "str", "str"), lambda x, y: x)
    with pytest.raises(TopologyError, match=r"a \(4 partitions\), b \(6 partitions\)"):
        builder.build().internal_topics({"a": 4, "b": 6})
