"""The workers' /group page from an assignment event and metrics events (pure; the browser test is e2e)."""

from __future__ import annotations

from streamlet.group_page import render_group_page
from streamlet.status import GroupEvents
from streamlet.task_id import TaskId
from tests.support.chromium import Elements
from tests.unit.test_status import NOW, A, B, assignment, metrics

T00, T10, T11 = TaskId(0, 0), TaskId(1, 0), TaskId(1, 1)


def test_the_grid_shows_every_task_of_every_client_with_its_state() -> None:
    events = GroupEvents(
        "app",
        assignment=assignment(followup_ms=NOW + 20_000),
        metrics={
            A: metrics(A, NOW - 1000, {T00: "RUNNING", T10: "RESTORING", T11: "STANDBY"}, {T00: 7}),
            B: metrics(B, NOW - 1000, {TaskId(0, 1): "RUNNING", T11: "RUNNING"}, {T11: 3}),
        },
    )
    html = render_group_page(events, now_ms=NOW)
    page = Elements(html)
    assert [r["data-client"] for r in page.find("tr") if "data-client" in r] == [A, B]
    assert [(c["class"], c["title"]) for c in page.find("td") if c.get("class") in ("active", "warmup")][:5] == [
        ("active", "RUNNING"),  # A: 0_0
        ("active", "RESTORING"),  # A: 1_0
        ("warmup", "STANDBY"),  # A: 1_1, a warmup is a standby on the wire
        ("active", "RUNNING"),  # B: 0_1
        ("active", "RUNNING"),  # B: 1_1
    ]
    assert "probing rebalance pending: scheduled for" in html and "(in 20s)" in html
    assert 'http-equiv="refresh"' in html and "<script" not in html


def test_without_events_the_page_says_what_is_missing() -> None:
    html = render_group_page(GroupEvents("app", missing=["app-assignments"]), now_ms=NOW)
    assert "no assignment event yet (missing topics: app-assignments)" in html
    assert '<table class="placement">' not in html
