"""KTable group_by: the re-grouping map and the grouped table's aggregation, run as task graphs.

The oracle (tests/oracle/semantics/test_grouped_table_oracle.py) proves them record for record on Kafka's
driver, whose caches flush after every record; these tests cover a flush that covers several updates.
"""

from __future__ import annotations

from streamlet.serdes import LongSerde, StringSerde
from streamlet.state.caching_store import CachingKeyValueStore
from streamlet.state.record_cache import RecordCache
from streamlet.state.store import InMemoryKeyValueStore
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


def test_a_filter_of_a_count_gets_the_flushed_count_it_replaces_as_the_old_value() -> None:
    builder = StreamsBuilder()
    counts = builder.stream("words", "str", "str").group_by_key().count("counts")
    counts.filter(lambda k, n: n % 2 == 0).to_stream().to("even", "str", "int64")
    cache = RecordCache(1 << 20)  # a real cache: its flush reports the value each write replaces
    ctx = FakeContext(
        TaskId(0, 0), store_factory=lambda name: CachingKeyValueStore(InMemoryKeyValueStore(name), cache, name)
    )
    graph = graph_of(builder.build(), TaskId(0, 0), ctx)
    longs = LongSerde()

    def flush_and_take() -> list[tuple[bytes | None, int | None]]:
        ctx.stores["counts"].flush_cache()
        sent = [(s.key, longs.deserialize("even", s.value)) for s in ctx.sent]
        ctx.sent.clear()
        return sent

    offsets = iter(range(100))
    for key in (b"a", b"a", b"b"):
        graph.process("words", 0, next(offsets), 1, key, b"w")
    # a: 2 (its 1 was never flushed), b: 1, filtered out with no old value: no tombstone
    assert flush_and_take() == [(b"a", 2)]
    for key in (b"a", b"b", b"b"):
        graph.process("words", 0, next(offsets), 2, key, b"w")
    # a: 2 -> 3 leaves the filter (a tombstone), b: 1 -> 3 was never in it (nothing)
    assert flush_and_take() == [(b"a", None)]
