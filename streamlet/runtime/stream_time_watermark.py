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

The processes of one group share it too, through Kafka (`EventTimeExchange`): each publishes its threads'
lowest position per sub-topology and reads the others', which bound its threads as another thread's would
(`report_process`), but `drift_ms` past them rather than the slice. A report crosses the broker in a few hundred
milliseconds, in which a thread replaying a backlog can run minutes of event time ahead; so, after each
assignment, a client that has heard from another process holds its merged sub-topologies back until every other
process it hears from has reported the same group generation applied (its positions then include its new tasks),
at most `stale_after_s`. A fixed hold alone was not enough: a loaded process applies its assignment seconds
after the others at worst, and meanwhile they ran ahead of the tasks it was taking over. The fixed hold
(`hold_ms`) is left for processes that say neither their generation nor their tasks (an earlier release's): one
that does is waited for exactly as long as it takes, so in steady state, where every process applies an
assignment at about the same moment, the tasks a cooperative rebalance leaves in place pause for a report's
round trip, not for `hold_ms` per round.
Nor is waiting for the processes heard from enough when processes start together: a loaded process's first
report can arrive after another's first assignment, which then ran its share of the backlog to the end alone. So
each report also names the process's tasks of the merged sub-topologies, and a client given such tasks for the
first time, owning only some of a sub-topology's while catching up in it, holds back until the processes that
reported that generation, with its own tasks, own them all (again at most `stale_after_s`). Later assignments do
not wait for that: by then the others are heard from, and in a cooperative rebalance the tasks it revokes are
owned by nobody until the follow-up round, a wait its staying tasks would pay in steady state too. A report
without tasks (an earlier release's) leaves the coverage unknown: only the generation is waited for then.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Collection, Mapping

from streamlet.runtime.event_time_merge import NO_CEILING

#: a thread's report older than this (seconds) no longer holds the other threads back
STALE_AFTER_S = 10.0

#: the ceiling while held: below any record's timestamp
HELD = -(2**63)


class StreamTimeWatermark:
    """Per sub-topology, the event time each thread of the client has reached: the lowest bounds the others."""

    def __init__(self, stale_after_s: float = STALE_AFTER_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._stale_after_s = stale_after_s
        self._clock = clock
        # subtopology -> thread (or "process:<id>") -> (position, when reported)
        self._positions: dict[int, dict[str, tuple[int, float]]] = {}
        self._local: set[str] = set()  # the names of this client's threads that reported
        # other processes -> when last heard from, and the group generation they applied (None: not said)
        self._processes: dict[str, tuple[float, int | None]] = {}
        self._generations: dict[str, int] = {}  # the group generation each of this client's threads applied last
        # merged sub-topology -> partitions of the active tasks: of each thread of this client, of each other process
        # (None: its reports do not say), and how many tasks each such sub-topology has (0: not known)
        self._tasks: dict[str, dict[int, frozenset[int]]] = {}
        self._process_tasks: dict[str, dict[int, frozenset[int]] | None] = {}
        self._task_counts: dict[int, int] = {}
        self._first_tasks = False  # this client was just given merged tasks for the first time: wait for coverage
        self._held_until = 0.0
        self._awaited: tuple[int, float] | None = None  # (generation, until when) the other processes must reach
        # set by the exchange (0 while processes do not share positions): how long to hold back after an
        # assignment, and how far past another process's position a thread may go. A process's report is a few
        # hundred ms old when it arrives: within the slice, processes would advance in lockstep at that pace
        self.hold_ms = 0
        self.drift_ms = 0
        self._changed: asyncio.Event | None = None  # set by every report: wakes a thread waiting for the others

    def report(self, thread: str, subtopology: int, position: int | None) -> None:
        """Where `thread` stands in `subtopology` (None: caught up, holds nobody back)."""
        self._local.add(thread)
        self._set(thread, subtopology, position)

    def _set(self, name: str, subtopology: int, position: int | None) -> None:
        if self._changed is not None:
            self._changed.set()
        positions = self._positions.setdefault(subtopology, {})
        if position is None:
            positions.pop(name, None)
        else:
            positions[name] = (position, self._clock())

    def report_process(
        self,
        process: str,
        positions: dict[int, int],
        generation: int | None = None,
        tasks: Mapping[int, Collection[int]] | None = None,
    ) -> None:
        """Another process's threads stand at `positions` (its lowest per sub-topology; a sub-topology left out
        holds nobody back), having all applied the group `generation` (-1: not yet any; None: not said), with
        `tasks`: the partitions of its active tasks per merged sub-topology (None: not said)."""
        name = f"process:{process}"
        self._processes[process] = (self._clock(), generation)
        self._process_tasks[process] = None if tasks is None else {s: frozenset(p) for s, p in tasks.items()}
        for subtopology in set(self._positions) | set(positions):
            self._set(name, subtopology, positions.get(subtopology))

    def local_positions(self) -> dict[int, int]:
        """This process's lowest recent position per sub-topology: what it tells the other processes."""
        oldest = self._clock() - self._stale_after_s
        lowest: dict[int, int] = {}
        for subtopology, positions in self._positions.items():
            for name, (at, when) in positions.items():
                if name in self._local and when >= oldest and at < lowest.get(subtopology, NO_CEILING):
                    lowest[subtopology] = at
        return lowest

    def local_generation(self) -> int:
        """The group generation every thread of this client has applied (-1 before each got an assignment):
        what it tells the other processes with its positions."""
        return min(self._generations.values(), default=-1)

    def local_tasks(self) -> dict[int, list[int]]:
        """The partitions of this client's active tasks per merged sub-topology: what it tells the other processes."""
        owned: dict[int, set[int]] = {}
        for tasks in self._tasks.values():
            for subtopology, partitions in tasks.items():
                owned.setdefault(subtopology, set()).update(partitions)
        return {subtopology: sorted(partitions) for subtopology, partitions in owned.items()}

    def assignment_applied(
        self,
        thread: str,
        generation: int | None,
        tasks: Mapping[int, Collection[int]] | None = None,
        task_counts: Mapping[int, int] | None = None,
    ) -> None:
        """`thread` applied the assignment of the group `generation`, with `tasks` (partitions of its active tasks
        per merged sub-topology, of `task_counts` tasks each): hold back until each other process reported it
        applied that generation too (its positions for the tasks it gained with them), and, the first time this
        client is given such tasks, until the processes that did own the tasks it does not."""
        if generation is not None:
            self._generations[thread] = generation
        if tasks is not None:
            had_tasks = any(self._tasks.values())
            self._tasks[thread] = {s: frozenset(p) for s, p in tasks.items() if p}
            self._first_tasks = self._first_tasks or (not had_tasks and bool(self._tasks[thread]))
        if task_counts is not None:
            self._task_counts.update(task_counts)
        if self._changed is not None:
            self._changed.set()  # the new generation goes out at once
        if self.hold_ms <= 0:
            return
        now = self._clock()
        oldest = now - self._stale_after_s
        if any(
            when >= oldest and reached is None and self._process_tasks.get(process) is None
            for process, (when, reached) in self._processes.items()
        ):  # an earlier release's process (one that stops says its tasks: none): its report may be on its way
            self._held_until = max(self._held_until, now + self.hold_ms / 1000)
        if generation is not None:
            self._awaited = (generation, now + self._stale_after_s)

    def _awaiting(self, now: float) -> bool:
        """Whether a process heard from recently has not yet reported the awaited generation applied, or some
        tasks of a sub-topology this client is catching up in are owned by no process that did."""
        if self._awaited is None:
            return False
        generation, until = self._awaited
        if now < until:
            oldest = now - self._stale_after_s
            for when, reached in self._processes.values():
                if when >= oldest and reached is not None and reached < generation:
                    return True
            if self._first_tasks and self._uncovered(generation, oldest):
                return True
        self._awaited = None
        self._first_tasks = False
        return False

    def _uncovered(self, generation: int, oldest: float) -> bool:
        """Whether this client, catching up in a merged sub-topology of which it owns some tasks but not all, does
        not yet know the owners of the others (processes that reported `generation` applied, recently)."""
        local = self.local_tasks()
        for subtopology, count in self._task_counts.items():
            owned = local.get(subtopology)
            if not owned or len(owned) >= count or not self._catching_up(subtopology, oldest):
                continue
            covered = set(owned)
            for process, tasks in self._process_tasks.items():
                when, reached = self._processes[process]
                if when < oldest or reached is None or reached < generation:
                    continue
                if tasks is None:
                    return False  # an earlier release's process: its tasks are not known
                covered.update(tasks.get(subtopology, ()))
            if len(covered) < count:
                return True
        return False

    def _catching_up(self, subtopology: int, oldest: float) -> bool:
        positions = self._positions.get(subtopology, {})
        return any(name in self._local and when >= oldest for name, (_, when) in positions.items())

    def ceiling(self, thread: str, subtopology: int, slice_ms: int) -> int:
        """The latest timestamp `thread` may take in `subtopology`: `slice_ms` past the lowest position another
        thread of this client reported recently, and `drift_ms` past another process's (NO_CEILING if none did)."""
        now = self._clock()
        if now < self._held_until or self._awaiting(now):
            return HELD
        positions = self._positions.get(subtopology)
        if not positions:
            return NO_CEILING
        oldest = now - self._stale_after_s
        ceiling = NO_CEILING
        local = self._local
        for name, (at, when) in positions.items():
            if name != thread and when >= oldest:
                ceiling = min(ceiling, at + (slice_ms if name in local else self.drift_ms))
        return ceiling

    async def changed(self, timeout_s: float) -> None:
        """Wait until a thread or another process reports (at most `timeout_s`): a thread whose queues are full
        waits here for the ones it waits for, rather than a fixed poll interval."""
        if self._changed is None:
            self._changed = asyncio.Event()
        self._changed.clear()
        # asyncio.timeout, not wait_for: 3.11's wait_for loses a cancellation that lands as the event is set
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._changed.wait()

    def forget(self, thread: str) -> None:
        """`thread` stopped: it holds nobody back any more."""
        self._generations.pop(thread, None)
        self._tasks.pop(thread, None)
        for positions in self._positions.values():
            positions.pop(thread, None)
