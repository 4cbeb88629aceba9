"""examples/enrichment: orders joined with the customers table, on streamlet's TopologyTestDriver.

The expected values are written out by hand from the example's joiner; the join's semantics are proven against
Kafka Streams in tests/oracle/semantics/test_tables_oracle.py.
"""

from __future__ import annotations

from examples.enrichment.app import ENRICHED, UNKNOWN, app
from streamlet.testing import TestRecord, TopologyTestDriver


def test_orders_are_enriched_with_the_customer_they_had_when_processed() -> None:
    with TopologyTestDriver(app) as driver:
        customers = driver.create_input_topic("customers", "str", "str")
        orders = driver.create_input_topic("orders", "str", "str")
        enriched = driver.create_output_topic(ENRICHED, "str", "str")
        unknown = driver.create_output_topic(UNKNOWN, "str", "str")
        customers.pipe_input("c1", "Alice", 1)
        orders.pipe_input("c1", "2 books", 2)
        orders.pipe_input("c2", "a lamp", 3)
        customers.pipe_input("c2", "Bob", 4)
        customers.pipe_input("c1", None, 5)  # Alice leaves
        orders.pipe_input("c2", "a chair", 6)
        orders.pipe_input("c1", "a pen", 7)
        assert enriched.read_records_to_list() == [
            TestRecord("c1", "2 books for Alice", 2),
            TestRecord("c2", "a chair for Bob", 6),
        ]
        assert unknown.read_records_to_list() == [
            TestRecord("c2", "a lamp for an unknown customer", 3),
            TestRecord("c1", "a pen for an unknown customer", 7),
        ]
