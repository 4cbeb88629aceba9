"""Figures that scenario tests (chaos, rebalances) measure, printed in the terminal summary of the run
(`tests/conftest.py`), so CI output shows them without `-s`."""

from __future__ import annotations

#: (section, line) per scenario run in this session, in the order they ran.
REPORTS: list[tuple[str, str]] = []


def add_report(section: str, line: str) -> None:
    REPORTS.append((section, line))
