"""Per-client numbers of an experiment from its `metrics.jsonl` (the clients' metrics events, in order).

Pure, like `report`: lines in, totals out, and a damaged line is counted, never raised. Counts in an event
are since that client process started, so a client's totals are its last event, plus, when the same
process id started over (its event sequence went back to 1), the last event before each restart.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamlet.runtime.metrics_event import parse_metrics_event


@dataclass
class ClientTotals:
    """One client of a run (one process id, over its process runs)."""

    name: str
    process_id: str
    events: int = 0
    starts: int = 0
    records_processed: int = 0
    rebalances: int = 0
    not_running_s: dict[str, float] = field(default_factory=dict)  # task -> seconds assigned but not RUNNING
    # records and key + value bytes restored; None when an event lacks the field (older workers, version 1)
    restored_records: int | None = 0
    restored_bytes: int | None = 0
    # records the client's tasks dropped (late, null keys, ...); None when an event lacks it (version < 3)
    dropped_records: int | None = 0

    @property
    def total_not_running_s(self) -> float:
        return sum(self.not_running_s.values())


def _add_run(totals: ClientTotals, last: Mapping[str, Any]) -> None:
    """Bank the counts of one process run (its last event)."""
    totals.starts += 1
    totals.records_processed += int(last.get("records_processed", 0))
    totals.rebalances += int(last.get("rebalances", 0))
    for task, entry in last.get("tasks", {}).items():
        seconds = float(entry.get("not_running_ms", 0.0)) / 1000.0
        totals.not_running_s[task] = totals.not_running_s.get(task, 0.0) + seconds
    totals.restored_records = _add_restored(totals.restored_records, last.get("restored_total"), "records")
    totals.restored_bytes = _add_restored(totals.restored_bytes, last.get("restored_bytes_total"), "bytes")
    dropped = last.get("dropped_records_total")
    totals.dropped_records = (
        None if totals.dropped_records is None or dropped is None else totals.dropped_records + int(dropped)
    )


def _add_restored(total: int | None, entries: Sequence[Mapping[str, Any]] | None, unit: str) -> int | None:
    if total is None or entries is None:
        return None
    return total + sum(int(e.get(unit, 0)) for e in entries)


def _known(value: int | None) -> str:
    return "?" if value is None else str(value)


def total_restored(totals: Sequence[ClientTotals], unit: str) -> str:
    """All clients' restored `unit` ("records" or "bytes") as report text; "?" if a client's events lack it."""
    values = [c.restored_records if unit == "records" else c.restored_bytes for c in totals]
    return "?" if None in values else str(sum(filter(None, values)))


def metrics_events(lines: Sequence[str]) -> Iterator[dict[str, Any] | None]:
    """Each non-blank line of `metrics.jsonl` parsed, None for one that is damaged or of an unknown version."""
    for line in lines:
        if not line.strip():
            continue
        try:
            yield parse_metrics_event(json.loads(line))
        except ValueError:
            yield None


def client_totals(lines: Sequence[str], names: Mapping[str, str]) -> tuple[list[ClientTotals], list[str]]:
    """Totals per client (named by `names`: process id -> the scenario's name) and the problems found."""
    runs: dict[str, list[dict[str, Any]]] = {}  # process id -> the last event of each run, in order
    counts: dict[str, int] = {}
    unreadable = 0
    for event in metrics_events(lines):
        if event is None:
            unreadable += 1
            continue
        counts[event["process_id"]] = counts.get(event["process_id"], 0) + 1
        pid_runs = runs.setdefault(event["process_id"], [])
        if pid_runs and int(event.get("sequence", 0)) > int(pid_runs[-1].get("sequence", 0)):
            pid_runs[-1] = event
        else:
            pid_runs.append(event)  # the first event, or the process started over
    totals = []
    for pid, pid_runs in runs.items():
        client = ClientTotals(names.get(pid, pid[:8]), pid, events=counts[pid])
        for last in pid_runs:
            _add_run(client, last)
        totals.append(client)
    totals.sort(key=lambda c: c.name)
    problems = [f"metrics.jsonl: {unreadable} unreadable or unknown line(s) skipped"] if unreadable else []
    return totals, problems


def render_client_totals(totals: Sequence[ClientTotals]) -> list[str]:
    """Markdown: records processed, time not RUNNING, records and key + value bytes restored and records
    dropped per client, then each task's time over all clients."""
    out = [
        "| client | records processed | time tasks not RUNNING (s) | longest task (s) | rebalances | starts "
        "| records restored | bytes restored | records dropped |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in totals:
        worst = max(c.not_running_s.items(), key=lambda kv: (kv[1], kv[0]), default=None)
        longest = "-" if worst is None else f"{worst[0]} {worst[1]:.1f}"
        out.append(
            f"| {c.name} | {c.records_processed} | {c.total_not_running_s:.1f} | {longest} | {c.rebalances} "
            f"| {c.starts} | {_known(c.restored_records)} | {_known(c.restored_bytes)} | {_known(c.dropped_records)} |"
        )
    by_task: dict[str, float] = {}
    for c in totals:
        for task, seconds in c.not_running_s.items():
            by_task[task] = by_task.get(task, 0.0) + seconds
    if by_task:
        out += ["", "| task | time not RUNNING, all clients (s) |", "|---|---|"]
        out += [f"| {task} | {seconds:.1f} |" for task, seconds in sorted(by_task.items())]
    return out
