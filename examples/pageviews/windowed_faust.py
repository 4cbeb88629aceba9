"""Page views per user per minute, emit-final, written as a Faust user would: a windowed table whose
`on_window_close` writes each minute's final count once.

    python examples/pageviews/windowed_faust.py worker -l info

The agent re-keys the `PageView` records by user (`<application_id>-by-user-repartition`) and counts them in
a table of tumbling 1-minute windows kept 70 s (`expires`): a window takes records until stream time is
10 s past its end (grace = expires - size), then closes, and `on_window_close` gets its final count and
sends it. It writes what `windowed.py` (the DSL version) writes, so the same consumers and checks read both:
`TimeWindowedSerde` keys (the user, then the window start as an 8-byte long) and 8-byte counts. The send is
committed with the task, and which windows have closed is changelogged with it, so under `exactly_once_v2`
each window's count is written exactly once, across crashes too (see `streamlet.faust.window_close`).
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `streamlet` importable from a source checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from examples.pageviews.models import PageView
from streamlet import App, TimeWindow, TimeWindowedSerde, Windowed
from streamlet.serdes import StringSerde

WINDOW_MS = 60_000

app = App(os.environ.get("PAGEVIEWS_APPLICATION_ID", "pageviews-per-minute-faust"), commit_interval_ms=1_000)
page_views = app.topic(os.environ.get("PAGEVIEWS_INPUT_TOPIC", "page-views"), value_type=PageView)
final_counts = app.topic(
    os.environ.get("PAGEVIEWS_OUTPUT_TOPIC", "page-views-per-minute"),
    key_serde=TimeWindowedSerde(StringSerde(), WINDOW_MS),
    value_serde="int64",
)


async def write_final(key: tuple[str, tuple[float, float]], count: int) -> None:
    """Faust's `on_window_close(key, value)`: key is `(user, (start, end))` in seconds."""
    user, (start, _end) = key
    start_ms = round(start * 1000)
    await final_counts.send(key=Windowed(user, TimeWindow(start_ms, start_ms + WINDOW_MS)), value=count)


views = app.Table(
    "views-per-user-per-minute", key_type=str, value_type=int, default=int, on_window_close=write_final
).tumbling(60, expires=timedelta(seconds=70))


@app.agent(page_views, tables=[views])
async def count_views(stream):
    async for view in stream.group_by(PageView.user, name="by-user"):
        views[view.user] += 1


if __name__ == "__main__":
    app.main()
