"""Dropped records on the TopologyTestDriver: the processors that drop late records (time, session and sliding
windows, Faust windowed tables, stream-stream join window stores) count them per processor in the same sensor
a running worker exports, and log Kafka's WARN naming the processor, the window and the stream time.

Expected counts come from the window rules written out here, applied to the test's own input, never from
the code under test."""

from __future__ import annotations

import logging
import random
from datetime import timedelta
from typing import Any

import pytest

from streamlet import App
from streamlet.testing import TopologyTestDriver
from streamlet.topology import StreamsBuilder
from streamlet.topology.join_windows import JoinWindows
from streamlet.topology.session_windows import SessionWindows
from streamlet.topology.sliding_windows import SlidingWindows
from streamlet.topology.windows import TimeWindows

LOGGER = "streamlet.dropped_records"


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


def _late_in_time_windows(timestamps: list[int], size: int, advance: int, grace: int) -> int:
    """Kafka's rule for time windows, one count per closed window a record falls in: a window closes when
    the largest timestamp seen so far reaches its end plus grace."""
    late, observed = 0, -1
    for t in timestamps:
        observed = max(observed, t)
        start = t - t % advance
        while start > t - size and start >= 0:
            if start + size <= observed - grace:
                late += 1
            start -= advance
    return late


def _windowed_count(windows: Any) -> StreamsBuilder:
    builder = StreamsBuilder()
    builder.stream("in", key_serde="str", value_serde="str").group_by_key().windowed_by(windows).count(
        "counts", name="count-per-window"
    )
    return builder


def _pipe(builder_or_app: Any, records: list[tuple[str | None, int]]) -> TopologyTestDriver:
    driver = TopologyTestDriver(builder_or_app, {"statestore_cache_max_bytes": 0})
    source = driver.create_input_topic("in", "str", "str")
    for key, timestamp in records:
        source.pipe_input(key, "v", timestamp)
    return driver


