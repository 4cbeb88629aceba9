"""TimeWindows: build-time checks, epoch-aligned windows, and the windowed key serde."""

from __future__ import annotations

import struct

import pytest

from streamlet.errors import TopologyError
from streamlet.serdes import StringSerde
from streamlet.topology import StreamsBuilder
from streamlet.topology.windows import TimeWindow, TimeWindowedSerde, TimeWindows, Windowed


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: TimeWindows.of_size_with_no_grace(0), "size_ms.*positive"),
        (lambda: TimeWindows.of_size_with_no_grace(-5), "size_ms.*positive"),
        (lambda: TimeWindows.of_size_and_grace(10, -1), "grace_ms.*non-negative"),
        (lambda: TimeWindows.of_size_with_no_grace(10).advance_by(0), "advance_ms.*positive"),
        (lambda: TimeWindows.of_size_with_no_grace(10).advance_by(11), "less than or equal to window size"),
        (lambda: TimeWindows.of_size_with_no_grace(1.5), "integer number of milliseconds"),
    ],
)
def test_invalid_windows_fail_when_built(build, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TopologyError, match=message):
        build()


def test_windowed_by_takes_only_time_windows() -> None:
    grouped = StreamsBuilder().stream("in").group_by_key()
    with pytest.raises(TopologyError, match="TimeWindows"):
        grouped.windowed_by(10)  # type: ignore[arg-type]


def test_tumbling_windows_are_aligned_to_the_epoch() -> None:
    windows = TimeWindows.of_size_and_grace(10, 3)
    assert (windows.size_ms, windows.advance_ms, windows.grace_ms, windows.retention_ms) == (10, 10, 3, 13)
    assert windows.windows_for(0) == [TimeWindow(0, 10)]
    assert windows.windows_for(25) == [TimeWindow(20, 30)]
    assert windows.windows_for(30) == [TimeWindow(30, 40)]


def test_hopping_windows_cover_each_record_size_over_advance_times() -> None:
    windows = TimeWindows.of_size_with_no_grace(10).advance_by(5)
    assert windows.windows_for(12) == [TimeWindow(5, 15), TimeWindow(10, 20)]
    assert windows.windows_for(3) == [TimeWindow(0, 10)]  # no window starts before the epoch
    uneven = TimeWindows.of_size_with_no_grace(10).advance_by(3)
    assert uneven.windows_for(10) == [TimeWindow(3, 13), TimeWindow(6, 16), TimeWindow(9, 19)]


def test_windowed_serde_is_key_bytes_then_the_window_start() -> None:
    serde = TimeWindowedSerde(StringSerde(), 10)
    key = Windowed("k", TimeWindow(20, 30))
    data = serde.serialize("t", key)
    assert data == b"k" + struct.pack(">q", 20)
    assert serde.deserialize("t", data) == key
    assert serde.serialize("t", None) is None
    with pytest.raises(TypeError):
        serde.serialize("t", "k")
