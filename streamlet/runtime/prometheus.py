"""The client's metrics in Prometheus' text format, for the worker's `GET /metrics`.

Built from the same event the client appends to `<application_id>-metrics` (`build_metrics_event`), so the
topic and the endpoint never disagree. Every series carries `application_id` and `process_id`, so one
Prometheus can scrape all the workers of several applications. Counts since the client started are
counters (a task's dropped records too, also per processor and reason); states, lags, restoration progress
and the dropped-records rate are gauges; commit latency p50/max are over the last metrics interval.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

#: What `/metrics` answers with: the text format `generate_latest` writes.
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
_CLIENT = ("application_id", "process_id")


class _EventCollector(Collector):
    def __init__(self, event: Mapping[str, Any]) -> None:
        self._event = event

    def collect(self) -> Iterator[Metric]:
        return iter(metric_families(self._event))


def _gauge(name: str, doc: str, *labels: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"streamlet_{name}", doc, labels=[*_CLIENT, *labels])


def _counter(name: str, doc: str, *labels: str) -> CounterMetricFamily:
    return CounterMetricFamily(f"streamlet_{name}", doc, labels=[*_CLIENT, *labels])


def metric_families(event: Mapping[str, Any]) -> list[Metric]:
    """The Prometheus metric families of one client metrics event."""
    client = [str(event["application_id"]), str(event["process_id"])]
    processed = _counter("task_records_processed", "Records processed by the task on this client", "task")
    not_running = _counter("task_not_running_seconds", "Time the task was assigned here but not RUNNING", "task")
    state = _gauge("task_state", "1 for the task's current state on this client", "task", "state")
    dropped = _counter(
        "task_dropped_records", "Records the task's processors dropped (Kafka's dropped-records-total)", "task"
    )
    dropped_rate = _gauge(
        "task_dropped_records_rate", "Records the task dropped per second lately (Kafka's dropped-records-rate)", "task"
    )
    by_processor = _counter(
        "processor_dropped_records",
        "Records one processor of the task dropped, by reason",
        "task",
        "processor",
        "reason",
    )
    for task, entry in sorted(event.get("tasks", {}).items()):
        dropped.add_metric([*client, task], float(entry.get("dropped_records_total", 0)))
        dropped_rate.add_metric([*client, task], float(entry.get("dropped_records_rate", 0.0)))
        for item in entry.get("dropped_records", []):
            by_processor.add_metric([*client, task, item["processor"], item["reason"]], float(item["count"]))
        processed.add_metric([*client, task], float(entry.get("records_processed", 0)))
        not_running.add_metric([*client, task], float(entry.get("not_running_ms", 0.0)) / 1000.0)
        if entry.get("state"):
            state.add_metric([*client, task, str(entry["state"])], 1.0)
    lag = _gauge("consumer_lag", "Records between the position and the high watermark", "topic", "partition")
    for item in event.get("consumer_lag", []):
        lag.add_metric([*client, item["topic"], str(item["partition"])], float(item["lag"]))
    standby = _gauge("standby_lag", "Changelog records a standby is behind the end", "topic", "partition")
    for item in event.get("standby_lag", []):
        standby.add_metric([*client, item["topic"], str(item["partition"])], float(item["lag"]))
    restore_labels = ("store", "topic", "partition")
    restored = _gauge("restore_records_restored", "Records restored so far", *restore_labels)
    restored_bytes = _counter(
        "restored_bytes", "Key + value bytes of changelog records restored since the client started", *restore_labels
    )
    for item in event.get("restored_bytes_total", []):
        restored_bytes.add_metric([*client, item["store"], item["topic"], str(item["partition"])], float(item["bytes"]))
    remaining = _gauge("restore_records_remaining", "Changelog offsets left to restore", *restore_labels)
    rate = _gauge("restore_records_per_second", "Restoration rate so far", *restore_labels)
    eta = _gauge("restore_eta_seconds", "Estimated time to the end of the restoration", *restore_labels)
    for item in event.get("restore", []):
        labels = [*client, item["store"], item["topic"], str(item["partition"])]
        restored.add_metric(labels, float(item["restored"]))
        remaining.add_metric(labels, float(item["remaining"]))
        rate.add_metric(labels, float(item["rate"]))
        if item.get("eta_s") is not None:
            eta.add_metric(labels, float(item["eta_s"]))
    commits = _counter("commits", "Commits since the client started")
    commits.add_metric(client, float(event.get("commits", 0)))
    commit_time = _counter("commit_seconds", "Time spent committing since the client started")
    commit_time.add_metric(client, float(event.get("commit_total_ms", 0.0)) / 1000.0)
    latency = _gauge("commit_latency_seconds", "Commit latency over the last metrics interval", "quantile")
    window = event.get("commit_latency_ms", {})
    for quantile, key in (("0.5", "p50"), ("1", "max")):
        if window.get(key) is not None:
            latency.add_metric([*client, quantile], float(window[key]) / 1000.0)
    rebalances = _counter("rebalances", "Rebalances this client took part in")
    rebalances.add_metric(client, float(event.get("rebalances", 0)))
    total = _counter("records_processed", "Records processed by this client")
    total.add_metric(client, float(event.get("records_processed", 0)))
    return [
        processed,
        dropped,
        dropped_rate,
        by_processor,
        not_running,
        state,
        lag,
        standby,
        restored,
        restored_bytes,
        remaining,
        rate,
        eta,
        commits,
        commit_time,
        latency,
        rebalances,
        total,
    ]


def prometheus_text(event: Mapping[str, Any]) -> bytes:
    """The exposition of one metrics event in Prometheus' text format (0.0.4)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_EventCollector(event))
    return generate_latest(registry)
