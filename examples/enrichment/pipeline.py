"""The whole enrichment example as one application, run with `streamlet worker examples.enrichment.pipeline:app`.

Orders are enriched with their customer (examples/enrichment/app.py: `orders-enriched`, and
`orders-unknown-customer` for unknown customers), then the enriched ones are settled with their payments
within 5 minutes (examples/enrichment/payments.py: `orders-paid`, and `orders-unpaid` once an order's window
closed without a payment). Same topics and environment variables as the two apps; the application id is
`ENRICHMENT_APPLICATION_ID` (default `orders-pipeline`). tests/e2e/test_enrichment_workers.py runs it as two
worker processes through rolling restarts.
"""

from __future__ import annotations

import os

from examples.enrichment.app import enrich_orders
from examples.enrichment.payments import settle_orders
from streamlet import App

app = App(os.environ.get("ENRICHMENT_APPLICATION_ID", "orders-pipeline"), commit_interval_ms=1_000)
settle_orders(app, enrich_orders(app))
