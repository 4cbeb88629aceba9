"""Orders matched with their payments within 5 minutes (a windowed stream-stream left join), run with
`streamlet worker examples.enrichment.payments:app`.

`orders` are the enrichment example's (key: customer id) with values `"<order id> <what>"`; they are re-keyed
by order id (so written through a repartition topic) and joined with `payments` (key: order id, value: the
amount) made from the order's time up to 5 minutes later. A paid order goes to `orders-paid` at the payment's
time (twice if paid twice); an order without a payment in its window goes to `orders-unpaid` once the window
has closed, i.e. once records more than 5 minutes and the 30 s grace period later have been seen. The join's
two window stores and its store of orders still waiting for a payment are change-logged, so both outputs
survive restarts. `settle_orders` is also the second half of examples/enrichment/pipeline.py.
"""

from __future__ import annotations

import os

from streamlet import App, Branched, JoinWindows, StreamJoined
from streamlet.topology import KStream

ORDERS = os.environ.get("ENRICHMENT_ORDERS_TOPIC", "orders")
PAYMENTS = os.environ.get("ENRICHMENT_PAYMENTS_TOPIC", "payments")
PAID = os.environ.get("ENRICHMENT_PAID_TOPIC", "orders-paid")
UNPAID = os.environ.get("ENRICHMENT_UNPAID_TOPIC", "orders-unpaid")
#: a payment counts from the order's time to 5 minutes after it; late records are still joined for 30 s more
PAYMENT_WINDOW = JoinWindows.of_time_difference_and_grace(300_000, 30_000).before(0)


def order_id(_customer: str, order: str) -> str:
    return order.split(" ", 1)[0]


def settle(order: str, amount: str | None) -> str:
    return f"{order} paid {amount}" if amount is not None else f"{order} unpaid"


def settle_orders(app: App, orders: KStream) -> None:
    """`orders` (any key, values starting with the order id) left-joined with `PAYMENTS`, to `PAID` / `UNPAID`."""
    payments = app.stream(PAYMENTS, key_serde="str", value_serde="str")
    # the orders' serdes for the repartition topic and the join's stores (a joined stream's values have none)
    joined = StreamJoined.as_("payments").with_name("settle").with_key_serde("str").with_value_serde("str")
    branches = (
        orders.select_key(order_id)
        .left_join(payments, settle, PAYMENT_WINDOW, stream_joined=joined)
        .split(name="settled-")
        .branch(lambda _id, order: order.endswith(" unpaid"), Branched.as_("unpaid"))
        .default_branch(Branched.as_("paid"))
    )
    branches["settled-paid"].to(PAID, key_serde="str", value_serde="str")
    branches["settled-unpaid"].to(UNPAID, key_serde="str", value_serde="str")


app = App(os.environ.get("PAYMENTS_APPLICATION_ID", "orders-payments"), commit_interval_ms=1_000)
settle_orders(app, app.stream(ORDERS, key_serde="str", value_serde="str"))
