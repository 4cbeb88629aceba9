"""The worker's restoration progress bar: the line it draws, and that it draws only on a terminal."""

from __future__ import annotations

import asyncio
import io
import logging

from aiokafka.structs import TopicPartition

from streamlet.progress_bar import RestoreProgressBar, render_restore_line, terminal_progress_bar
from streamlet.runtime.restore_listener import RestoreProgress, RestoreProgressTracker

CL = "app-counts-changelog"


def progress(
    partition: int, start: int, end: int, position: int, restored: int, store: str = "counts"
) -> RestoreProgress:
    p = RestoreProgress(store, TopicPartition(CL, partition), start, end, started=0.0, restored=restored)
    p.position = position
    return p


def test_one_line_per_store_over_its_partitions() -> None:
    line = render_restore_line([progress(0, 0, 1000, 500, 500), progress(1, 0, 1000, 0, 0)], now=10.0)
    # 500 of 2000 offsets; one partition has not moved yet, so no ETA
    assert line == "restoring counts x2 [####------------] 25% 500/2000 50/s ETA ?"
    line = render_restore_line(
        [progress(0, 0, 1000, 500, 500), progress(2, 0, 400, 300, 300, store="windows")], now=10.0, width=200
    )
    assert line == (
        "restoring counts [########--------] 50% 500/1000 50/s ETA 10s | "
        "windows [############----] 75% 300/400 30/s ETA 3s"
    )
    assert render_restore_line([], now=1.0) == ""
    assert len(render_restore_line([progress(0, 0, 1000, 500, 500)], now=10.0, width=30)) == 30


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_the_bar_redraws_in_place_and_erases_itself() -> None:
    tracker = RestoreProgressTracker()
    tracker.on_restore_start(TopicPartition(CL, 0), "counts", 0, 100)
    terminal = _Terminal()
    bar = RestoreProgressBar(tracker, terminal, interval=0.01)
    task = asyncio.create_task(bar.run())
    await asyncio.sleep(0.05)
    drawn = terminal.getvalue()
    assert drawn.startswith("\rrestoring counts [") and "\n" not in drawn
    tracker.on_restore_end(TopicPartition(CL, 0), "counts", 100)
    await asyncio.sleep(0.05)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert terminal.getvalue().endswith("\r")  # erased once the restoration ended


async def test_nothing_is_drawn_on_a_non_terminal_and_log_lines_erase_the_bar() -> None:
    tracker = RestoreProgressTracker()
    tracker.on_restore_start(TopicPartition(CL, 0), "counts", 0, 100)
    plain = io.StringIO()
    async with terminal_progress_bar(tracker, plain):
        await asyncio.sleep(0.05)
    assert plain.getvalue() == ""

    terminal = _Terminal()
    handler = logging.StreamHandler(terminal)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        async with terminal_progress_bar(tracker, terminal):
            await asyncio.sleep(0.05)
            logging.getLogger("streamlet.test").warning("a log line")
            assert terminal.getvalue().endswith("\r" + "a log line\n")  # the bar was erased first
    finally:
        root.removeHandler(handler)
    assert handler.filters == []
