"""examples/enrichment/pipeline.py: orders enriched with their customer, then settled with their payments, on
streamlet's TopologyTestDriver.

The expected values are written out by hand from the two joiners; each join's semantics are proven against
Kafka Streams in tests/oracle/semantics.
"""

from __future__ import annotations

from examples.enrichment.app import ENRICHED, UNKNOWN
from examples.enrichment.payments import PAID, UNPAID
from examples.enrichment.pipeline import app
from streamlet.testing import TestRecord, TopologyTestDriver

MINUTE = 60_000


def test_enriched_orders_are_settled_and_orders_of_unknown_customers_are_not() -> None:
    with TopologyTestDriver(app) as driver:
        customers = driver.create_input_topic("customers", "str", "str")
        orders = driver.create_input_topic("orders", "str", "str")
        payments = driver.create_input_topic("payments", "str", "str")
        enriched = driver.create_output_topic(ENRICHED, "str", "str")
        unknown = driver.create_output_topic(UNKNOWN, "str", "str")
        paid = driver.create_output_topic(PAID, "str", "str")
        unpaid = driver.create_output_topic(UNPAID, "str", "str")
        customers.pipe_input("c1", "Alice", 0)
        orders.pipe_input("c1", "o1 2 books", 1 * MINUTE)
        orders.pipe_input("c2", "o2 a lamp", 1 * MINUTE)  # no customer c2: never settled
        orders.pipe_input("c1", "o3 a pen", 2 * MINUTE)
        payments.pipe_input("o1", "25.00", 3 * MINUTE)
        payments.pipe_input("o2", "40.00", 3 * MINUTE)
        assert enriched.read_records_to_list() == [
            TestRecord("c1", "o1 2 books for Alice", 1 * MINUTE),
            TestRecord("c1", "o3 a pen for Alice", 2 * MINUTE),
        ]
        assert unknown.read_records_to_list() == [TestRecord("c2", "o2 a lamp for an unknown customer", 1 * MINUTE)]
        assert paid.read_records_to_list() == [TestRecord("o1", "o1 2 books for Alice paid 25.00", 3 * MINUTE)]
        orders.pipe_input("c1", "o4 a cup", 8 * MINUTE)  # o3's window (+ 30 s grace) closed
        assert unpaid.read_records_to_list() == [TestRecord("o3", "o3 a pen for Alice unpaid", 2 * MINUTE)]
