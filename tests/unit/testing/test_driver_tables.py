"""Tables and stream-table joins on streamlet's TopologyTestDriver, worked out by hand from Kafka's rules
(tests/oracle/semantics/test_tables_oracle.py checks the same against Kafka Streams' own driver)."""

from __future__ import annotations

from streamlet.testing import TestRecord, TopologyTestDriver
from streamlet.topology import StreamsBuilder


def test_left_join_enriches_with_the_latest_table_value_at_the_stream_record_time_of_processing() -> None:
    builder = StreamsBuilder()
    customers = builder.table("customers", "str", "str", "customers")
    orders = builder.stream("orders", "str", "str")
    orders.left_join(customers, lambda o, c: f"{o}:{c}").to("out", "str", "str")
    with TopologyTestDriver(builder) as driver:
        c = driver.create_input_topic("customers", "str", "str")
        o = driver.create_input_topic("orders", "str", "str")
        out = driver.create_output_topic("out", "str", "str")
        o.pipe_input("c1", "o1", 5)  # before the table has c1
        c.pipe_input("c1", "alice", 50)
        o.pipe_input("c1", "o2", 6)  # keeps its own timestamp
        c.pipe_input("c1", None, 60)  # tombstone
        o.pipe_input("c1", "o3", 7)
        o.pipe_input(None, "o4", 8)  # a left join joins a null key (with no table value)
        o.pipe_input("c1", None, 9)  # a null value is dropped
        assert out.read_records_to_list() == [
            TestRecord("c1", "o1:None", 5),
            TestRecord("c1", "o2:alice", 6),
            TestRecord("c1", "o3:None", 7),
            TestRecord(None, "o4:None", 8),
        ]


def test_table_updates_carry_their_timestamps_and_tombstones() -> None:
    builder = StreamsBuilder()
    table = builder.table("t", "str", "str", "t-store")
    table.filter(lambda k, v: "a" in v).to_stream().to("filtered", "str", "str")
    table.map_values(len).to_stream().to("lengths", "str", "int64")
    with TopologyTestDriver(builder) as driver:
        t = driver.create_input_topic("t", "str", "str")
        filtered = driver.create_output_topic("filtered", "str", "str")
        lengths = driver.create_output_topic("lengths", "str", "int64")
        t.pipe_input("k", "b", 1)  # filtered out, never in: no tombstone (old values are known)
        t.pipe_input("k", "ab", 2)
        t.pipe_input("k", "bb", 3)  # leaves the filter: a tombstone
        t.pipe_input("k", None, 4)  # was not in the filter: nothing
        assert filtered.read_records_to_list() == [TestRecord("k", "ab", 2), TestRecord("k", None, 3)]
        assert lengths.read_records_to_list() == [
            TestRecord("k", 1, 1),
            TestRecord("k", 2, 2),
            TestRecord("k", 2, 3),
            TestRecord("k", None, 4),
        ]
        assert driver.get_timestamped_key_value_store("t-store").get("k") is None
