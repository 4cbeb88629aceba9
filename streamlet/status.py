"""`streamlet status`: the group of an application as its own topics tell it, from any machine.

It reads the latest assignment event (`<application_id>-assignments`) and each client's latest metrics
event (`<application_id>-metrics`) and prints, per client, its active / standby / warmup tasks with their
states, records processed and time not RUNNING, the records its processors dropped (late records, null
keys, ...; per processor and reason), its consumer lag, its restorations under way, and whether
the group leader scheduled a probing (follow-up) rebalance. `read_group_events` is the Kafka half;
`format_status` is pure, so what it prints is testable without Kafka.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition

from streamlet.assignment.history import EVENT_TYPE as ASSIGNMENT_EVENT
from streamlet.assignment.history import HISTORY_VERSION, assignment_history_topic
from streamlet.kafka import connect
from streamlet.kafka.connect import Cluster
from streamlet.runtime.metrics_event import metrics_topic, parse_metrics_event
from streamlet.runtime.restore_listener import format_eta

#: How many of the newest metrics events are read to find each client's latest one.
METRICS_LOOKBACK = 2000
#: A client whose latest metrics event is older than this many of its intervals is shown as silent.
STALE_INTERVALS = 3


@dataclass
class GroupEvents:
    """What the application's topics hold: the latest assignment event and each client's latest metrics."""

    application_id: str
    assignment: dict[str, Any] | None = None
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)  # process id -> latest event
    missing: list[str] = field(default_factory=list)  # topics that do not exist


async def _tail(consumer: AIOKafkaConsumer, tp: TopicPartition, lookback: int, timeout: float = 30.0) -> list[bytes]:
    """The values of the last `lookback` records of a one-partition topic (what arrives within `timeout`)."""
    consumer.assign([tp])
    end = (await consumer.end_offsets([tp]))[tp]
    start = max(0, end - lookback)
    if start >= end:
        return []
    consumer.seek(tp, start)
    values: list[bytes] = []
    deadline = asyncio.get_running_loop().time() + timeout
    while await consumer.position(tp) < end and asyncio.get_running_loop().time() < deadline:
        batch = await consumer.getmany(tp, timeout_ms=1000)
        values.extend(r.value for r in batch.get(tp, []) if r.value is not None)
    return values


async def read_group_events(cluster: Cluster, application_id: str) -> GroupEvents:
    """Read the latest assignment event and each client's latest metrics event of `application_id`."""
    events = GroupEvents(application_id)
    consumer = connect.consumer(cluster, enable_auto_commit=False)
    await connect.start(consumer, cluster, f"the reader of {application_id}'s group events")
    try:
        topics = await consumer.topics()
        history, metrics = assignment_history_topic(application_id), metrics_topic(application_id)
        events.missing = [t for t in (history, metrics) if t not in topics]
        if history in topics:
            for raw in reversed(await _tail(consumer, TopicPartition(history, 0), 10)):
                event = _assignment_event(raw)
                if event is not None:
                    events.assignment = event
                    break
        if metrics in topics:
            for raw in await _tail(consumer, TopicPartition(metrics, 0), METRICS_LOOKBACK):
                parsed = parse_metrics_event(raw)
                if parsed is not None:
                    events.metrics[parsed["process_id"]] = parsed  # in offset order: the last one wins
    finally:
        await consumer.stop()
    return events


def _assignment_event(raw: bytes) -> dict[str, Any] | None:
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    if isinstance(event, dict) and event.get("type") == ASSIGNMENT_EVENT and event.get("version") == HISTORY_VERSION:
        return event
    return None


def _clock(ms: int) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(ms / 1000)) + " UTC"


def _ago(now_ms: int, then_ms: int) -> str:
    seconds = max(0.0, (now_ms - then_ms) / 1000)
    return f"{seconds:.1f}s ago" if seconds < 60 else f"{format_eta(seconds)} ago"


@dataclass(frozen=True)
class TaskRow:
    """One task of a client as `streamlet status` and the workers' /group page show it."""

    kind: str  # active, standby, warmup; "" for a client missing from the latest assignment
    task: str
    state: str  # "?": no metrics for the task; "-": the client does not own it (yet, or any more)
    processed: int | None = None
    not_running_s: float | None = None
    lag: int | None = None  # changelog lag as the assignor saw it (standbys and warmups)
    dropped: int | None = None  # records its processors dropped (late, null keys, ...) since the client started
    dropped_rate: float | None = None  # per second, lately


def task_rows(client: Mapping[str, Any] | None, metrics: Mapping[str, Any] | None) -> list[TaskRow]:
    """The client's tasks from the latest assignment (or, without one, from its metrics), with their states."""
    tasks = (metrics or {}).get("tasks", {})
    if client is None:
        listed = [("", t) for t in sorted(tasks) if tasks[t].get("state")]
    else:
        listed = [(kind, t) for kind in ("active", "standby", "warmup") for t in client.get(kind, [])]
    lags = (client or {}).get("lags", {})
    rows = []
    for kind, task in listed:
        entry = tasks.get(task) if metrics else None
        lag = lags.get(task)
        rows.append(
            TaskRow(
                kind,
                task,
                "?" if entry is None else str(entry.get("state") or "-"),
                None if entry is None else int(entry.get("records_processed", 0)),
                None if entry is None else float(entry.get("not_running_ms", 0.0)) / 1000,
                lag if isinstance(lag, int) and lag >= 0 and kind != "active" else None,
                None if entry is None else int(entry.get("dropped_records_total", 0)),
                None if entry is None else float(entry.get("dropped_records_rate", 0.0)),
            )
        )
    return rows


