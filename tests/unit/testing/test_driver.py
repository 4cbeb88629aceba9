"""The in-process TopologyTestDriver: Kafka's driver loop on the runtime's processor graphs and RocksDB stores.

Expected outputs here are worked out by hand from Kafka Streams' rules; `tests/oracle/semantics` checks the
same behaviour against Kafka Streams' own driver.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from streamlet.app import App
from streamlet.serdes import StringSerde
from streamlet.testing import TestRecord, TopologyTestDriver
from streamlet.topology import StreamsBuilder
from streamlet.topology.session_windows import SessionWindow, SessionWindowedSerde, SessionWindows
from streamlet.topology.windows import TimeWindow, TimeWindows, Windowed


def _wordcount(builder: StreamsBuilder) -> None:
    (
        builder.stream("in", key_serde="str", value_serde="str")
        .flat_map_values(str.split)
        .group_by(lambda _k, word: word, key_serde="str", value_serde="str")
        .count("counts")
        .to_stream()
        .to("out", key_serde="str", value_serde="int64")
    )


def test_wordcount_emits_after_every_repartitioned_record_with_aggregate_timestamps() -> None:
    builder = StreamsBuilder()
    _wordcount(builder)
    with TopologyTestDriver(builder) as driver:
        lines = driver.create_input_topic("in", "str", "str")
        out = driver.create_output_topic("out", "str", "int64")
        lines.pipe_input(None, "a b a", 100)
        lines.pipe_input(None, "b", 40)  # older than b's aggregate: the update keeps timestamp 100
        assert out.read_records_to_list() == [
            TestRecord("a", 1, 100),
            TestRecord("b", 1, 100),
            TestRecord("a", 2, 100),
            TestRecord("b", 2, 100),
        ]
        assert out.is_empty()
        assert dict(driver.get_key_value_store("counts").all()) == {"a": 2, "b": 2}
        assert driver.get_timestamped_key_value_store("counts").get("b") == (2, 100)
        # internal topics are outputs too, with Kafka's names
        repartition = driver.create_output_topic("topology-test-driver-counts-repartition", "str", "str")
        assert [r.timestamp for r in repartition.read_records_to_list()] == [100, 100, 100, 40]
        changelog = driver.create_output_topic("topology-test-driver-counts-changelog", "str", "int64")
        assert changelog.read_records_to_list()[-1] == TestRecord("b", 2, 100)


def test_caching_dedups_updates_of_one_record_per_key() -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde="str", value_serde="str")
        .flat_map_values(str.split)
        .group_by_key()
        .count("c")
        .to_stream()
        .to("out", value_serde="int64")
    )
    with TopologyTestDriver(builder) as driver:
        driver.create_input_topic("in", "str", "str").pipe_input("k", "x y z", 5)
        assert driver.create_output_topic("out", "str", "int64").read_key_values_to_list() == [("k", 3)]
    with TopologyTestDriver(builder, {"statestore_cache_max_bytes": 0}) as driver:
        driver.create_input_topic("in", "str", "str").pipe_input("k", "x y z", 5)
        assert driver.create_output_topic("out", "str", "int64").read_key_values_to_list() == [
            ("k", 1),
            ("k", 2),
            ("k", 3),
        ]


def test_an_app_runs_with_its_own_config_and_auto_advancing_timestamps() -> None:
    app = App("wc")
    _wordcount(app.builder)
    with TopologyTestDriver(app, {"statestore_cache_max_bytes": 0}) as driver:
        assert driver.config.application_id == "wc"
        lines = driver.create_input_topic("in", "str", "str", start_timestamp_ms=1000, auto_advance_ms=10)
        lines.pipe_key_value_list([(None, "a"), (None, "a")])
        driver.advance_wall_clock_time(5_000)
        out = driver.create_output_topic("out", "str", "int64")
        assert out.read_records_to_list() == [TestRecord("a", 1, 1000), TestRecord("a", 2, 1010)]
        assert "wc-counts-repartition" in driver.produced_topics()


def test_unknown_topics_and_empty_reads_fail_clearly() -> None:
    builder = StreamsBuilder()
    _wordcount(builder)
    driver = TopologyTestDriver(builder)
    with pytest.raises(ValueError, match="Unknown topic: nope"):
        driver.create_input_topic("nope")
    with pytest.raises(LookupError, match="Empty topic: out"):
        driver.create_output_topic("out").read_record()
    driver.close()
    with pytest.raises(RuntimeError, match="closed"):
        driver.advance_wall_clock_time(1)


def test_records_written_to_a_source_topic_are_processed_again() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in", key_serde="str", value_serde="str")
    stream.to("mid")  # mid is also a source: its records are processed again
    builder.stream("mid", key_serde="str", value_serde="str").map_values(str.upper).to("out", value_serde="str")
    with TopologyTestDriver(builder) as driver:
        driver.create_input_topic("in", "str", "str").pipe_input("k", "v", 7)
        assert driver.create_output_topic("out", "str", "str").read_records_to_list() == [TestRecord("k", "V", 7)]


def test_window_store_view_and_dropped_late_records() -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(10))
        .count("w")
    )
    # no cache: store reads go to the window store itself (Kafka's caching window store would still answer
    # a fetch of an expired window from its cache)
    with TopologyTestDriver(builder, {"statestore_cache_max_bytes": 0}) as driver:
        records = driver.create_input_topic("in", "str", "str")
        for timestamp in (3, 14, 7, 4):  # stream time 14 closes [0, 10): 7 and 4 are late
            records.pipe_input("k", "v", timestamp)
        store = driver.get_window_store("w")
        # retention is size + grace = 10 ms behind the store's stream time (the latest window start, 10):
        # window 0 is expired for reads (Kafka's segmented store: start < 10 - 10 + 1), window 10 is live
        assert store.fetch("k", 0) is None
        assert store.fetch("k", 10) == 1
        assert list(store.all()) == [(Windowed("k", TimeWindow(10, 20)), 1)]
        assert driver.dropped_records() == 2
        with pytest.raises(TypeError, match="window store"):
            driver.get_key_value_store("w")
        records.pipe_input("k", "v", 200_000)  # window 10 expires in turn (its 60 s segment is dropped)
        assert store.fetch("k", 10) is None
        assert list(store.all()) == [(Windowed("k", TimeWindow(200_000, 200_010)), 1)]


def test_session_store_view_and_a_merge_of_two_sessions() -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(10, 100))
        .reduce(lambda aggregate, value: aggregate + value, "s")
        .to_stream()
        .to("out", key_serde=SessionWindowedSerde(StringSerde()), value_serde="str")
    )
    with TopologyTestDriver(builder) as driver:
        records = driver.create_input_topic("in", "str", "str")
        # 10 is within the gap of both sessions; the grace keeps [0, 0] in the store (retention: gap + grace)
        for value, timestamp in (("a", 0), ("b", 20), ("c", 10)):
            records.pipe_input("k", value, timestamp)
        out = driver.create_output_topic("out", SessionWindowedSerde(StringSerde()), "str")
        # updates carry the session's end as their timestamp; the bridged sessions are deleted
        assert out.read_records_to_list() == [
            TestRecord(Windowed("k", SessionWindow(0, 0)), "a", 0),
            TestRecord(Windowed("k", SessionWindow(20, 20)), "b", 20),
            TestRecord(Windowed("k", SessionWindow(0, 0)), None, 0),
            TestRecord(Windowed("k", SessionWindow(20, 20)), None, 20),
            TestRecord(Windowed("k", SessionWindow(0, 20)), "abc", 20),
        ]
        store = driver.get_session_store("s")
        assert list(store.find_sessions("k", 0, 100)) == [(Windowed("k", SessionWindow(0, 20)), "abc")]
        assert store.fetch_session("k", 0, 20) == "abc"
        assert store.fetch_session("k", 0, 0) is None
        with pytest.raises(TypeError, match="not a window store"):
            driver.get_window_store("s")


def test_agents_sends_carry_the_record_timestamp() -> None:
    app = App("agents")
    lines = app.topic("lines", key_serde="str", value_serde="str")
    out = app.topic("out", key_serde="str", value_serde="int64")
    counts = app.Table("counts", key_serde="str", value_serde="int64", default=int)

    @app.agent(lines, tables=[counts])
    async def count(stream):  # type: ignore[no-untyped-def]
        async for word in stream.flat_map_values(str.split).group_by(lambda w: w, name="counts"):
            counts[word] += 1
            await out.send(key=word, value=counts[word])

    with TopologyTestDriver(app) as driver:
        driver.create_input_topic("lines", "str", "str").pipe_input(None, "a b a", 42)
        records = driver.create_output_topic("out", "str", "int64").read_records_to_list()
        assert records == [TestRecord("a", 1, 42), TestRecord("b", 1, 42), TestRecord("a", 2, 42)]


def test_readme_and_driver_agree_on_what_is_called() -> None:
    """Every `driver.name(` README's testing section shows is a method; every `driver.name` it shows bare is not."""
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    section = readme.split("## Testing without Kafka", 1)[1].split("\n## ", 1)[0]
    called = set(re.findall(r"driver\.(\w+)\(", section))
    bare = set(re.findall(r"driver\.(\w+)\b(?!\()", section)) - called
    assert {"dropped_records", "produced_topics", "get_key_value_store"} <= called
    for name in called:
        assert inspect.isfunction(getattr(TopologyTestDriver, name)), f"README calls driver.{name}()"
    assert "stream_time" in bare
    for name in bare:
        assert isinstance(getattr(TopologyTestDriver, name), property), f"README reads driver.{name} bare"
