"""Page views per user, written as a Faust user would: typed records, an agent, a table, `app.main()`.

    python examples/pageviews/app.py worker -l info --web-port 6066
    curl localhost:6066/views/ann
    python examples/pageviews/app.py topology describe

Values are JSON `PageView` records. `group_by(PageView.user)` re-keys them through the repartition topic
`<application_id>-by-user-repartition`, written with the records' own serde and a str key (the field's
type), so the count for a user runs in the task that owns that user. A record that is not a valid
`PageView` goes to the deserialization exception handler, naming the field that is wrong.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `streamlet` importable from a source checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from examples.pageviews.models import PageView
from streamlet import App

app = App(os.environ.get("PAGEVIEWS_APPLICATION_ID", "pageviews"), commit_interval_ms=1_000)
page_views = app.topic(os.environ.get("PAGEVIEWS_INPUT_TOPIC", "page-views"), value_type=PageView)
views_per_user = app.topic(
    os.environ.get("PAGEVIEWS_OUTPUT_TOPIC", "views-per-user"), key_type=str, value_serde="int64"
)
counts = app.Table("views-per-user", key_type=str, value_type=int, default=int)


@app.agent(page_views, tables=[counts])
async def count_views(views):
    async for view in views.group_by(PageView.user, name="by-user"):
        counts[view.user] += 1
        await views_per_user.send(key=view.user, value=counts[view.user])


@app.page("/views/{user}")
async def get_views(web, request, user):
    """A user's count, answered by whichever worker owns the user (the request is forwarded there)."""
    return web.json({"user": user, "views": counts[user]})


if __name__ == "__main__":
    app.main()
