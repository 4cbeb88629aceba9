"""The backlog replay of bench/backlog.py in streamlet (the twin of bench/kafka-streams' BacklogCount.java):
orders keyed by order id with the customer as value, re-keyed by customer (repartition topic `by-customer`),
counted per customer in tumbling 1-minute windows with 1 minute of grace, every update written with
TimeWindowedSerde keys."""

from __future__ import annotations

import os

from streamlet import App, TimeWindowedSerde, TimeWindows
from streamlet.serdes import StringSerde

app = App(os.environ.get("BENCH_APPLICATION_ID", "bench-backlog"))
(
    app.stream(os.environ.get("BENCH_INPUT_TOPIC", "bench-backlog-input"), key_serde="str", value_serde="str")
    .group_by(lambda _order, customer: customer, key_serde="str", value_serde="str", name="by-customer")
    .windowed_by(TimeWindows.of_size_and_grace(60_000, 60_000))
    .count("orders-per-minute")
    .to_stream()
    .to(
        os.environ.get("BENCH_OUTPUT_TOPIC", "bench-backlog-output"),
        key_serde=TimeWindowedSerde(StringSerde(), 60_000),
        value_serde="int64",
    )
)
