"""The stream-table join of bench/join.py in streamlet (the twin of bench/kafka-streams' StreamTableJoin.java):
customers as a table materialized in the store "customers" (change-logged), each order left-joined with it as
"order|customer" ("-" for no customer)."""

from __future__ import annotations

import os

from streamlet import App

app = App(os.environ.get("BENCH_APPLICATION_ID", "bench-join"))
customers = app.table(
    os.environ.get("BENCH_CUSTOMERS_TOPIC", "bench-join-customers"),
    key_serde="str",
    value_serde="str",
    store_name="customers",
)
(
    app.stream(os.environ.get("BENCH_ORDERS_TOPIC", "bench-join-orders"), key_serde="str", value_serde="str")
    .left_join(customers, lambda order, customer: f"{order}|{customer if customer is not None else '-'}")
    .to(os.environ.get("BENCH_OUTPUT_TOPIC", "bench-join-output"), key_serde="str", value_serde="str")
)
