"""Pauses of tasks that stayed where they were, from an experiment's `metrics.jsonl` (pure: lines in, pauses out).

Issue 22's promise for cooperative rebalancing is that a task which does not change owner never stops. A
protocol comparison therefore needs each staying task's worst pause, and it must not be drowned by what moves
cost (a moved task restores; a new client starts up), which is reported apart (moves, time not RUNNING).

Both kinds of pause are read from the owner's own metrics events, one per `interval_ms`, whose counts are since
the process started:

* **not RUNNING**: a stretch of consecutive events in which the task's `not_running_ms` grew (ThreadMetrics
  charges it every 0.1 s while the task is assigned but not RUNNING: suspended, restoring, waiting). It is a
  staying task's pause when the task was RUNNING on that client in the two events before the stretch, stayed
  assigned there through it, and is RUNNING there again in the event that ends it: it stopped and resumed in
  place (eager suspends and resumes every task it keeps). A task that leaves never resumes there, and one that
  arrives was not RUNNING before, so neither counts. Two events, not one: ThreadMetrics charges the time since
  its last observation to the tasks not RUNNING then, so a task that just became RUNNING can still be charged
  for a loop that was busy elsewhere; one whole interval RUNNING rules that out. Adjacent stops merge at the
  event resolution.
* **no progress**: the task stayed RUNNING but its `records_processed` did not grow for at least one whole
  interval, between two events where it grew (a loop blocked in a rebalance would show here, not above). The
  gap is the time between those two events minus one interval, so it is exact to one interval. A gap is only
  counted when progress resumed, so the idle tail after the input ends is not a pause; a `rate = 0` step in the
  middle of a scenario does show as one.

A process that started over (its sequence went back) is a new series: nothing spans a restart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streamlet.experiments.client_metrics import metrics_events

RUNNING = "RUNNING"
NOT_RUNNING = "not RUNNING"
NO_PROGRESS = "no progress"


@dataclass(frozen=True)
class StayingPause:
    """One pause of a task that resumed on the client it was on (see the module docstring)."""

    client: str
    task: str
    seconds: float
    kind: str  # NOT_RUNNING or NO_PROGRESS
    end_ms: int  # the owner's event that closed the pause

    def describe(self) -> str:
        return f"{self.seconds:.2f}s ({self.task} on {self.client}, {self.kind})"


@dataclass(frozen=True)
class _Point:
    """One task in one metrics event of its client."""

    timestamp_ms: int
    interval_ms: int
    state: str | None  # None: not assigned to this client at that moment
    processed: int
    not_running_ms: float


def _series(lines: Sequence[str]) -> dict[tuple[str, int], dict[str, list[_Point]]]:
    """(process id, process run) -> task -> its points in event order; a damaged line is skipped (the
    report counts those already)."""
    out: dict[tuple[str, int], dict[str, list[_Point]]] = {}
    last_sequence: dict[str, int] = {}
    runs: dict[str, int] = {}
    for event in metrics_events(lines):
        if event is None:
            continue
        pid = event["process_id"]
        sequence = int(event.get("sequence", 0))
        if pid in last_sequence and sequence <= last_sequence[pid]:
            runs[pid] = runs.get(pid, 0) + 1  # the same process id started over: its counts restart
        last_sequence[pid] = sequence
        tasks = out.setdefault((pid, runs.get(pid, 0)), {})
        timestamp, interval = int(event.get("timestamp_ms", 0)), int(event.get("interval_ms", 0))
        entries: Mapping[str, Any] = event["tasks"]
        for task, entry in entries.items():
            if not isinstance(entry, Mapping):
                continue
            state = entry.get("state")
            tasks.setdefault(task, []).append(
                _Point(
                    timestamp,
                    interval,
                    state if isinstance(state, str) else None,
                    int(entry.get("records_processed", 0) or 0),
                    float(entry.get("not_running_ms", 0.0) or 0.0),
                )
            )
    return out


def _not_running_stretches(points: Sequence[_Point]) -> list[tuple[float, int]]:
    """(seconds, closing event's time) of each stop-and-resume-in-place in one task's series."""
    out: list[tuple[float, int]] = []
    start: int | None = None  # index of the event before the current stretch
    total = 0.0
    owned = True
    for i in range(1, len(points)):
        grew = points[i].not_running_ms - points[i - 1].not_running_ms
        if grew > 0:
            if start is None:
                start, total, owned = i - 1, 0.0, True
            total += grew
            owned = owned and points[i].state is not None
            continue
        if start is not None:
            ran_before = start >= 1 and points[start - 1].state == points[start].state == RUNNING
            if ran_before and owned and points[i].state == RUNNING:
                out.append((total / 1000.0, points[i].timestamp_ms))
            start = None
    return out


def _progress_gaps(points: Sequence[_Point]) -> list[tuple[float, int]]:
    """(seconds, resuming event's time) of each whole interval or more without progress while RUNNING."""
    out: list[tuple[float, int]] = []
    last: int | None = None  # index of the last event where the task progressed while RUNNING throughout
    for i in range(1, len(points)):
        point, before = points[i], points[i - 1]
        if point.state != RUNNING or before.state != RUNNING or point.not_running_ms > before.not_running_ms:
            last = None  # not RUNNING throughout: the other kind of pause
            continue
        if point.processed > before.processed:
            if last is not None and i - last > 1:  # at least one whole interval in between saw nothing
                gap = (point.timestamp_ms - points[last].timestamp_ms - point.interval_ms) / 1000.0
                if gap > 0:
                    out.append((gap, point.timestamp_ms))
            last = i
    return out


def staying_pauses(lines: Sequence[str], names: Mapping[str, str]) -> list[StayingPause]:
    """Every pause of a task that resumed where it was, longest first; `names`: process id -> client name."""
    out: list[StayingPause] = []
    for (pid, _), tasks in _series(lines).items():
        client = names.get(pid, pid[:8])
        for task, points in tasks.items():
            out += [StayingPause(client, task, s, NOT_RUNNING, at) for s, at in _not_running_stretches(points)]
            out += [StayingPause(client, task, s, NO_PROGRESS, at) for s, at in _progress_gaps(points)]
    out.sort(key=lambda p: (-p.seconds, p.client, p.task, p.end_ms))
    return out


def longest(pauses: Sequence[StayingPause] | None) -> str:
    """The report's cell: the longest pause, "0" when tasks stayed but never paused, "-" without metrics."""
    if pauses is None:
        return "-"
    return pauses[0].describe() if pauses else "0"
