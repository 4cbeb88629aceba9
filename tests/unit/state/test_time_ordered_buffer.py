"""The suppression buffer: time order, prior values, Kafka's changelog layout, and restoration from it.

Byte layouts are written out here from Kafka's `BufferValue`/`ProcessorRecordContext` serializers; the
semantics oracle (tests/oracle/semantics) checks whole changelogs against Kafka Streams itself.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiokafka.structs import TopicPartition

from streamlet.errors import StateStoreError
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.state.time_ordered_buffer import BufferedContext, BufferValue, TimeOrderedKeyValueBuffer
from streamlet.task_id import TaskId

CONTEXT = BufferedContext(timestamp=5, offset=7, topic="in", partition=0)
#: Kafka's size estimate of CONTEXT: timestamp and offset (8 + 8), topic chars (2), partition (4)
CONTEXT_SIZE = 22


@dataclass
class Logged:
    key: bytes
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] | None
    offset: int = 0


def _buffer(log: list[Logged] | None = None) -> TimeOrderedKeyValueBuffer:
    def sink(key: bytes, value: bytes | None) -> None:
        assert log is not None
        log.append(Logged(key, value, None if value is None else (("v", b"\x03"),), len(log)))

    return TimeOrderedKeyValueBuffer("buffer", sink if log is not None else None)


def _drain(buffer: TimeOrderedKeyValueBuffer) -> list[tuple[bytes, bytes | None, int]]:
    out: list[tuple[bytes, bytes | None, int]] = []
    buffer.evict_while(lambda: True, lambda key, value: out.append((key, value.new, value.context.timestamp)))
    return out


def test_eviction_follows_buffer_time_then_key_and_an_update_keeps_its_place() -> None:
    buffer = _buffer()
    buffer.put(20, b"b", b"1", None, CONTEXT)
    buffer.put(10, b"z", b"2", None, CONTEXT)
    buffer.put(20, b"a", b"3", None, CONTEXT)
    buffer.put(99, b"z", b"4", b"2", CONTEXT)  # already buffered at 10: stays there, with the newer value
    assert buffer.min_timestamp == 10 and buffer.num_records == 3
    emitted: list[bytes] = []
    buffer.evict_while(lambda: buffer.min_timestamp <= 20, lambda key, value: emitted.append(key + value.new))
    assert emitted == [b"z4", b"a3", b"b1"]
    assert buffer.num_records == 0 and buffer.buffer_size == 0 and buffer.min_timestamp == (1 << 63) - 1


def test_the_prior_value_is_the_old_value_of_the_first_buffered_update() -> None:
    buffer = _buffer()
    buffer.put(1, b"k", b"2", b"1", CONTEXT)
    buffer.put(1, b"k", b"3", b"2", CONTEXT)
    evicted: list[BufferValue] = []
    buffer.evict_while(lambda: True, lambda key, value: evicted.append(value))
    assert evicted == [BufferValue(b"1", b"2", b"3", CONTEXT)]


def test_sizes_follow_kafkas_estimate() -> None:
    buffer = _buffer()
    buffer.put(1, b"key", b"new", None, CONTEXT)
    assert buffer.buffer_size == 8 + 3 + 3 + CONTEXT_SIZE
    buffer.put(1, b"key", b"newer", b"new", CONTEXT)  # prior None, old "new" (counted), new "newer"
    assert buffer.buffer_size == 8 + 3 + (3 + 5) + CONTEXT_SIZE
    buffer.put(2, b"j", b"x", b"o", CONTEXT)  # old equal to prior: counted once
    assert buffer.buffer_size == 8 + 3 + (3 + 5) + CONTEXT_SIZE + 8 + 1 + (1 + 1) + CONTEXT_SIZE


def test_changelog_values_have_kafkas_version_3_layout() -> None:
    context = struct.pack(">qqi", 5, 7, 2) + b"in" + struct.pack(">ii", 0, 0)
    assert BufferValue(None, None, b"\x01", CONTEXT).serialize() == context + struct.pack(">ii", -1, -1) + (
        struct.pack(">i", 1) + b"\x01"
    )
    # an old value equal to the prior one is written once, the old one as the -2 sentinel
    assert BufferValue(b"ab", b"ab", None, CONTEXT).serialize() == context + struct.pack(">i", 2) + b"ab" + (
        struct.pack(">ii", -2, -1)
    )
    log: list[Logged] = []
    buffer = _buffer(log)
    buffer.put(10, b"k", b"\x01", None, CONTEXT)
    buffer.flush_buffer()
    assert log == [
        Logged(b"k", BufferValue(None, None, b"\x01", CONTEXT).serialize() + struct.pack(">q", 10), (("v", b"\x03"),))
    ]


def test_a_flush_logs_each_touched_key_once_and_an_evicted_one_as_a_tombstone() -> None:
    log: list[Logged] = []
    buffer = _buffer(log)
    buffer.put(1, b"a", b"1", None, CONTEXT)
    buffer.put(1, b"a", b"2", b"1", CONTEXT)
    buffer.flush_buffer()
    assert [r.key for r in log] == [b"a"]
    buffer.flush_buffer()  # nothing touched since
    assert len(log) == 1
    _drain(buffer)
    buffer.flush_buffer()
    assert (log[-1].key, log[-1].value, log[-1].headers) == (b"a", None, None)


def test_restoring_the_changelog_rebuilds_the_buffer() -> None:
    log: list[Logged] = []
    buffer = _buffer(log)
    for i, key in enumerate([b"c", b"a", b"b", b"d"]):
        buffer.put(10 * (i % 2), key, bytes([i]), None if i < 2 else b"old", BufferedContext(i, i, "in", 0))
    buffer.put(50, b"a", b"\x09", b"\x01", BufferedContext(9, 9, "in", 0))
    buffer.flush_buffer()
    buffer.evict_while(lambda: buffer.min_timestamp <= 0, lambda key, value: None)  # c and b leave
    buffer.flush_buffer()

    restored = _buffer()
    restored.apply_changelog_records(log)
    assert (restored.num_records, restored.buffer_size, restored.min_timestamp) == (
        buffer.num_records,
        buffer.buffer_size,
        buffer.min_timestamp,
    )
    assert _drain(restored) == _drain(buffer) == [(b"a", b"\x09", 9), (b"d", b"\x03", 3)]


def test_a_changelog_record_of_another_format_version_is_refused() -> None:
    value = BufferValue(None, None, b"x", CONTEXT).serialize() + struct.pack(">q", 1)
    with pytest.raises(StateStoreError, match="version b'\\\\x02'"):
        _buffer().apply_changelog_records([Logged(b"k", value, (("v", b"\x02"),))])


def test_the_state_manager_logs_buffers_at_commit_and_restores_them_from_the_start(tmp_path: Path) -> None:
    tp = TopicPartition("app-final-store-changelog", 0)
    log: list[Logged] = []
    state = ProcessorStateManager(TaskId(0, 0), tmp_path, {"final-store": tp})
    buffer = state.register_buffer(TimeOrderedKeyValueBuffer("final-store", _buffer(log)._sink))
    buffer.put(3, b"k", b"v", None, CONTEXT)
    assert state.changelog_offsets() == {tp: 0}  # in memory: always restored from the changelog's start
    state.flush_caches()
    assert [r.key for r in log] == [b"k"]
    state.close(clean=True)
    assert buffer.num_records == 0

    again = ProcessorStateManager(TaskId(0, 0), tmp_path, {"final-store": tp})
    restored = again.register_buffer(TimeOrderedKeyValueBuffer("final-store"))
    assert again.changelog_offsets() == {tp: 0}
    again.restore_records(tp, log)
    assert _drain(restored) == [(b"k", b"v", 5)]
    again.close(clean=True)
