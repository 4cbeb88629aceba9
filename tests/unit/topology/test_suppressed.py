"""`KTable.suppress()`: its settings, the DSL's checks and names, and what a user sees in the test driver.

Record-for-record semantics are checked against Kafka Streams in tests/oracle/semantics.
"""

from __future__ import annotations

import pytest

from streamlet.errors import StreamsFailure, TopologyError
from streamlet.serdes import StringSerde
from streamlet.testing import TopologyTestDriver
from streamlet.topology import StreamsBuilder
from streamlet.topology.suppressed import UNBOUNDED, BufferConfig, Suppressed
from streamlet.topology.windows import TimeWindow, TimeWindowedSerde, TimeWindows, Windowed


def test_buffer_configs_are_kafkas() -> None:
    assert BufferConfig.unbounded() == BufferConfig(UNBOUNDED, UNBOUNDED, "shut_down")
    assert BufferConfig.max_records(3) == BufferConfig(3, UNBOUNDED, "emit")
    assert BufferConfig.max_bytes(100).shut_down_when_full() == BufferConfig(UNBOUNDED, 100, "shut_down")
    assert BufferConfig.unbounded().with_max_records(2).emit_early_when_full().when_full == "emit"
    with pytest.raises(TopologyError, match="max_records must be a non-negative integer"):
        BufferConfig.max_records(-1)


def test_logging_disabled_keeps_the_rest_of_the_config_and_is_kept_by_it() -> None:
    unlogged = BufferConfig.max_records(3).with_logging_disabled()
    assert unlogged == BufferConfig(3, UNBOUNDED, "emit", logging_enabled=False)
    assert not unlogged.shut_down_when_full().with_max_bytes(10).logging_enabled  # as Kafka's logConfig() is kept


def test_a_buffer_without_logging_has_no_changelog_and_the_same_description() -> None:
    def build(buffer: BufferConfig) -> tuple[dict[str, str], tuple[str, ...], str]:
        builder = StreamsBuilder()
        (
            builder.stream("in", key_serde="str", value_serde="str")
            .group_by_key()
            .windowed_by(TimeWindows.of_size_with_no_grace(10))
            .count("counts")
            .suppress(Suppressed.until_window_closes(buffer).with_name("final"))
        )
        topology = builder.build()
        [sub] = topology.subtopologies
        return sub.changelog_topics(), sub.unlogged_store_names, str(topology.describe())

    logged, logged_local, described = build(BufferConfig.unbounded())
    unlogged, unlogged_local, described_unlogged = build(BufferConfig.unbounded().with_logging_disabled())
    assert logged == {"counts": "counts-changelog", "final-store": "final-store-changelog"} and logged_local == ()
    assert unlogged == {"counts": "counts-changelog"} and unlogged_local == ("final-store",)
    assert described_unlogged == described


def test_until_window_closes_needs_a_strict_buffer() -> None:
    with pytest.raises(TopologyError, match="strict buffer config"):
        Suppressed.until_window_closes(BufferConfig.max_records(10))
    assert Suppressed.until_window_closes(BufferConfig.max_records(10).shut_down_when_full()).window_close


def _windowed_counts(builder: StreamsBuilder, grace: int = 5):  # noqa: ANN202
    stream = builder.stream("in", key_serde="str", value_serde="str")
    return stream.group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, grace)).count()


def test_until_window_closes_is_only_for_windowed_tables() -> None:
    builder = StreamsBuilder()
    counts = builder.stream("in", key_serde="str", value_serde="str").group_by_key().count()
    with pytest.raises(TopologyError, match="only defined for windowed computations"):
        counts.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    counts.suppress(Suppressed.until_time_limit(10, BufferConfig.unbounded()))  # fine on any table


def test_names_of_the_suppress_node_and_its_buffer() -> None:
    builder = StreamsBuilder()
    counts = _windowed_counts(builder)
    counts.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    counts.suppress(Suppressed.until_time_limit(10, BufferConfig.unbounded()).with_name("limited"))
    topology = builder.build()
    assert topology.node("KTABLE-SUPPRESS-0000000003").stores == ("KTABLE-SUPPRESS-STATE-STORE-0000000004",)
    assert topology.node("limited").stores == ("limited-store",)
    assert topology.stores["limited-store"].buffer and topology.stores["limited-store"].logged
    assert topology.changelog_topics()["limited-store"] == "limited-store-changelog"


