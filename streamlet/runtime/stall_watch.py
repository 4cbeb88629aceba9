"""StallWatch: notices that this whole process stopped running for a while (SIGSTOP, a frozen VM, a long GC).

A paused worker wakes up believing it still owns its tasks, and its loop may reach a commit before its
heartbeat learns otherwise. Measuring the stream thread's own loop cannot tell a freeze from a legitimate
wait (aiokafka's `getmany()` blocks while the group rebalances), so a tiny task ticks on the same event loop
instead: if the gap between two ticks exceeds the session timeout, the heartbeats (on that loop too) stopped
just as long, and the group has most likely moved on.
"""

from __future__ import annotations

import asyncio
import time


class StallWatch:
    def __init__(self, threshold_s: float, tick_s: float = 0.5) -> None:
        self.threshold_s = threshold_s
        self.tick_s = tick_s
        self._stalled = False
        self._last_tick = time.monotonic()
        self.woke_at = float("-inf")  # when the last stall seen ended (monotonic)

    async def run(self) -> None:
        """Tick until cancelled (the owner cancels and awaits it on shutdown)."""
        self._last_tick = time.monotonic()
        while True:
            await asyncio.sleep(self.tick_s)
            self._check(time.monotonic())

    def _check(self, now: float) -> None:
        if now - self._last_tick > self.threshold_s:
            self._stalled = True
            self.woke_at = now
        self._last_tick = now

    def stalled(self) -> bool:
        """True once after a stall was seen (the caller handles it).

        Also checked on the spot: after a freeze, whichever task runs first must know at once, before the
        tick task has had its turn.
        """
        self._check_on_the_spot()
        stalled, self._stalled = self._stalled, False
        return stalled

    def froze_after(self, moment: float) -> bool:
        """Whether a stall ended after the monotonic `moment` (checked on the spot too). Unlike `stalled()` it
        consumes nothing: the producer asks it for each batch, and the thread still learns of the stall."""
        self._check_on_the_spot()
        return self.woke_at > moment

    def _check_on_the_spot(self) -> None:
        """A stall that is over already, seen before the tick task runs again (a check that is no tick: the last
        tick's time stays)."""
        now = time.monotonic()
        if now - self._last_tick > self.threshold_s:
            self._check(now)

    def mark_stalled(self) -> None:
        self._stalled = True