@pytest.mark.parametrize(("size", "advance", "grace"), [(10, 10, 0), (10, 10, 5), (20, 5, 3)])
def test_late_records_of_time_windows_are_counted_per_closed_window(
    size: int, advance: int, grace: int, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(size * 100 + grace)
    timestamps = [max(0, i * 3 + rng.randint(-25, 5)) for i in range(60)]
    expected = _late_in_time_windows(timestamps, size, advance, grace)
    assert expected > 0  # the input has late records
    windows = TimeWindows.of_size_and_grace(size, grace).advance_by(advance)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with _pipe(_windowed_count(windows), [("k", t) for t in timestamps]) as driver:
            assert driver.dropped_records_by_processor() == {"count-per-window": expected}
            assert driver.dropped_records() == expected
    warnings = _warnings(caplog)
    assert 1 <= len(warnings) < expected  # at most one line per processor per 10 s
    assert warnings[0].startswith("Skipping record for expired window. processor=[count-per-window] task=[0_0]")


def test_the_warning_names_the_window_the_expiration_and_the_stream_time(caplog: pytest.LogCaptureFixture) -> None:
    windows = TimeWindows.of_size_and_grace(10, 2)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with _pipe(_windowed_count(windows), [("k", 3), ("k", 25), ("k", 7)]) as driver:
            assert driver.dropped_records() == 1
    (warning,) = _warnings(caplog)
    # [0,10) closed when stream time 25 passed 10 + 2: expiration is stream time - grace, as Kafka logs it
    assert warning == (
        "Skipping record for expired window. processor=[count-per-window] task=[0_0] topic=[in] partition=[0] "
        "offset=[2] timestamp=[7] window=[0,10) expiration=[23] streamTime=[25]"
    )


def test_null_keys_are_counted_too_with_their_own_warning(caplog: pytest.LogCaptureFixture) -> None:
    windows = TimeWindows.of_size_with_no_grace(10)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with _pipe(_windowed_count(windows), [(None, 1), ("k", 30)]) as driver:
            assert driver.dropped_records_by_processor() == {"count-per-window": 1}
    (warning,) = _warnings(caplog)
    assert warning == (
        "Skipping record due to null key or value. processor=[count-per-window] task=[0_0] topic=[in] "
        "partition=[0] offset=[0]"
    )


def test_a_late_record_of_a_session_is_counted_and_logged_with_its_session(caplog: pytest.LogCaptureFixture) -> None:
    windows = SessionWindows.of_inactivity_gap_and_grace(10, 5)
    # 100 closes every session ending before 100 - 10 - 5 = 85: a record at 20 would make the session [20,20]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with _pipe(_windowed_count(windows), [("k", 10), ("k", 100), ("k", 20), ("k", 86)]) as driver:
            assert driver.dropped_records_by_processor() == {"count-per-window": 1}
    (warning,) = _warnings(caplog)
    assert "timestamp=[20] window=[20,20] expiration=[85] streamTime=[100]" in warning


def test_a_record_whose_sliding_windows_all_closed_is_counted(caplog: pytest.LogCaptureFixture) -> None:
    windows = SlidingWindows.of_time_difference_and_grace(10, 5)
    # at stream time 100 a record at t has windows ending by t + 10: all closed once t + 10 < 100 - 5; one at
    # 97 has all its windows open (its left window [87,97] ends after 95)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with _pipe(_windowed_count(windows), [("k", 100), ("k", 84), ("k", 97)]) as driver:
            assert driver.dropped_records_by_processor() == {"count-per-window": 1}
    (warning,) = _warnings(caplog)
    assert "timestamp=[84] window=[74,84] expiration=[95] streamTime=[100]" in warning


def _faust_clicks() -> App:
    app = App("late-clicks")
    table = app.Table("clicks", key_type=str, value_type=int, default=int, on_window_close=lambda key, value: None)
    clicks = table.tumbling(60, expires=timedelta(seconds=70))  # 10 s of grace

    @app.agent(app.topic("in", key_type=str, value_serde="str"), tables=[clicks])
    async def count_clicks(stream: Any) -> None:
        async for user, _ in stream.items():
            clicks[user] += 1

    return app


def test_writes_of_a_faust_windowed_table_to_closed_windows_are_counted(caplog: pytest.LogCaptureFixture) -> None:
    timestamps = [10_000, 75_000, 59_000, 65_000, 130_000, 119_000, 121_000, 5_000]
    expected = _late_in_time_windows(timestamps, 60_000, 60_000, 10_000)
    assert expected == 3  # 59 s, 119 s and 5 s: their windows closed at 70 s and 130 s
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with _pipe(_faust_clicks(), [("u", t) for t in timestamps]) as driver:
            (node,) = driver.dropped_records_by_processor()
            assert driver.dropped_records_by_processor() == {node: expected}
    warning = _warnings(caplog)[0]
    assert f"processor=[{node}]" in warning
    assert "timestamp=[59000] window=[0,60000) expiration=[65000] streamTime=[75000]" in warning


def test_a_join_record_its_window_store_drops_is_counted_at_its_windowed_node(
    caplog: pytest.LogCaptureFixture,
) -> None:
    builder = StreamsBuilder()
    orders = builder.stream("orders", key_serde="str", value_serde="str")
    payments = builder.stream("payments", key_serde="str", value_serde="str")
    joined = orders.join(payments, lambda o, p: f"{o}|{p}", JoinWindows.of_time_difference_with_no_grace(5))
    joined.to("out", value_serde="str")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with TopologyTestDriver(builder, {"statestore_cache_max_bytes": 0}) as driver:
            order_topic = driver.create_input_topic("orders", "str", "str")
            order_topic.pipe_input("k", "o1", 1_000)
            order_topic.pipe_input("k", "o2", 200_000)  # the store's 60 s segments before 199.99 s are dropped
            order_topic.pipe_input("k", "o3", 500)  # its segment is gone: the store drops it
            order_topic.pipe_input("k", "o4", 199_999)  # out of order, but its segment is live
            # the orders' windowed node (Kafka's KStreamJoinWindow) stores them: it drops the write
            assert driver.dropped_records_by_processor() == {"KSTREAM-WINDOWED-0000000002": 1}
    (warning,) = _warnings(caplog)
    assert warning.startswith("Skipping record for expired segment. processor=[KSTREAM-WINDOWED-0000000002]")
    assert "timestamp=[500]" in warning and "streamTime=[200000]" in warning
