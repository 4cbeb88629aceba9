"""A partition's replica racks, as Kafka Streams' RackUtils reads them (no broker: described metadata as input)."""

from __future__ import annotations

import logging

import pytest

from streamlet.kafka.replica_racks import replica_racks

BROKERS = {1: "az-1", 2: "az-2", 3: None}  # node 3 has no broker.rack


def _topic(name: str, *replicas: list[int]) -> dict[str, object]:
    return {"topic": name, "partitions": [{"partition": p, "replicas": r} for p, r in enumerate(replicas)]}


def test_each_partition_gets_the_racks_of_its_replicas() -> None:
    racks = replica_racks(BROKERS, [_topic("in", [1], [2, 1]), _topic("app-store-changelog", [2, 2])])
    assert racks == {
        ("in", 0): frozenset({"az-1"}),
        ("in", 1): frozenset({"az-1", "az-2"}),
        ("app-store-changelog", 0): frozenset({"az-2"}),
    }


def test_a_replica_without_a_rack_adds_none_and_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="streamlet.assignment"):
        racks = replica_racks(BROKERS, [_topic("in", [3, 1], [3])])
    # all rackless: an empty set, which keeps rack-aware assignment off (no partition may lack racks)
    assert racks == {("in", 0): frozenset({"az-1"}), ("in", 1): frozenset()}
    assert "nodes [3] of topic partition in-0 do not have a rack" in caplog.text


def test_a_partition_without_replicas_is_left_out(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="streamlet.assignment"):
        assert replica_racks(BROKERS, [_topic("in", [])]) == {}
    assert "no replicas found for topic partition in-0" in caplog.text
