"""StallWatch sees a frozen event loop, and only that: a coroutine that merely waits is not a stall."""

from __future__ import annotations

import asyncio
import contextlib
import time

from streamlet.runtime.stall_watch import StallWatch


async def watching(watch: StallWatch) -> asyncio.Task[None]:
    task = asyncio.create_task(watch.run())
    await asyncio.sleep(0.06)
    return task


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_a_blocked_event_loop_is_a_stall_reported_once() -> None:
    watch = StallWatch(threshold_s=0.2, tick_s=0.02)
    task = await watching(watch)
    time.sleep(0.35)  # nothing on this loop runs: not the heartbeats either
    await asyncio.sleep(0.05)
    await stop(task)
    assert watch.stalled() and not watch.stalled()


async def test_a_long_await_is_not_a_stall() -> None:
    watch = StallWatch(threshold_s=0.2, tick_s=0.02)
    task = await watching(watch)
    await asyncio.sleep(0.4)  # e.g. getmany() waiting for a rebalance: the loop (and heartbeats) keep running
    await stop(task)
    assert not watch.stalled()


async def test_a_stall_is_seen_at_once_by_whoever_asks_first() -> None:
    watch = StallWatch(threshold_s=0.2, tick_s=0.02)
    task = await watching(watch)
    time.sleep(0.35)
    assert watch.stalled()  # before the tick task has run again
    await stop(task)


async def test_froze_after_says_whether_a_stall_ended_after_a_moment_and_leaves_it_to_the_thread() -> None:
    watch = StallWatch(threshold_s=0.2, tick_s=0.02)
    task = await watching(watch)
    before = time.monotonic()
    assert not watch.froze_after(before)
    time.sleep(0.35)
    assert watch.froze_after(before)  # on the spot, before the tick task has run again
    after = time.monotonic()
    assert not watch.froze_after(after)  # at once: an await here could itself be starved past the threshold
    await asyncio.sleep(0.05)
    assert watch.froze_after(before)  # the tick task ran meanwhile: the stall is still remembered
    await stop(task)
    assert watch.stalled() and not watch.stalled()  # the thread still learns of it, once
