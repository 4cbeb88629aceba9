"""The stuck-test watch (tests/support/stuck_tests.py): a test stuck in an await fails with that await's traceback."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.stuck_tests import StuckTestWatch


async def test_a_test_stuck_in_an_await_is_cancelled_there() -> None:
    watch = StuckTestWatch(after_s=0.2, poll_s=0.05)
    watch.started("a node id", "test_a_test_stuck_in_an_await_is_cancelled_there")
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    try:
        with pytest.raises(asyncio.CancelledError, match="stuck-test watch: a node id ran for over 0 s"):
            await asyncio.wait_for(asyncio.shield(never), timeout=30)  # cancelled by the watch long before
    finally:
        watch.stop()
