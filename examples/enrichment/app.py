"""Orders enriched with their customer (a stream-table join), run with
`streamlet worker examples.enrichment.app:app`.

`customers` (key: customer id, value: the customer's name; a null value deletes the customer) is read as a
KTable; each order (key: customer id, value: the order) is joined with the customer's current name. Orders of
unknown customers go to their own topic. The two input topics must have the same number of partitions.
`enrich_orders` is also the first half of examples/enrichment/pipeline.py.
"""

from __future__ import annotations

import os

from streamlet import App, Branched
from streamlet.topology import KStream

CUSTOMERS = os.environ.get("ENRICHMENT_CUSTOMERS_TOPIC", "customers")
ORDERS = os.environ.get("ENRICHMENT_ORDERS_TOPIC", "orders")
ENRICHED = os.environ.get("ENRICHMENT_OUTPUT_TOPIC", "orders-enriched")
UNKNOWN = os.environ.get("ENRICHMENT_UNKNOWN_TOPIC", "orders-unknown-customer")


def enrich(order: str, customer: str | None) -> str:
    return f"{order} for {customer}" if customer is not None else f"{order} for an unknown customer"


def enrich_orders(app: App) -> KStream:
    """Orders joined with the customers table, written to `ENRICHED` / `UNKNOWN`; returns the enriched ones."""
    customers = app.table(CUSTOMERS, key_serde="str", value_serde="str", store_name="customers")
    branches = (
        app.stream(ORDERS, key_serde="str", value_serde="str")
        .left_join(customers, enrich)
        .split(name="orders-")
        .branch(lambda _id, order: order.endswith("an unknown customer"), Branched.as_("unknown"))
        .default_branch(Branched.as_("enriched"))
    )
    branches["orders-enriched"].to(ENRICHED, key_serde="str", value_serde="str")
    branches["orders-unknown"].to(UNKNOWN, key_serde="str", value_serde="str")
    return branches["orders-enriched"]


app = App(os.environ.get("ENRICHMENT_APPLICATION_ID", "orders-enrichment"), commit_interval_ms=1_000)
enrich_orders(app)
