"""The stream-stream join processors on their own (fake task context, real RocksDB stores): the scan for
unmatched records throttled by wall-clock time, the shared store's bytes, results at the later timestamp,
dropped records. Everything else is checked record for record against Kafka Streams in tests/oracle/semantics."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streamlet.runtime.processor_graph import TaskProcessorGraph, build_task_graph
from streamlet.runtime.punctuation import TaskPunctuations
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.topic_names import TopicNames
from streamlet.state.rocksdb_store import RocksDBStore
from streamlet.state.window_store import RocksDBWindowStore
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.join_windows import JoinWindows
from tests.unit.runtime._support import FakeContext

SHARED = "KSTREAM-OUTERSHARED-0000000004-store"


def _left_join() -> Topology:
    builder = StreamsBuilder()
    orders = builder.stream("orders", "str", "str")
    payments = builder.stream("payments", "str", "str")
    orders.left_join(payments, lambda o, p: f"{o}|{p}", JoinWindows.of_time_difference_with_no_grace(10)).to(
        "out", "str", "str"
    )
    return builder.build()


class _Task:
    """The join's one task, with a wall clock the test moves."""

    def __init__(self, tmp_path: Path, emit_interval_ms: int) -> None:
        topology = _left_join()
        self.now = 0
        self.offset = 0
        stores: dict[str, Any] = {}
        for name, spec in topology.stores.items():
            path = tmp_path / name
            if spec.windows is not None:
                stores[name] = RocksDBWindowStore(
                    name, path, retention_ms=spec.windows.retention_ms, retain_duplicates=True
                )
            else:
                stores[name] = RocksDBStore(name, path)
        self.stores = stores
        self.context = FakeContext(TaskId(0, 0), stores=stores)
        record = RecordContext()
        punctuations = TaskPunctuations(record, lambda: self.now)
        names = TopicNames(topology, "app")
        self.graph: TaskProcessorGraph = build_task_graph(
            names, TaskId(0, 0), self.context, record, None, punctuations, join_emit_interval_ms=emit_interval_ms
        )

    def pipe(self, topic: str, key: str | None, value: str | None, timestamp: int) -> None:
        self.offset += 1
        k = None if key is None else key.encode()
        v = None if value is None else value.encode()
        self.graph.process(topic, 0, self.offset, timestamp, k, v)

    def out(self) -> list[tuple[str | None, str, int]]:
        sent = [s for s in self.context.sent if s.topic == "out"]
        self.context.sent.clear()
        return [(None if s.key is None else s.key.decode(), (s.value or b"").decode(), s.timestamp) for s in sent]

    def close(self) -> None:
        for store in self.stores.values():
            store.close()


@pytest.fixture
def task(tmp_path: Path) -> Iterator[_Task]:
    t = _Task(tmp_path, emit_interval_ms=1000)
    yield t
    t.close()


def test_unmatched_records_wait_for_their_window_and_the_scan_runs_once_per_interval(task: _Task) -> None:
    task.pipe("orders", "k1", "o1", 10)  # scans the (empty) store at wall-clock 0: the next scan is due at 1000
    task.pipe("orders", "k2", "o2", 30)  # o1's window closed at 20, but the scan waits for the wall clock
    task.now = 999
    task.pipe("orders", "k3", "o3", 31)
    assert task.out() == []
    task.now = 1000
    task.pipe("orders", "k4", "o4", 45)  # o1 and o2 are due (20, 40 < 45); o3's window is open until 41+
    assert task.out() == [("k1", "o1|None", 10), ("k2", "o2|None", 30), ("k3", "o3|None", 31)]
    task.now = 2500
    task.pipe("payments", "k4", "p4", 47)  # a partner: o4 no longer waits, joined at the later timestamp
    assert task.out() == [("k4", "o4|p4", 47)]
    task.pipe("orders", "k5", "o5", 100)
    assert task.out() == []  # the scan ran at 2500 and found nothing due: o4 was removed


def test_a_waiting_record_is_kept_in_kafkas_list_format(task: _Task) -> None:
    task.pipe("orders", "k1", "o1", 10)
    task.pipe("orders", "k1", "o1b", 10)  # same key and timestamp: one key, a list of two values
    shared = task.stores[SHARED]
    key = (10).to_bytes(8, "big") + b"\x01" + b"k1"  # timestamp, left side, key
    # ListSerializer's variable-size strategy, then the count, then each length-prefixed left value
    values = b"\x01" + (2).to_bytes(4, "big") + (3).to_bytes(4, "big") + b"\x01o1" + (4).to_bytes(4, "big") + b"\x01o1b"
    assert list(shared.all()) == [(key, values)]


def test_null_keys_and_values_are_dropped_but_a_null_key_of_the_left_side_is_emitted_at_once(task: _Task) -> None:
    task.pipe("orders", None, "o1", 5)
    assert task.out() == [(None, "o1|None", 5)]
    task.pipe("payments", None, "p1", 6)
    task.pipe("payments", "k", None, 7)
    task.pipe("orders", "k", None, 8)
    assert task.out() == []
    assert task.graph.dropped_records == 3
