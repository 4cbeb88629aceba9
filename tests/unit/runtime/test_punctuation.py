"""Punctuation firing rules (Kafka's PunctuationQueue / PunctuationSchedule#next / StreamTask#schedule)."""

from __future__ import annotations

import pytest

from streamlet.runtime.punctuation import PunctuationType, TaskPunctuations
from streamlet.runtime.record_context import RecordContext

STREAM, WALL = PunctuationType.STREAM_TIME, PunctuationType.WALL_CLOCK_TIME


class Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _punctuations(now: int = 0) -> tuple[TaskPunctuations, RecordContext, Clock]:
    record = RecordContext()
    clock = Clock(now)
    return TaskPunctuations(record, clock), record, clock


def test_stream_time_schedules_align_to_zero_and_fire_once_per_advance() -> None:
    punctuations, _, _ = _punctuations()
    fired: list[int] = []
    punctuations.schedule("p", 10, STREAM, fired.append)
    assert not punctuations.punctuate_stream_time(-1)  # stream time unknown: no record yet
    for stream_time in (3, 9, 10, 10, 47, 49, 50):
        punctuations.punctuate_stream_time(stream_time)
    # 3 (due at 0), 10; 47 once for the missed 20, 30 and 40, the next due at 50
    assert fired == [3, 10, 47, 50]


def test_wall_clock_schedules_start_one_interval_after_scheduling() -> None:
    punctuations, _, clock = _punctuations(now=1_000)
    fired: list[int] = []
    punctuations.schedule("p", 100, WALL, fired.append)
    assert punctuations.ms_until_wall_clock_punctuation() == 100
    clock.now = 1_099
    assert not punctuations.punctuate_wall_clock_time()
    clock.now = 1_350
    assert punctuations.punctuate_wall_clock_time()
    assert fired == [1_350]
    assert punctuations.ms_until_wall_clock_punctuation() == 50  # next at 1_400, not 1_200


def test_a_punctuator_runs_with_the_punctuation_as_its_record_context() -> None:
    punctuations, record, _ = _punctuations()
    record.topic, record.partition, record.offset, record.timestamp = "in", 2, 40, 7
    seen: list[tuple[object, ...]] = []
    punctuations.schedule(
        "p", 5, STREAM, lambda t: seen.append((record.topic, record.partition, record.offset, record.timestamp, t))
    )
    punctuations.punctuate_stream_time(12)
    assert seen == [(None, -1, -1, 12, 12)]
    assert (record.topic, record.partition, record.offset, record.timestamp) == ("in", 2, 40, 7)


def test_cancel_stops_a_schedule_also_from_inside_its_punctuator() -> None:
    punctuations, _, _ = _punctuations()
    fired: list[str] = []
    cancellables = []

    def once(timestamp: int) -> None:
        fired.append("once")
        cancellables[0].cancel()

    cancellables.append(punctuations.schedule("a", 10, STREAM, once))
    other = punctuations.schedule("b", 10, STREAM, lambda t: fired.append("other"))
    punctuations.punctuate_stream_time(0)
    other.cancel()
    punctuations.punctuate_stream_time(100)
    assert fired == ["once", "other"]


def test_schedules_due_together_fire_in_java_priority_queue_order() -> None:
    punctuations, _, _ = _punctuations()
    fired: list[str] = []
    for name in "abc":
        punctuations.schedule(name, 10, STREAM, lambda t, name=name: fired.append(name))
    punctuations.punctuate_stream_time(0)
    # the heap is [a, b, c]; polling a moves c to the root, and an equal b does not displace it
    assert fired == ["a", "c", "b"]


@pytest.mark.parametrize("interval", [0, -5, 1.5])
def test_an_interval_below_one_millisecond_is_refused(interval: object) -> None:
    punctuations, _, _ = _punctuations()
    with pytest.raises(ValueError, match="minimum supported scheduling interval is 1 millisecond"):
        punctuations.schedule("p", interval, STREAM, print)  # type: ignore[arg-type]


def test_held_schedules_are_queued_in_topology_order() -> None:
    punctuations, _, _ = _punctuations()
    fired: list[str] = []
    punctuations.hold()  # as while a task's processors are created, children first
    for name in "cba":
        punctuations.schedule(name, 10, STREAM, lambda t, name=name: fired.append(name))
    assert not punctuations.punctuate_stream_time(0)  # nothing queued yet
    punctuations.release(["a", "b", "c"])
    punctuations.punctuate_stream_time(0)
    assert fired == ["a", "c", "b"]  # scheduled a, b, c (see the test above)
