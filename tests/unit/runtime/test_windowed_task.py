"""A windowed count in the live runtime (task manager, fake Kafka, real RocksDB): the changelog holds Kafka's
windowed keys and plain values stamped with the aggregate's timestamp, and a new owner restores from it."""

from __future__ import annotations

import struct
from pathlib import Path

from streamlet.runtime.task_state import TaskState
from streamlet.state.window_store import RocksDBWindowStore
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.windows import TimeWindows
from tests.unit.runtime._fakes import FakeKafka
from tests.unit.runtime._harness import CHANGELOG0, IN0, OUTPUT, T0, Harness, new_kafka


def windowed_counts() -> Topology:
    """in --(count per key and 10 ms window, grace 5)--> out; the store is `counts`, as in the harness."""
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10, 5))
        .count("counts")
        .to_stream()
        .to(OUTPUT, value_serde="int64")
    )
    return builder.build()


def window_key(key: bytes, start: int) -> bytes:
    return key + struct.pack(">q", start) + struct.pack(">i", 0)


async def test_windowed_counts_are_logged_in_kafkas_format_and_restored(tmp_path: Path) -> None:
    kafka: FakeKafka = new_kafka()
    first = Harness(kafka, tmp_path / "first", topology=windowed_counts())
    try:
        first.assign(T0)
        await first.task_manager.restore(timeout_ms=0)
        for timestamp in (3, 12, 7, 16, 2):  # 2 is late: stream time 16 closed [0, 10) (10 <= 16 - 5)
            kafka.append(IN0, b"k", b"v", timestamp)
        await first.poll_and_process()
        await first.task_manager.commit()
        state = first.task_manager.active[T0].state_manager
        assert state is not None and isinstance(state._stores["counts"].inner, RocksDBWindowStore)
        assert kafka.logs[CHANGELOG0] == [
            (window_key(b"k", 0), struct.pack(">q", 2), 7),  # the cache kept one update per window
            (window_key(b"k", 10), struct.pack(">q", 2), 16),
        ]
        await first.task_manager.shutdown(clean=False)
    finally:
        first.close()

    second = Harness(kafka, tmp_path / "second", topology=windowed_counts())  # no local state: restore
    try:
        second.assign(T0)
        while second.task_manager.active[T0].state is TaskState.RESTORING:
            await second.task_manager.restore(timeout_ms=0)
        kafka.append(IN0, b"k", b"v", 18)
        await second.poll_and_process()
        await second.task_manager.commit()
        out = [
            (key, value, ts) for key, value, ts in kafka.logs.get(next(tp for tp in kafka.logs if tp.topic == OUTPUT))
        ]
        assert out[-1] == (b"k" + struct.pack(">q", 10), struct.pack(">q", 3), 18)  # restored 2, plus one
    finally:
        second.close()
