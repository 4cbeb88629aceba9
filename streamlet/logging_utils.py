"""Logging helpers for the worker: rate-limiting of repeated records.

While a broker is down, aiokafka logs the same connection error on every retry: about a hundred identical
ERROR lines a second per worker, which buries everything else and fills disks. `RepeatFilter` lets the
first record of a kind through, counts the repeats for an interval, and reports the count on the next one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

AIOKAFKA_LOGGERS = ("aiokafka",)
DEFAULT_INTERVAL = 10.0
# distinct (logger, level, template) keys kept before stale ones are dropped; bounds memory if a caller logs
# pre-formatted (f-string) messages, which makes every record its own key
_MAX_KEYS = 1024


@dataclass
class _Window:
    shown_at: float  # when the last record of this kind was let through
    suppressed: int = 0


class RepeatFilter(logging.Filter):
    """Pass one record per (logger, level, message template) per `interval` seconds; count the rest.

    The template is `record.msg` before `%` formatting, so "Unable connect to node with id %s" repeats even
    when the node id differs. The first record after the interval carries the count, e.g.
    "... (repeated 523 times in the last 10 s)". A burst that simply stops leaves its last count unreported:
    a filter only runs when a record arrives, and a timer is not worth it for this.

    It filters only records of loggers named `prefixes` or below them. Attach it to a handler rather than to
    the `aiokafka` logger: a logger's filters do not see records propagated from its children
    (`aiokafka.conn`, `aiokafka.consumer.fetcher`, ...), a handler's do. `clock` is injectable for tests.
    """

    def __init__(
        self,
        interval: float = DEFAULT_INTERVAL,
        *,
        prefixes: Iterable[str] = AIOKAFKA_LOGGERS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.interval = interval
        self._prefixes = tuple(prefixes)
        self._clock = clock
        self._windows: dict[tuple[str, int, str], _Window] = {}

    def _applies(self, name: str) -> bool:
        return any(name == p or name.startswith(p + ".") for p in self._prefixes)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._applies(record.name):
            return True
        now = self._clock()
        # another handler's filter may already have added a suffix to this very record: key on the original
        template = getattr(record, "repeat_template", record.msg)
        key = (record.name, record.levelno, str(template))
        window = self._windows.get(key)
        if window is not None and now - window.shown_at < self.interval:
            window.suppressed += 1
            return False
        if window is not None and window.suppressed:
            # the suffix has no `%`, so the record's args still format; f-string: msg may be an exception object
            record.repeat_template = template
            record.msg = f"{template} (repeated {window.suppressed} times in the last {now - window.shown_at:.0f} s)"
        if len(self._windows) >= _MAX_KEYS:
            self._windows = {k: w for k, w in self._windows.items() if now - w.shown_at < self.interval}
        self._windows[key] = _Window(now)
        return True


@contextmanager
def repeat_filtered(handlers: Iterable[logging.Handler], interval: float = DEFAULT_INTERVAL) -> Iterator[None]:
    """Give each handler its own RepeatFilter for aiokafka's loggers while the block runs.

    One filter per handler: a shared one would count a record once per handler and hide it from the second.
    The filters are removed on exit, so a worker run in-process (`App.main()` from a test, a notebook) does
    not leave the host's handlers rate-limited; a handler that already has a RepeatFilter keeps its own.
    """
    added: list[tuple[logging.Handler, RepeatFilter]] = []
    for handler in handlers:
        if not any(isinstance(f, RepeatFilter) for f in handler.filters):
            repeat_filter = RepeatFilter(interval)
            handler.addFilter(repeat_filter)
            added.append((handler, repeat_filter))
    try:
        yield
    finally:
        for handler, repeat_filter in added:
            handler.removeFilter(repeat_filter)
