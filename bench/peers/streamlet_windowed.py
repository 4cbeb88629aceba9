"""The windowed count of bench/windowed.py in streamlet (the twin of bench/kafka-streams' WindowedCount.java):
per key, tumbling 1-minute windows with 10 s grace, every update written with TimeWindowedSerde keys."""

from __future__ import annotations

import os

from streamlet import App, TimeWindowedSerde, TimeWindows
from streamlet.serdes import StringSerde

app = App(os.environ.get("BENCH_APPLICATION_ID", "bench-windowed"))
(
    app.stream(os.environ.get("BENCH_INPUT_TOPIC", "bench-windowed-input"), key_serde="str", value_serde="str")
    .group_by_key()
    .windowed_by(TimeWindows.of_size_and_grace(60_000, 10_000))
    .count("windowed-counts")
    .to_stream()
    .to(
        os.environ.get("BENCH_OUTPUT_TOPIC", "bench-windowed-output"),
        key_serde=TimeWindowedSerde(StringSerde(), 60_000),
        value_serde="int64",
    )
)
