"""examples/enrichment/payments.py: orders settled by payments within 5 minutes, on streamlet's TopologyTestDriver.

The expected values are written out by hand from the example's joiner and windows; the join's semantics are
proven against Kafka Streams in tests/oracle/semantics/test_stream_joins_oracle.py.
"""

from __future__ import annotations

from examples.enrichment.payments import PAID, UNPAID, app
from streamlet.testing import TestRecord, TopologyTestDriver

MINUTE = 60_000


def test_orders_paid_within_five_minutes_are_paid_and_the_others_unpaid_once_their_window_closed() -> None:
    with TopologyTestDriver(app) as driver:
        orders = driver.create_input_topic("orders", "str", "str")
        payments = driver.create_input_topic("payments", "str", "str")
        paid = driver.create_output_topic(PAID, "str", "str")
        unpaid = driver.create_output_topic(UNPAID, "str", "str")
        orders.pipe_input("c1", "o1 2 books", 0)
        orders.pipe_input("c2", "o2 a lamp", 1 * MINUTE)
        orders.pipe_input("c1", "o3 a pen", 2 * MINUTE)
        payments.pipe_input("o1", "25.00", 4 * MINUTE)  # within 5 minutes
        payments.pipe_input("o3", "1.50", 1 * MINUTE)  # before the order: does not count
        payments.pipe_input("o2", "40.00", 6 * MINUTE + 1)  # 5 minutes and 1 ms after the order: too late
        assert paid.read_records_to_list() == [TestRecord("o1", "o1 2 books paid 25.00", 4 * MINUTE)]
        assert unpaid.read_records_to_list() == []  # no window has closed and passed the grace period yet
        orders.pipe_input("c3", "o4 a chair", 8 * MINUTE)  # o1's, o2's and o3's windows closed (+ 30 s grace)
        assert unpaid.read_records_to_list() == [
            TestRecord("o2", "o2 a lamp unpaid", 1 * MINUTE),
            TestRecord("o3", "o3 a pen unpaid", 2 * MINUTE),
        ]
        payments.pipe_input("o4", "99.00", 9 * MINUTE)
        assert paid.read_records_to_list() == [TestRecord("o4", "o4 a chair paid 99.00", 9 * MINUTE)]
        assert unpaid.read_records_to_list() == []