def _task_line(row: TaskRow) -> str:
    parts = [f"    {row.kind:<8}{row.task:<7}{row.state:<10}"]
    if row.processed is not None:
        parts.append(f"processed {row.processed:>9}")
        parts.append(f"  not running {row.not_running_s or 0.0:.1f}s")
    if row.dropped:
        parts.append(f"  dropped {row.dropped} ({row.dropped_rate or 0.0:.1f}/s)")
    if row.lag is not None:
        parts.append(f"  lag {row.lag} (as the assignor saw it)")
    return "".join(parts).rstrip()


def _client_lines(client: Mapping[str, Any] | None, metrics: Mapping[str, Any] | None, now_ms: int) -> list[str]:
    pid = str((client or metrics or {}).get("process_id"))
    host = (client or {}).get("host") or (metrics or {}).get("host") or "-"
    head = f"client {pid} (host {host}"
    if client is not None:
        head += f", {client.get('capacity', '?')} threads"
    head += ")"
    lines = [head]
    if metrics is None:
        lines.append("  no metrics event (metrics_interval_ms=0, or the client has not published yet)")
    else:
        interval = int(metrics.get("interval_ms") or 5000)
        stale = now_ms - int(metrics.get("timestamp_ms", 0)) > STALE_INTERVALS * interval
        latency = metrics.get("commit_latency_ms", {})
        commit = (
            f", commit p50 {latency['p50']:.1f} ms max {latency['max']:.1f} ms"
            if latency.get("p50") is not None
            else ""
        )
        lines.append(
            f"  metrics {_ago(now_ms, int(metrics.get('timestamp_ms', 0)))}"
            + (" (SILENT: stopped or unreachable?)" if stale else "")
            + f": {metrics.get('records_processed', 0)} records processed, {metrics.get('rebalances', 0)} rebalances"
            + commit
        )
    if client is None:
        lines.append("  not in the latest assignment (joined since, or left)")
    lines += [_task_line(row) for row in task_rows(client, metrics)]
    if metrics is not None:
        consumer = metrics.get("consumer_lag", [])
        if consumer:
            total = sum(int(p["lag"]) for p in consumer)
            detail = ", ".join(f"{p['topic']}-{p['partition']}:{p['lag']}" for p in consumer)
            lines.append(f"  consumer lag {total} ({detail})")
        lines += _dropped_lines(metrics)
        for p in metrics.get("standby_lag", []):
            lines.append(f"  standby lag {p['topic']}-{p['partition']}: {p['lag']}")
        for r in metrics.get("restore", []):
            lines.append(
                f"  restoring {r['store']} from {r['topic']}-{r['partition']}: {r['percent']:.0f}% "
                f"({r['total'] - r['remaining']}/{r['total']}), {r['rate']:.0f} records/s, ETA {format_eta(r['eta_s'])}"
            )
    return lines


def _dropped_lines(metrics: Mapping[str, Any]) -> list[str]:
    """Per task and processor, the records it dropped, by reason (Kafka's dropped-records, broken down)."""
    lines = []
    for task, entry in sorted(metrics.get("tasks", {}).items()):
        by_processor: dict[str, list[str]] = {}
        for item in entry.get("dropped_records", []):
            by_processor.setdefault(str(item["processor"]), []).append(f"{item['count']} {item['reason']}")
        for processor, counts in sorted(by_processor.items()):
            lines.append(f"  dropped by {processor} in {task}: {', '.join(counts)}")
    return lines


def group_clients(events: GroupEvents, now_ms: int) -> list[tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]]:
    """(assignment entry, latest metrics) per client: the latest assignment's clients, then clients that
    published metrics recently but are not in it (joined since); silent ones that are not are history."""
    out: list[tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]] = []
    seen: set[str] = set()
    for client in (events.assignment or {}).get("clients", []):
        pid = str(client.get("process_id"))
        seen.add(pid)
        out.append((client, events.metrics.get(pid)))
    for pid, metrics in sorted(events.metrics.items()):
        interval = int(metrics.get("interval_ms") or 5000)
        if pid not in seen and now_ms - int(metrics.get("timestamp_ms", 0)) <= STALE_INTERVALS * interval:
            out.append((None, metrics))
    return out


def group_headline(events: GroupEvents, now_ms: int) -> list[str]:
    """The latest rebalance (generation, assignor, time, trigger, size) and the pending probing rebalance."""
    assignment = events.assignment
    if assignment is None:
        missing = f" (missing topics: {', '.join(events.missing)})" if events.missing else ""
        return [f"no assignment event yet{missing}"]
    clients = assignment.get("clients", [])
    out = [
        f"generation {assignment.get('generation')} by {assignment.get('assignor')} at "
        f"{_clock(int(assignment.get('timestamp_ms', 0)))} ({assignment.get('trigger')}): "
        f"{len(clients)} clients, {len(assignment.get('tasks', []))} tasks"
    ]
    deadline = assignment.get("followup_deadline_ms")
    if assignment.get("followup_scheduled") and isinstance(deadline, int):
        when = "due now" if deadline <= now_ms else f"in {format_eta((deadline - now_ms) / 1000)}"
        out.append(f"probing rebalance pending: scheduled for {_clock(deadline)} ({when})")
    else:
        out.append("no probing rebalance pending")
    return out


def format_status(events: GroupEvents, now_ms: int | None = None) -> str:
    """The group as `streamlet status` prints it."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    out = [f"application {events.application_id}", *[f"  {line}" for line in group_headline(events, now_ms)]]
    for client, metrics in group_clients(events, now_ms):
        out += ["", *_client_lines(client, metrics, now_ms)]
    return "\n".join(out) + "\n"
