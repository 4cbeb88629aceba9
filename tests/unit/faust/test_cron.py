"""The 5-field cron parser: every field form, the day-of-month / day-of-week rule, time zones, and errors.
Expected next times are written out by hand (2026-11-23 is a Monday)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from streamlet.faust.cron import CronError, CronSchedule

MONDAY = datetime(2026, 11, 23, 21, 37, 12, tzinfo=UTC)


def _next(expression: str, after: datetime = MONDAY) -> datetime:
    return CronSchedule.parse(expression).next_after(after)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("* * * * *", datetime(2026, 11, 23, 21, 38, tzinfo=UTC)),
        ("*/15 * * * *", datetime(2026, 11, 23, 21, 45, tzinfo=UTC)),
        ("5/20 * * * *", datetime(2026, 11, 23, 21, 45, tzinfo=UTC)),  # 5, 25, 45
        ("0 * * * *", datetime(2026, 11, 23, 22, 0, tzinfo=UTC)),
        ("30 9 * * *", datetime(2026, 11, 24, 9, 30, tzinfo=UTC)),
        ("0 9-17/4 * * *", datetime(2026, 11, 24, 9, 0, tzinfo=UTC)),  # 9, 13, 17: all passed today
        ("0,30 22,23 * * *", datetime(2026, 11, 23, 22, 0, tzinfo=UTC)),
        ("0 0 1 * *", datetime(2026, 12, 1, 0, 0, tzinfo=UTC)),
        ("0 0 1 jan *", datetime(2027, 1, 1, 0, 0, tzinfo=UTC)),
        ("0 12 * * fri", datetime(2026, 11, 27, 12, 0, tzinfo=UTC)),
        ("0 12 * * 0", datetime(2026, 11, 29, 12, 0, tzinfo=UTC)),
        ("0 12 * * 7", datetime(2026, 11, 29, 12, 0, tzinfo=UTC)),  # 7 is Sunday too
        ("0 12 * * mon-fri", datetime(2026, 11, 24, 12, 0, tzinfo=UTC)),
        # both day fields restricted: either matches (the 25th, a Wednesday, or any Saturday)
        ("0 0 25 * sat", datetime(2026, 11, 25, 0, 0, tzinfo=UTC)),
        ("0 0 30 * sat", datetime(2026, 11, 28, 0, 0, tzinfo=UTC)),
        ("0 0 29 2 *", datetime(2028, 2, 29, 0, 0, tzinfo=UTC)),  # the next leap day
    ],
)
def test_next_after(expression: str, expected: datetime) -> None:
    assert _next(expression) == expected


def test_a_matching_minute_is_strictly_after() -> None:
    on_the_minute = datetime(2026, 11, 23, 21, 45, tzinfo=UTC)
    assert _next("*/15 * * * *", on_the_minute) == datetime(2026, 11, 23, 22, 0, tzinfo=UTC)


def test_times_are_wall_clock_times_of_the_zone() -> None:
    paris = ZoneInfo("Europe/Paris")
    after = MONDAY.astimezone(paris)  # 22:37 in Paris
    nxt = _next("0 9 * * *", after)
    assert (nxt.hour, nxt.minute, nxt.tzinfo) == (9, 0, paris)
    assert nxt.astimezone(UTC) == datetime(2026, 11, 24, 8, 0, tzinfo=UTC)


PARIS = ZoneInfo("Europe/Paris")  # 2026-10-25 03:00 CEST -> 02:00 CET; 2026-03-29 02:00 CET -> 03:00 CEST


def test_a_fixed_hour_fires_once_in_the_repeated_hour_and_never_in_the_past() -> None:
    first_pass = datetime(2026, 10, 25, 2, 10, tzinfo=PARIS)
    second_pass = datetime(2026, 10, 25, 2, 10, tzinfo=PARIS, fold=1)
    assert second_pass.timestamp() - first_pass.timestamp() == 3600
    assert _next("30 2 * * *", first_pass) == datetime(2026, 10, 25, 2, 30, tzinfo=PARIS)
    # after the first 02:30 fired, the second pass does not fire it again: the next one is tomorrow's
    after = _next("30 2 * * *", second_pass)
    assert after == datetime(2026, 10, 26, 2, 30, tzinfo=PARIS)
    assert after.timestamp() > second_pass.timestamp()


def test_a_star_hour_fires_in_both_passes_of_the_repeated_hour() -> None:
    second_pass = datetime(2026, 10, 25, 2, 10, tzinfo=PARIS, fold=1)
    after = _next("*/15 * * * *", second_pass)
    assert (after.hour, after.minute, after.fold) == (2, 15, 1)
    assert after.timestamp() - second_pass.timestamp() == 5 * 60


def test_a_skipped_time_is_taken_at_its_old_offset() -> None:
    before = datetime(2026, 3, 29, 1, 50, tzinfo=PARIS)
    after = _next("30 2 * * *", before)
    assert after.timestamp() == datetime(2026, 3, 29, 3, 30, tzinfo=PARIS).timestamp()  # 02:30 CET, 01:30 UTC


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("* * * *", "must have 5 fields"),
        ("60 * * * *", "minute: 60 is outside 0-59"),
        ("* 24 * * *", "hour: 24 is outside 0-23"),
        ("* * 0 * *", "day of month: 0 is outside 1-31"),
        ("* * * foo *", "month: 'foo' is not a number or a name"),
        ("*/0 * * * *", "the step in '\\*/0' must be a positive number"),
        ("* 5-2 * * *", "the range '5-2' runs backwards"),
        ("0 0 30 2 *", "matches no time in the next five years"),
    ],
)
def test_bad_expressions_say_what_is_wrong(expression: str, message: str) -> None:
    with pytest.raises(CronError, match=message):
        _next(expression)
