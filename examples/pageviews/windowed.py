"""Page views per user per minute, emit-final: one count per user and minute, once the minute has closed.

    python examples/pageviews/windowed.py worker -l info
    python examples/pageviews/windowed.py topology describe

The DSL twin of Kafka Streams' windowed count: `group_by(user)` re-keys the JSON `PageView` records through
`<application_id>-by-user-repartition`, `windowed_by` counts them in tumbling 1-minute windows (aligned to
the epoch) that accept records up to 10 s late, and `suppress(until_window_closes)` holds each window's
count until stream time passes its end plus the grace, then writes it once. Output keys are Kafka's
`TimeWindowedSerde` (the user, then the window start as an 8-byte long), values 8-byte counts: a Java
consumer reads them with `WindowedSerdes.timeWindowedSerdeFrom(String.class, 60_000)` and `LongDeserializer`.
Under `exactly_once_v2` each window's count is written exactly once, across crashes too.
`windowed_faust.py` is the same app written as a Faust user would.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `streamlet` importable from a source checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from streamlet import App, BufferConfig, Suppressed, TimeWindowedSerde, TimeWindows
from streamlet.serdes import StringSerde

WINDOW_MS = 60_000
GRACE_MS = 10_000


def user_of(_key: object, view: dict[str, object]) -> str:
    return str(view["user"])


app = App(os.environ.get("PAGEVIEWS_APPLICATION_ID", "pageviews-per-minute"), commit_interval_ms=1_000)
(
    app.stream(os.environ.get("PAGEVIEWS_INPUT_TOPIC", "page-views"), key_serde="str", value_serde="json")
    .group_by(user_of, key_serde="str", name="by-user")
    .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS))
    .count("views-per-user-per-minute")
    .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()).with_name("final-counts"))
    .to_stream()
    .to(
        os.environ.get("PAGEVIEWS_OUTPUT_TOPIC", "page-views-per-minute"),
        key_serde=TimeWindowedSerde(StringSerde(), WINDOW_MS),
        value_serde="int64",
    )
)

if __name__ == "__main__":
    app.main()
