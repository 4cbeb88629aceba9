"""The dropped-records sensor: counts per processor and reason, one WARN per processor per interval (with the
count of those not logged), the rate per task, and the thread's sensors kept across task moves."""

from __future__ import annotations

import logging

import pytest

from streamlet.runtime.dropped_records import (
    LATE,
    NULL_KEY_OR_VALUE,
    DroppedRecords,
    DroppedRecordsRates,
    DroppedRecordsSensors,
)
from streamlet.runtime.record_context import RecordContext
from streamlet.task_id import TaskId

T01, T02 = TaskId(0, 1), TaskId(0, 2)
LOGGER = "streamlet.dropped_records"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _record(offset: int, timestamp: int) -> RecordContext:
    record = RecordContext()
    record.topic, record.partition, record.offset, record.timestamp = "clicks", 2, offset, timestamp
    return record


def test_counts_per_processor_and_reason() -> None:
    sensor = DroppedRecords(T01)
    sensor.record("AGG", LATE)
    sensor.record("AGG", LATE)
    sensor.record("AGG", NULL_KEY_OR_VALUE)
    sensor.record("JOIN", NULL_KEY_OR_VALUE)
    assert sensor.counts == {("AGG", LATE): 2, ("AGG", NULL_KEY_OR_VALUE): 1, ("JOIN", NULL_KEY_OR_VALUE): 1}
    assert sensor.by_processor() == {"AGG": 3, "JOIN": 1}
    assert sensor.total == 4


def test_a_late_record_is_logged_in_kafkas_words_with_processor_window_and_stream_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sensor = DroppedRecords(T01, clock=Clock())
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        sensor.late("AGG", _record(17, 4_000), 0, 10_000, 12_000, 14_000)
    (message,) = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert message == (
        "Skipping record for expired window. processor=[AGG] task=[0_1] topic=[clicks] partition=[2] offset=[17] "
        "timestamp=[4000] window=[0,10000) expiration=[12000] streamTime=[14000]"
    )
    assert sensor.counts == {("AGG", LATE): 1}


def test_session_windows_are_logged_closed_at_both_ends(caplog: pytest.LogCaptureFixture) -> None:
    sensor = DroppedRecords(T01, clock=Clock())
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        sensor.late("SESSION", _record(1, 20), 10, 20, 30, 50, inclusive_end=True)
    assert "window=[10,20] expiration=[30] streamTime=[50]" in caplog.records[0].getMessage()


def test_each_processor_warns_at_most_once_per_interval_and_then_says_how_many_it_did_not_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    sensor = DroppedRecords(T01, clock=clock, warn_interval_s=10.0)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        for offset in range(5):  # one line, four not logged
            sensor.late("AGG", _record(offset, 1), 0, 10, 20, 30)
        sensor.null_key_or_value("OTHER", _record(5, 1))  # another processor has its own interval
        clock.now += 9.9
        sensor.late("AGG", _record(6, 1), 0, 10, 20, 30)  # still within the interval: not logged
        clock.now += 0.2
        sensor.late("AGG", _record(7, 1), 0, 10, 20, 30)
        clock.now += 1.0
        sensor.late("AGG", _record(8, 1), 0, 10, 20, 30)
    messages = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(messages) == 3
    assert "offset=[0]" in messages[0] and "more records" not in messages[0]
    assert messages[1].startswith("Skipping record due to null key or value. processor=[OTHER] task=[0_1]")
    assert "offset=[7]" in messages[2]
    assert messages[2].endswith("(and 5 more records skipped by this processor in the last 10 s, not logged)")
    assert sensor.counts == {("AGG", LATE): 8, ("OTHER", NULL_KEY_OR_VALUE): 1}  # every one counted


def test_the_rate_is_over_the_samples_of_the_last_window() -> None:
    rates = DroppedRecordsRates(started=100.0, window_s=30.0)
    assert rates.rates(110.0, {T01: 20}) == {T01: 2.0}  # since the client started
    assert rates.rates(120.0, {T01: 40, T02: 5}) == {T01: 2.0, T02: 0.25}
    # from the newest sample at or before 140 - 30 (the one at 110; the start fell off): 20 and 5 in 30 s
    assert rates.rates(140.0, {T01: 40, T02: 5}) == {T01: 0.667, T02: 0.167}
    assert rates.rates(140.0, {}) == {}


def test_a_threads_sensors_outlive_its_tasks() -> None:
    sensors = DroppedRecordsSensors()
    sensors.task(T01).record("AGG", LATE)
    again = sensors.task(T01)  # the task came back: it counts on
    again.record("AGG", LATE)
    sensors.task(T02)
    assert [(s.task_id, s.total) for s in sensors] == [(T01, 2), (T02, 0)]
