"""Timestamped stores: values are timestamp + value in the store, plain values with timestamps in the changelog."""

from __future__ import annotations

import struct
from pathlib import Path

from aiokafka.structs import TopicPartition

from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.task_creator import changelog_sink
from streamlet.state import timestamped
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.task_id import TaskId
from tests.support.changelog import Record

TP = TopicPartition("app-counts-changelog", 0)


def test_encoding_is_kafkas_value_and_timestamp_layout() -> None:
    raw = timestamped.encode(1_700_000_000_123, b"v")
    assert raw == struct.pack(">q", 1_700_000_000_123) + b"v"
    assert timestamped.timestamp_of(raw) == 1_700_000_000_123
    assert timestamped.value_of(raw) == b"v"


def test_restore_rebuilds_values_from_record_value_and_timestamp(tmp_path: Path) -> None:
    psm = ProcessorStateManager(TaskId(0, 0), tmp_path, {"counts": TP})
    store = psm.register_store("counts", timestamped=True)
    psm.restore_records(TP, [Record(0, b"a", b"1", 10), Record(1, b"b", b"2", 20), Record(2, b"a", b"3", 30)])
    assert store.get(b"a") == struct.pack(">q", 30) + b"3"
    assert store.get(b"b") == struct.pack(">q", 20) + b"2"
    psm.restore_records(TP, [Record(3, b"b", None, 40)])
    assert store.get(b"b") is None
    psm.close(clean=False)


def testchangelog_sink_strips_the_timestamp_into_the_record() -> None:
    sent: list[tuple[object, ...]] = []
    context = RecordContext()
    context.timestamp = 99

    def send(*args: object) -> None:
        sent.append(args)

    sink = changelog_sink(send, TP, context, stamped=True)
    sink(b"k", timestamped.encode(42, b"v"))
    sink(b"k", None)
    plain = changelog_sink(send, TP, context)
    plain(b"k", b"raw")
    assert sent == [
        (TP.topic, b"k", b"v", 42, 0),
        (TP.topic, b"k", None, 99, 0),
        (TP.topic, b"k", b"raw", 99, 0),
    ]
