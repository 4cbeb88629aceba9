"""The page-view record the page-view examples read (JSON values)."""

from __future__ import annotations

from streamlet import Record


class PageView(Record):
    user: str
    page: str
    duration_ms: int = 0
    referrer: str | None = None
