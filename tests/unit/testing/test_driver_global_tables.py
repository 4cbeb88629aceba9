"""The TopologyTestDriver with global tables: records piped to a global topic update the global store at once
and are read by every sub-topology's joins (semantics proven in tests/oracle/semantics)."""

from __future__ import annotations

import pytest

from streamlet.testing import TopologyTestDriver
from streamlet.topology import StreamsBuilder


def _builder() -> StreamsBuilder:
    builder = StreamsBuilder()
    customers = builder.global_table("customers", "str", "str", store_name="customers")
    orders = builder.stream("orders", "str", "str")
    orders.left_join(customers, lambda k, v: v, lambda v, c: f"{v}:{c}").to("out", "str", "str")
    return builder


def test_a_global_topic_feeds_the_store_and_the_join() -> None:
    with TopologyTestDriver(_builder()) as driver:
        customers = driver.create_input_topic("customers", "str", "str")
        orders = driver.create_input_topic("orders", "str", "str")
        out = driver.create_output_topic("out", "str", "str")
        orders.pipe_input("o1", "c1", timestamp=1)
        customers.pipe_input("c1", "alice", timestamp=7)
        orders.pipe_input("o2", "c1", timestamp=2)
        customers.pipe_input("c1", None, timestamp=8)
        orders.pipe_input("o3", "c1", timestamp=3)
        assert out.read_key_values_to_list() == [("o1", "c1:None"), ("o2", "c1:alice"), ("o3", "c1:None")]
        customers.pipe_input("c2", "bob", timestamp=9)
        assert driver.get_key_value_store("customers").get("c2") == "bob"
        assert driver.get_timestamped_key_value_store("customers").get("c2") == ("bob", 9)
        assert driver.get_key_value_store("customers").get("c1") is None
        assert driver.produced_topics() == ["out"]  # the global store writes no changelog


def test_unknown_topics_are_refused() -> None:
    with TopologyTestDriver(_builder()) as driver, pytest.raises(ValueError, match="customers"):
        driver.create_input_topic("nope")
