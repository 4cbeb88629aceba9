"""Suppress and punctuation in the live runtime (task manager, fake Kafka, real RocksDB): the suppression
buffer is logged with Kafka's format header at commit, kept by a standby, and restored by a new owner after
a crash, which then emits the window it held; punctuators run in their task and their output is produced."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path
from typing import Any

from streamlet import BufferConfig, PunctuationType, Suppressed
from streamlet.runtime.task_state import TaskState
from streamlet.serdes import StringSerde
from streamlet.state.time_ordered_buffer import TimeOrderedKeyValueBuffer
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.windows import TimeWindowedSerde, TimeWindows
from tests.unit.runtime._fakes import FakeKafka
from tests.unit.runtime._harness import CHANGELOG, IN0, INPUT, OUTPUT, PARTITIONS, T0, Harness

BUFFER_CHANGELOG = "app-final-store-changelog"


def final_counts(buffer: BufferConfig | None = None) -> Topology:
    """in --(count per key and 10 ms window, no grace, emit-final)--> out."""
    builder = StreamsBuilder()
    (
        builder.stream(INPUT, key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(10))
        .count("counts")
        .suppress(Suppressed.until_window_closes(buffer or BufferConfig.unbounded()).with_name("final"))
        .to_stream()
        .to(OUTPUT, key_serde=TimeWindowedSerde(StringSerde(), 10), value_serde="int64")
    )
    return builder.build()


def _kafka() -> FakeKafka:
    return FakeKafka({INPUT: PARTITIONS, OUTPUT: PARTITIONS, CHANGELOG: PARTITIONS, BUFFER_CHANGELOG: PARTITIONS})


def _outputs(kafka: FakeKafka) -> list[tuple[bytes | None, bytes | None, int]]:
    return [record for tp, log in sorted(kafka.logs.items()) if tp.topic == OUTPUT for record in log]


def _final(key: bytes, start: int, count: int, timestamp: int) -> tuple[bytes, bytes, int]:
    return key + struct.pack(">q", start), struct.pack(">q", count), timestamp


async def test_the_buffer_is_logged_kept_by_a_standby_and_restored_after_a_crash(tmp_path: Path) -> None:
    kafka = _kafka()
    first = Harness(kafka, tmp_path / "first", topology=final_counts())
    standby = Harness(kafka, tmp_path / "standby", name="thread-2", topology=final_counts())
    try:
        first.assign(T0)
        standby.assign(standby=(T0,))
        await first.task_manager.restore(timeout_ms=0)
        for key, timestamp in [(b"k", 1), (b"k", 2), (b"j", 5), (b"k", 12), (b"k", 15)]:
            kafka.append(IN0, key, b"click", timestamp)
        await first.poll_and_process()
        await first.task_manager.commit()
        # stream time 15 closed [0, 10): its final counts, each with its window's last timestamp
        assert _outputs(kafka) == [_final(b"j", 0, 1, 5), _final(b"k", 0, 2, 2)]
        changelog = [(tp, offset) for tp, offset in kafka.headers if tp.topic == BUFFER_CHANGELOG]
        assert changelog and all(kafka.headers[at] == [("v", b"\x03")] for at in changelog)

        await standby.task_manager.restore(timeout_ms=0)
        kept = standby.task_manager.standby[T0].state_manager._stores["final-store"].inner
        assert isinstance(kept, TimeOrderedKeyValueBuffer) and kept.num_records == 1  # k's [10, 20)

        await first.task_manager.shutdown(clean=False)  # a crash: nothing more flushed or written
    finally:
        first.close()
        standby.close()

    second = Harness(kafka, tmp_path / "second", topology=final_counts())  # no local state: restore
    try:
        second.assign(T0)
        while second.task_manager.active[T0].state is TaskState.RESTORING:
            await second.task_manager.restore(timeout_ms=0)
        kafka.append(IN0, b"x", b"click", 30)  # another key moves stream time past [10, 20)
        await second.poll_and_process()
        await second.task_manager.commit()
        assert _outputs(kafka)[2:] == [_final(b"k", 10, 2, 15)]
    finally:
        second.close()


async def test_a_buffer_with_logging_disabled_is_written_nowhere_and_lost_with_its_task(tmp_path: Path) -> None:
    kafka = _kafka()
    unlogged = final_counts(BufferConfig.unbounded().with_logging_disabled())
    first = Harness(kafka, tmp_path / "first", topology=unlogged)
    try:
        first.assign(T0)
        await first.task_manager.restore(timeout_ms=0)
        for key, timestamp in [(b"k", 1), (b"k", 2), (b"k", 12)]:
            kafka.append(IN0, key, b"click", timestamp)
        await first.poll_and_process()
        await first.task_manager.commit()
        assert _outputs(kafka) == [_final(b"k", 0, 2, 2)]  # emitted as with a logged buffer
        assert not any(tp.topic == BUFFER_CHANGELOG for tp in kafka.logs)
        assert any(tp.topic == CHANGELOG for tp in kafka.logs)  # the window store keeps its changelog
        await first.task_manager.shutdown(clean=True)
    finally:
        first.close()

    second = Harness(kafka, tmp_path / "second", topology=unlogged)
    try:
        second.assign(T0)
        while second.task_manager.active[T0].state is TaskState.RESTORING:
            await second.task_manager.restore(timeout_ms=0)
        kafka.append(IN0, b"x", b"click", 30)  # closes k's [10, 20), which only the lost buffer held
        await second.poll_and_process()
        await second.task_manager.commit()
        assert _outputs(kafka)[1:] == []
    finally:
        second.close()


def ticking() -> Topology:
    """in --(a processor forwarding ("tick", <records seen>) every 1 ms of wall-clock time)--> out."""

    def ticker(context: Any) -> Any:
        seen = [0]
        context.schedule(1, PunctuationType.WALL_CLOCK_TIME, lambda t: context.forward("tick", str(seen[0])))

        def process(key: Any, value: Any) -> None:
            seen[0] += 1

        return process

    builder = StreamsBuilder()
    builder.stream(INPUT, key_serde="str", value_serde="str").process(ticker).to(OUTPUT, "str", "str")
    return builder.build()


async def test_the_task_manager_fires_due_wall_clock_punctuators_of_running_tasks(tmp_path: Path) -> None:
    kafka = _kafka()
    harness = Harness(kafka, tmp_path, topology=ticking())
    try:
        harness.assign(T0)
        assert harness.task_manager.active[T0].state is TaskState.RUNNING  # stateless: running at once
        assert harness.task_manager.ms_until_punctuation() is None  # not before its committed stream time is read
        await harness.task_manager.initialize_task_times()
        assert harness.task_manager.ms_until_punctuation() is not None
        kafka.append(IN0, b"k", b"v", 5)
        await harness.poll_and_process()
        await asyncio.sleep(0.005)
        assert harness.task_manager.punctuate()
        await harness.collector.drain()
        [(key, value, timestamp)] = _outputs(kafka)
        assert (key, value) == (b"tick", b"1") and timestamp > 1_000_000_000_000  # wall-clock ms
        harness.task_manager.active[T0].state = TaskState.SUSPENDED
        await asyncio.sleep(0.005)
        assert not harness.task_manager.punctuate()  # only running tasks punctuate
    finally:
        harness.close()
