"""Client metrics: one versioned JSON event per client, every `metrics_interval_ms`, in `<application_id>-metrics`.

The pure half (the I/O half is `streamlet.runtime.metrics_publisher`): a sample of the client's threads, its
restorations and its lags goes in, a JSON-ready dict comes out, so every field is testable without Kafka.
The same sample also feeds the worker's Prometheus endpoint (`streamlet.runtime.prometheus`).

Counts are since the client started ("records processed" of a task that moved away stays, so a group's
counts sum to what it processed). Commit latency is over the commits since the previous event.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka.structs import TopicPartition

from streamlet.runtime.restore_listener import RestoreProgress
from streamlet.task_id import TaskId

#: Version of the event's JSON shape; readers skip versions they do not know rather than misread them.
#: 2 added `restored_bytes_total`, 3 the dropped records; events of older versions (without them) are still read.
METRICS_VERSION = 3
KNOWN_VERSIONS = (1, 2, 3)
EVENT_TYPE = "streamlet.metrics"
#: Task states in the event beyond Kafka Streams' active ones: assigned, not opened yet; a standby.
PENDING = "PENDING"
STANDBY = "STANDBY"


def metrics_topic(application_id: str) -> str:
    """The internal topic holding an application's client metrics (one partition, time-retained)."""
    return f"{application_id}-metrics"


@dataclass(frozen=True)
class ThreadSample:
    """What one stream thread reports: its tasks' states now and its counters since it started."""

    name: str
    states: Mapping[TaskId, str]  # owned now: active state, PENDING or STANDBY
    processed: Mapping[TaskId, int]
    not_running_s: Mapping[TaskId, float]
    rebalances: int
    commits: int
    commit_total_s: float
    commit_latencies_s: Sequence[float]  # since the previous event
    consumer_lags: Mapping[TopicPartition, int] = field(default_factory=dict)
    # per task, records its processors dropped since the thread started: (processor, reason) -> count
    dropped: Mapping[TaskId, Mapping[tuple[str, str], int]] = field(default_factory=dict)


@dataclass(frozen=True)
class ClientSample:
    """Everything one metrics event holds, gathered at one instant."""

    application_id: str
    process_id: str
    host: str
    timestamp_ms: int
    sequence: int
    interval_ms: int
    threads: Sequence[ThreadSample]
    restoring: Sequence[RestoreProgress]
    standby_lags: Mapping[TopicPartition, int]
    now: float  # monotonic, for restoration rates
    restored_totals: Mapping[tuple[TopicPartition, str], int] = field(default_factory=dict)
    restored_bytes_totals: Mapping[tuple[TopicPartition, str], int] = field(default_factory=dict)
    dropped_rates: Mapping[TaskId, float] = field(default_factory=dict)  # per task, records dropped per second


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def _partitions(lags: Mapping[TopicPartition, int]) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition, "lag": lag} for tp, lag in sorted(lags.items())]


def _per_changelog(totals: Mapping[tuple[TopicPartition, str], int], name: str) -> list[dict[str, Any]]:
    return [
        {"store": store, "topic": tp.topic, "partition": tp.partition, name: count}
        for (tp, store), count in sorted(totals.items(), key=lambda kv: (kv[0][1], kv[0][0].topic, kv[0][0].partition))
    ]


def build_metrics_event(sample: ClientSample) -> dict[str, Any]:
    """The event of `sample` (see the module docstring); pure and deterministic."""
    tasks: dict[TaskId, dict[str, Any]] = {}

    def entry(task: TaskId) -> dict[str, Any]:
        return tasks.setdefault(task, {"state": None, "thread": None, "records_processed": 0, "not_running_ms": 0.0})

    dropped: dict[TaskId, dict[tuple[str, str], int]] = {}

    consumer_lags: dict[TopicPartition, int] = {}
    latencies: list[float] = []
    for thread in sample.threads:
        for task, count in thread.processed.items():
            entry(task)["records_processed"] += count
        for task, seconds in thread.not_running_s.items():
            entry(task)["not_running_ms"] = round(entry(task)["not_running_ms"] + _ms(seconds), 3)
        for task, state in thread.states.items():
            entry(task).update(state=state, thread=thread.name)
        for task, counts in thread.dropped.items():
            merged = dropped.setdefault(task, {})
            for key, count in counts.items():
                merged[key] = merged.get(key, 0) + count
        consumer_lags.update(thread.consumer_lags)
        latencies.extend(thread.commit_latencies_s)
    for task, counts in dropped.items():
        if not counts:
            continue
        item = entry(task)
        item["dropped_records_total"] = sum(counts.values())
        item["dropped_records_rate"] = sample.dropped_rates.get(task, 0.0)
        item["dropped_records"] = [
            {"processor": node, "reason": reason, "count": count} for (node, reason), count in sorted(counts.items())
        ]
    restore = [
        {
            "store": p.store,
            "topic": p.partition.topic,
            "partition": p.partition.partition,
            "restored": p.restored,
            "remaining": p.remaining,
            "total": p.total,
            "percent": round(100.0 * p.fraction, 1),
            "rate": round(p.rate(sample.now), 1),
            "eta_s": None if (eta := p.eta_s(sample.now)) is None else round(eta, 1),
        }
        for p in sample.restoring
    ]
    return {
        "type": EVENT_TYPE,
        "version": METRICS_VERSION,
        "application_id": sample.application_id,
        "process_id": sample.process_id,
        "host": sample.host,
        "timestamp_ms": sample.timestamp_ms,
        "sequence": sample.sequence,
        "interval_ms": sample.interval_ms,
        "threads": len(sample.threads),
        "tasks": {str(t): tasks[t] for t in sorted(tasks)},
        "records_processed": sum(e["records_processed"] for e in tasks.values()),
        # (version 3) Kafka's dropped-records-total of the client's tasks; a task that dropped records has
        # its total, its rate and, per processor and reason (late, null-key-or-value, ...), the counts
        "dropped_records_total": sum(e.get("dropped_records_total", 0) for e in tasks.values()),
        "consumer_lag": _partitions(consumer_lags),
        "restore": restore,
        "standby_lag": _partitions(sample.standby_lags),
        # records restored per store and changelog partition since the client started (finished ones too),
        # so a report can count what each task move cost even when a restore fell between two events
        "restored_total": _per_changelog(sample.restored_totals, "records"),
        # (version 2) the same in key + value bytes of the changelog records restored
        "restored_bytes_total": _per_changelog(sample.restored_bytes_totals, "bytes"),
        "commit_latency_ms": {
            "count": len(latencies),
            "p50": _ms(statistics.median(latencies)) if latencies else None,
            "max": _ms(max(latencies)) if latencies else None,
        },
        "commits": sum(t.commits for t in sample.threads),
        "commit_total_ms": _ms(sum(t.commit_total_s for t in sample.threads)),
        # every thread of a client takes part in every rebalance: the client's count is its threads' most
        "rebalances": max((t.rebalances for t in sample.threads), default=0),
    }


def parse_metrics_event(value: bytes | str | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A metrics event from a record value (or decoded JSON); None if it is not one of a known version."""
    if value is None:
        return None
    event: Any = value
    if isinstance(value, bytes | str):
        try:
            event = json.loads(value)
        except ValueError:
            return None
    if not isinstance(event, Mapping) or event.get("type") != EVENT_TYPE or event.get("version") not in KNOWN_VERSIONS:
        return None
    if not isinstance(event.get("process_id"), str) or not isinstance(event.get("tasks"), Mapping):
        return None
    return dict(event)
