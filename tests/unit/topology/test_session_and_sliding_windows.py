"""SessionWindows, SlidingWindows and SessionWindowedSerde: Kafka's bounds checks, retention and key format."""

from __future__ import annotations

import struct

import pytest

from streamlet.errors import TopologyError
from streamlet.serdes import StringSerde
from streamlet.topology import StreamsBuilder
from streamlet.topology.session_windows import SessionWindow, SessionWindowedSerde, SessionWindows
from streamlet.topology.sliding_windows import SlidingWindows
from streamlet.topology.windows import Windowed


def test_session_windows_need_a_positive_gap_and_a_non_negative_grace() -> None:
    assert SessionWindows.of_inactivity_gap_with_no_grace(5) == SessionWindows(5, 0)
    assert SessionWindows.of_inactivity_gap_and_grace(5, 7).retention_ms == 12
    with pytest.raises(TopologyError, match="inactivity gap"):
        SessionWindows.of_inactivity_gap_with_no_grace(0)
    with pytest.raises(TopologyError, match="Grace period"):
        SessionWindows.of_inactivity_gap_and_grace(5, -1)


def test_sliding_windows_need_a_positive_difference() -> None:
    windows = SlidingWindows.of_time_difference_and_grace(10, 3)
    assert (windows.size_ms, windows.retention_ms) == (10, 23)  # retention: 2 * difference + grace
    # Kafka takes 0 when building and fails on the first record (a window's end must be after its start)
    for difference in (0, -1):
        with pytest.raises(TopologyError, match="time difference"):
            SlidingWindows.of_time_difference_with_no_grace(difference)
    with pytest.raises(TopologyError, match="Grace period"):
        SlidingWindows.of_time_difference_and_grace(1, -5)


def test_session_windowed_serde_writes_key_end_then_start() -> None:
    serde = SessionWindowedSerde(StringSerde())
    data = serde.serialize("t", Windowed("user", SessionWindow(100, 250)))
    assert data == b"user" + struct.pack(">q", 250) + struct.pack(">q", 100)
    assert serde.deserialize("t", data) == Windowed("user", SessionWindow(100, 250))
    assert serde.serialize("t", None) is None
    with pytest.raises(TypeError):
        serde.serialize("t", "user")


def test_windowed_by_takes_only_windows() -> None:
    grouped = StreamsBuilder().stream("in").group_by_key()
    with pytest.raises(TopologyError, match="SessionWindows"):
        grouped.windowed_by(10)  # type: ignore[call-overload]


def test_a_session_aggregate_needs_a_merger() -> None:
    sessions = (
        StreamsBuilder().stream("in").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5))
    )
    with pytest.raises(TopologyError, match="merger"):
        sessions.aggregate(lambda: 0, lambda k, v, a: a, None)  # type: ignore[arg-type]