def test_each_window_is_emitted_once_when_stream_time_passes_its_end_plus_grace() -> None:
    builder = StreamsBuilder()
    _windowed_counts(builder).suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to(
        "out", key_serde=TimeWindowedSerde(StringSerde(), 10), value_serde="int64"
    )
    with TopologyTestDriver(builder) as driver:
        clicks = driver.create_input_topic("in", "str", "str")
        out = driver.create_output_topic("out", TimeWindowedSerde(StringSerde(), 10), "int64")
        for key, timestamp in [("a", 1), ("a", 8), ("b", 12), ("a", 14)]:
            clicks.pipe_input(key, "click", timestamp)
        assert out.read_records_to_list() == []  # [0, 10) closes at stream time 15
        clicks.pipe_input("b", "click", 15)
        assert out.read_key_values_to_list() == [(Windowed("a", TimeWindow(0, 10)), 2)]
        clicks.pipe_input("a", "click", 40)
        # windows closing together leave in key order (of the serialized windowed key)
        assert out.read_key_values_to_list() == [
            (Windowed("a", TimeWindow(10, 20)), 1),
            (Windowed("b", TimeWindow(10, 20)), 2),
        ]


def test_a_strict_buffer_that_fills_up_stops_the_application() -> None:
    builder = StreamsBuilder()
    strict = BufferConfig.max_records(1).shut_down_when_full()
    _windowed_counts(builder).suppress(Suppressed.until_window_closes(strict)).to_stream().to("out")
    with TopologyTestDriver(builder) as driver:
        clicks = driver.create_input_topic("in", "str", "str")
        clicks.pipe_input("a", "click", 1)
        with pytest.raises(
            StreamsFailure,
            match=r"KTABLE-SUPPRESS-0000000003 buffer exceeded its max capacity. "
            r"Currently \[2/1\] records",
        ):
            clicks.pipe_input("b", "click", 2)


def _buffer_changelog_config(buffer: BufferConfig) -> tuple[dict[str, str], str]:
    """The buffer changelog's topic configs, and the topology's description."""
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(10))
        .count("counts")
        .suppress(Suppressed.until_window_closes(buffer).with_name("final"))
    )
    topology = builder.build()
    topics = {t.name: dict(t.config) for t in topology.internal_topics()}
    assert topics["counts-changelog"]["cleanup.policy"] == "compact,delete"  # the window store's: untouched
    return topics["final-store-changelog"], str(topology.describe())


def test_logging_enabled_configs_go_over_kafkas_changelog_defaults() -> None:
    default, described = _buffer_changelog_config(BufferConfig.unbounded())
    assert default == {"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}
    config = {"min.compaction.lag.ms": "100", "cleanup.policy": "compact,delete", "retention.ms": "3600000"}
    given, described_given = _buffer_changelog_config(BufferConfig.unbounded().with_logging_enabled(config))
    assert described_given == described  # as in Kafka, describe() does not show topic configs
    assert given == {
        "cleanup.policy": "compact,delete",  # the user's wins, as in Kafka's UnwindowedUnversionedChangelogTopicConfig
        "message.timestamp.type": "CreateTime",
        "min.compaction.lag.ms": "100",
        "retention.ms": "3600000",
    }


def test_logging_enabled_replaces_earlier_configs_and_re_enables_logging() -> None:
    first = BufferConfig.max_records(3).with_logging_enabled({"retention.ms": "1"})
    again = first.with_logging_disabled().with_logging_enabled({"segment.ms": "60000"})
    assert again == BufferConfig(3, UNBOUNDED, "emit", log_config=(("segment.ms", "60000"),))
    assert first.with_logging_disabled().log_config == ()
    with pytest.raises(TopologyError, match="strings"):
        BufferConfig.unbounded().with_logging_enabled({"retention.ms": 1})  # type: ignore[dict-item]
    with pytest.raises(TopologyError, match="mapping"):
        BufferConfig.unbounded().with_logging_enabled([("retention.ms", "1")])  # type: ignore[arg-type]
