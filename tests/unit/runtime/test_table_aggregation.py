"""KTable group_by: the re-grouping map and the grouped table's aggregation, run as task graphs.

The oracle (tests/oracle/semantics/test_grouped_table_oracle.py) proves them record for record on Kafka's
driver, whose caches flush after every record; these tests cover a flush that covers several updates.
"""

from __future__ import annotations

from streamlet.serdes import LongSerde, StringSerde
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.change import Change, ChangeSerde
from tests.unit.runtime._support import CachingStore, FakeContext, graph_of

CHANGES = ChangeSerde(StringSerde())
REPARTITION = "app-KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition"


def _by_first_letter_count() -> Topology:
    builder = StreamsBuilder()
    table = builder.table("t", "str", "str")
    counts = table.group_by(lambda k, v: (v[:1], v)).count()
    counts.to_stream().to("out", "str", "int64")
    return builder.build()


def test_a_moved_row_leaves_its_old_group_first_and_a_row_that_stays_is_one_change() -> None:
    ctx = FakeContext(TaskId(0, 0))
    graph = graph_of(_by_first_letter_count(), TaskId(0, 0), ctx)
    for offset, (key, value) in enumerate([(b"r", b"apple"), (b"r", b"avocado"), (b"r", b"banana"), (b"r", None)]):
        graph.process("t", 0, offset, 10 + offset, key, value)
    sent = [(s.key, CHANGES.deserialize(s.topic, s.value), s.timestamp) for s in ctx.sent if s.topic == REPARTITION]
    assert sent == [
        (b"a", Change("apple", None), 10),
        (b"a", Change("avocado", "apple"), 11),
        (b"a", Change(None, "avocado"), 12),
        (b"b", Change("banana", None), 12),
        (b"b", Change(None, "banana"), 13),
    ]


def test_the_aggregate_subtracts_then_adds_and_a_cache_flush_emits_each_group_once() -> None:
    ctx = FakeContext(TaskId(1, 0), store_factory=CachingStore)
    graph = graph_of(_by_first_letter_count(), TaskId(1, 0), ctx)
    changes = [
        (b"a", Change("apple", None), 10),
        (b"a", Change("avocado", None), 5),
        (b"b", Change("banana", None), 12),
        (b"a", Change(None, "apple"), 7),  # subtracting keeps the aggregate's larger timestamp
        (b"b", Change("blueberry", "banana"), 3),
    ]
    for offset, (key, change, timestamp) in enumerate(changes):
        graph.process(REPARTITION, 0, offset, timestamp, key, CHANGES.serialize(REPARTITION, change))
    assert ctx.sent == []
    ctx.stores["KTABLE-AGGREGATE-STATE-STORE-0000000004"].flush()
    longs = LongSerde()
    assert [(s.key, longs.deserialize("out", s.value), s.timestamp) for s in ctx.sent] == [
        (b"a", 1, 10),
        (b"b", 1, 12),
    ]
