"""The 5-field cron syntax of `@app.crontab("*/5 * * * *")`: parse it, and find the next time it matches.

Fields: minute (0-59), hour (0-23), day of month (1-31), month (1-12 or jan-dec), day of week (0-7 or sun-sat,
0 and 7 both Sunday). Each is `*`, a value, a range `a-b`, any of those with a step (`*/15`, `1-30/2`), or a
comma-separated list of them. As in cron (and croniter, which Faust uses), when both day fields are
restricted a day matches if either does. Times are wall-clock times of the schedule's time zone.

Across daylight saving changes: a time the clock skips (spring forward) is taken at the instant its old offset
names (02:30 CET is 03:30 CEST); in an hour the clock repeats (fall back), as in classic cron, a
schedule with a fixed hour fires once, at the first pass, and one whose hour field is `*` fires in both passes
(they are real time). The next time is always strictly after the given instant.

A small parser rather than croniter (which Faust uses): the syntax is small, a caller of croniter must still
choose the pass of a repeated hour (re-attaching the zone to its wall-clock result picks the first, which can be
in the past, and a timer then fires in a loop), and this keeps streamlet's dependencies to the Kafka client,
RocksDB and the web server.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["CronError", "CronSchedule"]

_MONTHS = {name: i + 1 for i, name in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_DAYS = {name: i for i, name in enumerate("sun mon tue wed thu fri sat".split())}
#: (name, lowest, highest, names) of the five fields, in order
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _DAYS),
)
#: a schedule that matches nothing (e.g. February 30th) is searched this far before giving up
_HORIZON = timedelta(days=366 * 5)


class CronError(ValueError):
    """A cron expression that does not parse, naming the field and what is wrong with it."""


def _value(text: str, field: str, low: int, high: int, names: dict[str, int]) -> int:
    value = names.get(text.lower())
    if value is None:
        if not text.isdigit():
            raise CronError(f"cron {field}: {text!r} is not a number" + (" or a name" if names else ""))
        value = int(text)
    if not low <= value <= high:
        raise CronError(f"cron {field}: {value} is outside {low}-{high}")
    return value


def _parse_field(text: str, field: str, low: int, high: int, names: dict[str, int]) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        body, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) == 0:
                raise CronError(f"cron {field}: the step in {part!r} must be a positive number")
            step = int(step_text)
        if body == "*":
            first, last = low, high
        elif "-" in body:
            a, _, b = body.partition("-")
            first, last = _value(a, field, low, high, names), _value(b, field, low, high, names)
            if first > last:
                raise CronError(f"cron {field}: the range {body!r} runs backwards")
        else:
            first = _value(body, field, low, high, names)
            last = high if slash else first  # `5/15` means from 5 to the end, every 15
        values.update(range(first, last + 1, step))
    return frozenset(values)


@dataclass(frozen=True)
class CronSchedule:
    """A parsed cron expression; `next_after(t)` is the first matching minute after `t` (in `t`'s time zone)."""

    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool  # the day-of-month field is `*`
    any_weekday: bool  # the day-of-week field is `*`

    @classmethod
    def parse(cls, expression: str) -> CronSchedule:
        parts = expression.split()
        if len(parts) != 5:
            raise CronError(
                f"cron expression {expression!r} must have 5 fields (minute hour day month weekday), has {len(parts)}"
            )
        minutes, hours, days, months, weekdays = (
            _parse_field(text, *spec) for text, spec in zip(parts, _FIELDS, strict=True)
        )
        sunday_is_0 = frozenset(d % 7 for d in weekdays)
        return cls(
            expression, minutes, hours, days, months, sunday_is_0, parts[2].startswith("*"), parts[4].startswith("*")
        )

    def _day_matches(self, t: datetime) -> bool:
        in_month = t.day in self.days
        in_week = (t.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return in_month and in_week  # one of them is `*`: it matches every day
        return in_month or in_week

    def next_after(self, t: datetime) -> datetime:
        """The first minute strictly after the instant `t` that the schedule matches, as a wall-clock time of `t`'s
        zone (with `fold=1` for the second pass of a repeated hour)."""
        # a wall-clock time of a repeated hour names two instants (fold 0 and 1); only a `*` hour takes both
        folds = (0, 1) if len(self.hours) == 24 else (0,)
        candidate = t.replace(second=0, microsecond=0) + timedelta(minutes=1)
        end = t + _HORIZON
        while candidate <= end:
            if candidate.month not in self.months:
                year, month = divmod(candidate.month, 12)  # the first day of the next month
                candidate = candidate.replace(year=candidate.year + year, month=month + 1, day=1, hour=0, minute=0)
            elif not self._day_matches(candidate):
                candidate = candidate.replace(hour=0, minute=0) + timedelta(days=1)
            elif candidate.hour not in self.hours:
                candidate = candidate.replace(minute=0) + timedelta(hours=1)
            elif candidate.minute not in self.minutes:
                candidate += timedelta(minutes=1)
            else:
                for fold in folds:
                    if candidate.replace(fold=fold).timestamp() > t.timestamp():
                        return candidate.replace(fold=fold)
                candidate += timedelta(minutes=1)  # a pass of a repeated hour that is already over
        raise CronError(f"cron expression {self.expression!r} matches no time in the next five years")
