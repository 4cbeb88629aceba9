"""JoinWindows and StreamJoined: Kafka's bounds, validation and builders."""

from __future__ import annotations

import pytest

from streamlet.errors import TopologyError
from streamlet.serdes import LongSerde, StringSerde
from streamlet.topology.join_windows import JoinWindows, StreamJoined


def test_a_time_difference_sets_both_directions_and_the_retention() -> None:
    windows = JoinWindows.of_time_difference_and_grace(300_000, 10_000)
    assert (windows.before_ms, windows.after_ms, windows.grace_ms) == (300_000, 300_000, 10_000)
    assert windows.size_ms == 600_000
    assert windows.retention_ms == 610_000  # each side's store keeps records for size + grace
    assert JoinWindows.of_time_difference_with_no_grace(5).grace_ms == 0


def test_before_and_after_make_an_asymmetric_window_that_may_not_be_negative() -> None:
    windows = JoinWindows.of_time_difference_with_no_grace(10).before(-5).after(20)
    assert (windows.before_ms, windows.after_ms, windows.size_ms) == (-5, 20, 15)
    assert str(windows) == "JoinWindows{beforeMs=-5, afterMs=20, graceMs=0}"
    with pytest.raises(TopologyError, match="must not be negative"):
        JoinWindows.of_time_difference_with_no_grace(10).before(-11)
    with pytest.raises(TopologyError, match="non-negative"):
        JoinWindows.of_time_difference_with_no_grace(-1)
    with pytest.raises(TopologyError, match="non-negative"):
        JoinWindows.of_time_difference_and_grace(1, -1)
    with pytest.raises(TopologyError, match="milliseconds"):
        JoinWindows.of_time_difference_with_no_grace(1.5)  # type: ignore[arg-type]


def test_stream_joined_resolves_serdes_and_keeps_names() -> None:
    joined = StreamJoined.with_("str", "int64", None).with_name("pay").with_store_name("paid")
    assert isinstance(joined.key_serde, StringSerde) and isinstance(joined.value_serde, LongSerde)
    assert joined.other_value_serde is None
    assert (joined.name, joined.store_name) == ("pay", "paid")
    assert StreamJoined.as_("s").with_other_value_serde("str").store_name == "s"
    with pytest.raises(TopologyError, match="StreamJoined"):
        StreamJoined.with_("no-such-serde")
