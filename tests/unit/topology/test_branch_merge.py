"""split()/branch() and merge() in the topology layer: the branches returned, and the errors.

Names and describe() are checked against Kafka Streams by the describe() oracle (tests/oracle/topology), and
routing by the semantics oracle (tests/oracle/semantics/test_branch_merge_oracle.py).
"""

from __future__ import annotations

import pytest

from streamlet.errors import TopologyError
from streamlet.testing import TestRecord, TopologyTestDriver
from streamlet.topology import Branched, KStream, StreamsBuilder


def test_split_returns_branches_by_name_as_kafka_does() -> None:
    builder = StreamsBuilder()
    consumed: list[KStream] = []
    branches = (
        builder.stream("in", "str", "str")
        .split(name="s-")
        .branch(lambda k, v: v.startswith("a"), Branched.as_("a"))
        .branch(lambda k, v: v.startswith("b"))
        .branch(lambda k, v: v.startswith("c"), Branched.with_consumer(consumed.append))
        .branch(lambda k, v: v.startswith("d"), Branched.with_function(lambda s: None, "dropped"))
        .default_branch(Branched.with_function(lambda s: s.map_values(str.upper)))
    )
    assert list(branches) == ["s-a", "s-2", "s-0"]  # a consumer's or None-returning function's branch is left out
    assert len(consumed) == 1 and consumed[0].node_name == "s-3"
    assert branches["s-0"].node_name.startswith("KSTREAM-MAPVALUES-")


def test_each_record_takes_the_first_matching_branch_or_the_default() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in", "str", "str")
    branches = stream.split(name="s-").branch(lambda k, v: "a" in v).branch(lambda k, v: "b" in v).default_branch()
    branches["s-1"].to("a", "str", "str")
    branches["s-2"].merge(branches["s-0"]).to("rest", "str", "str")
    with TopologyTestDriver(builder) as driver:
        source = driver.create_input_topic("in", "str", "str")
        a = driver.create_output_topic("a", "str", "str")
        rest = driver.create_output_topic("rest", "str", "str")
        for i, value in enumerate(["ab", "b", "c", "a"]):
            source.pipe_input("k", value, i)
        assert a.read_records_to_list() == [TestRecord("k", "ab", 0), TestRecord("k", "a", 3)]
        assert rest.read_records_to_list() == [TestRecord("k", "b", 1), TestRecord("k", "c", 2)]


def test_branch_and_merge_errors() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in")
    with pytest.raises(TopologyError, match="must be callable"):
        stream.split().branch("no")  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match="Branched"):
        stream.split().branch(lambda k, v: True, "name")  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match="illegal"):
        Branched.as_("bad name")
    with pytest.raises(TopologyError, match="same StreamsBuilder"):
        stream.merge(StreamsBuilder().stream("other"))
    with pytest.raises(TopologyError, match="already added"):
        stream.split(name="x").default_branch(Branched.as_("y"))
        stream.split(name="x")
