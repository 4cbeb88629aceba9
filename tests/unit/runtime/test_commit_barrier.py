"""CommitBarrier: no thread of a closing client leaves the group before every thread has committed."""

from __future__ import annotations

import asyncio

from streamlet.runtime.commit_barrier import CommitBarrier


async def test_no_thread_passes_until_every_thread_has_arrived() -> None:
    barrier = CommitBarrier(3, timeout_s=60)
    first, second = asyncio.create_task(barrier.arrive()), asyncio.create_task(barrier.arrive())
    for _ in range(10):  # let both run as far as they can
        await asyncio.sleep(0)
    assert not first.done() and not second.done()
    await barrier.arrive()  # the last thread's commit: all three go on
    await asyncio.gather(first, second)


async def test_a_thread_that_never_arrives_holds_the_others_only_until_the_timeout() -> None:
    barrier = CommitBarrier(2, timeout_s=0.01)
    await barrier.arrive()  # returns (after the timeout) although the second party never came


async def test_no_running_thread_no_wait() -> None:
    await CommitBarrier(0, timeout_s=60).arrive()
