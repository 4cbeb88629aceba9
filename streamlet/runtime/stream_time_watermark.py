"""How far in event time each stream thread of a client stands, per sub-topology, while they catch up.

Every thread writes to every partition of a repartition topic. If one thread replays its share of a backlog
minutes of event time ahead of another, their writes interleave in each repartition partition out of time order,
and downstream windows close before the slower thread's records arrive. So the threads of one client advance
together: each reports, per sub-topology, where its `EventTimeMerge` stands (`position`), and takes no record
later than the lowest position of the other threads plus the slice (`ceiling`). The thread that is furthest
behind is never held back, so they cannot all wait for each other; the ones ahead let their queues fill and
stop fetching until it catches up. A thread reports from the moment it is assigned its tasks (they may be
anywhere until they fetched), so a thread that starts later is not left behind by one that started first.

A thread that is caught up (nothing queued, nothing to fetch) reports nothing and holds nobody back. A report
not renewed for `stale_after_s` (a thread stuck in a long rebalance or restore) is ignored, so one stalled
thread cannot stop the others for longer than that. Threads share one asyncio loop: no locking is needed.

Processes of one client group do not share this (see the README's "Replaying a backlog").
"""

from __future__ import annotations

import time
from collections.abc import Callable

from streamlet.runtime.event_time_merge import NO_CEILING

#: a thread's report older than this (seconds) no longer holds the other threads back
STALE_AFTER_S = 10.0


class StreamTimeWatermark:
    """Per sub-topology, the event time each thread of the client has reached: the lowest bounds the others."""

    def __init__(self, stale_after_s: float = STALE_AFTER_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._stale_after_s = stale_after_s
        self._clock = clock
        # subtopology -> thread -> (position, when reported)
        self._positions: dict[int, dict[str, tuple[int, float]]] = {}

    def report(self, thread: str, subtopology: int, position: int | None) -> None:
        """Where `thread` stands in `subtopology` (None: caught up, holds nobody back)."""
        positions = self._positions.setdefault(subtopology, {})
        if position is None:
            positions.pop(thread, None)
        else:
            positions[thread] = (position, self._clock())

    def ceiling(self, thread: str, subtopology: int, slice_ms: int) -> int:
        """The latest timestamp `thread` may take in `subtopology`: `slice_ms` past the lowest position another
        thread reported recently (NO_CEILING if none did)."""
        positions = self._positions.get(subtopology)
        if not positions:
            return NO_CEILING
        oldest = self._clock() - self._stale_after_s
        lowest = min((at for name, (at, when) in positions.items() if name != thread and when >= oldest), default=None)
        return NO_CEILING if lowest is None else lowest + slice_ms

    def forget(self, thread: str) -> None:
        """`thread` stopped: it holds nobody back any more."""
        for positions in self._positions.values():
            positions.pop(thread, None)
