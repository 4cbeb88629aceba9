"""The restoration progress bar `streamlet worker` draws on a terminal.

Neither rich nor tqdm is a dependency, so it is one plain line redrawn with a carriage return: per store,
a bar, the percentage (in changelog offsets), the rate and the ETA, over all the store's partitions this
client restores. Log lines go to the same terminal; a filter on the log handlers erases the bar before
each record, and the next tick draws it again. Never on a non-TTY (a log file would fill with redraws):
there the INFO lines of `LoggingRestoreListener` say the same every few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import sys
import time
from collections.abc import AsyncIterator, Sequence
from typing import TextIO

from streamlet.runtime.restore_listener import RestoreProgress, RestoreProgressTracker, format_eta

_BAR = 16


def render_restore_line(progress: Sequence[RestoreProgress], now: float, width: int = 100) -> str:
    """One line for every restoration under way, grouped by store; empty when nothing restores."""
    stores: dict[str, list[RestoreProgress]] = {}
    for p in progress:
        stores.setdefault(p.store, []).append(p)
    parts = []
    for store, items in sorted(stores.items()):
        total = sum(p.total for p in items)
        done = sum(p.total - p.remaining for p in items)
        fraction = 1.0 if total == 0 else done / total
        rate = sum(p.rate(now) for p in items)
        etas = [eta for p in items if (eta := p.eta_s(now)) is not None]
        eta = max(etas) if len(etas) == len(items) else None  # the slowest partition, once all moved
        filled = int(round(fraction * _BAR))
        partitions = f" x{len(items)}" if len(items) > 1 else ""  # partitions of the store
        parts.append(
            f"{store}{partitions} [{'#' * filled}{'-' * (_BAR - filled)}] {100 * fraction:.0f}% "
            f"{done}/{total} {rate:.0f}/s ETA {format_eta(eta)}"
        )
    line = ("restoring " + " | ".join(parts)) if parts else ""
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"


class RestoreProgressBar:
    """Redraws the line every `interval` seconds while anything restores; an owned task (see `run`)."""

    def __init__(self, tracker: RestoreProgressTracker, stream: TextIO, interval: float = 0.5) -> None:
        self._tracker = tracker
        self._stream = stream
        self._interval = interval
        self._drawn = 0  # characters of the line on screen now

    def erase(self) -> None:
        if self._drawn:
            self._stream.write("\r" + " " * self._drawn + "\r")
            self._stream.flush()
            self._drawn = 0

    async def run(self) -> None:
        """Until cancelled; the line is erased on the way out."""
        try:
            while True:
                width = shutil.get_terminal_size((100, 20)).columns - 1
                line = render_restore_line(self._tracker.in_progress(), time.monotonic(), width)
                if line:
                    self._stream.write("\r" + line.ljust(self._drawn))
                    self._stream.flush()
                    self._drawn = len(line)
                else:
                    self.erase()
                await asyncio.sleep(self._interval)
        finally:
            self.erase()

    def log_filter(self) -> logging.Filter:
        """For the terminal's log handlers: erase the bar before a record is written below it."""
        bar = self

        class _EraseBar(logging.Filter):
            def filter(self, record: logging.LogRecord) -> bool:
                bar.erase()
                return True

        return _EraseBar()


@contextlib.asynccontextmanager
async def terminal_progress_bar(tracker: RestoreProgressTracker, stream: TextIO | None = None) -> AsyncIterator[None]:
    """Draw the restoration bar on `stream` (default stderr) while the body runs, if it is a terminal."""
    stream = sys.stderr if stream is None else stream
    if not stream.isatty():
        yield
        return
    bar = RestoreProgressBar(tracker, stream)
    erase = bar.log_filter()
    handlers = [h for h in logging.getLogger().handlers if getattr(h, "stream", None) is stream]
    for handler in handlers:
        handler.addFilter(erase)
    task = asyncio.create_task(bar.run(), name="restore-progress-bar")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        for handler in handlers:
            handler.removeFilter(erase)
