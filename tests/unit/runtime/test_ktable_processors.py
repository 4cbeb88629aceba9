"""A source table behind a real record cache: what is forwarded when the cache flushes, with which timestamps.

(On Kafka's TopologyTestDriver caches flush after every record, so the oracle cannot see a flush that covers
several records; the runtime's commits do.)
"""

from __future__ import annotations

from typing import Any

from streamlet.runtime.processor_graph import build_task_graph
from streamlet.runtime.topic_names import TopicNames
from streamlet.state.caching_store import CachingKeyValueStore
from streamlet.state.record_cache import RecordCache
from streamlet.state.store import InMemoryKeyValueStore
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder
from tests.unit.runtime._support import FakeContext


def test_a_flush_forwards_each_key_once_with_the_timestamp_of_its_last_update_or_delete() -> None:
    builder = StreamsBuilder()
    builder.table("t", "str", "str", "t-store").to_stream().to("out", "str", "str")
    cache = RecordCache(1 << 20)
    stores: dict[str, Any] = {}

    def caching_store(name: str) -> CachingKeyValueStore:
        return CachingKeyValueStore(InMemoryKeyValueStore(name), cache, name)

    ctx = FakeContext(TaskId(0, 0), store_factory=caching_store, stores=stores)
    graph = build_task_graph(TopicNames(builder.build(), "app"), TaskId(0, 0), ctx)
    steps = [("a", "1", 10), ("b", "2", 11), ("a", None, 12), ("c", "3", 13), ("c", None, 14), ("b", "4", 15)]
    for offset, (key, value, timestamp) in enumerate(steps):
        graph.process("t", 0, offset, timestamp, key.encode(), None if value is None else value.encode())
    assert ctx.sent == []  # everything waits in the cache
    stores["t-store"].flush_cache()
    # "a" was never flushed: its delete is not emitted; "c" was inserted and deleted in the cache: nothing
    assert [(s.key, s.value, s.timestamp) for s in ctx.sent] == [(b"b", b"4", 15)]

    ctx.sent.clear()
    graph.process("t", 0, 6, 20, b"b", None)
    graph.process("t", 0, 7, 30, b"d", b"5")  # the record being processed when the cache flushes
    stores["t-store"].flush_cache()
    # the delete keeps its own timestamp, not the flushing record's
    assert [(s.key, s.value, s.timestamp) for s in ctx.sent] == [(b"b", None, 20), (b"d", b"5", 30)]
