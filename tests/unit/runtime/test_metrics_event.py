"""The client metrics event: aggregation over threads, its JSON shape, and what a reader accepts."""

from __future__ import annotations

import json

from aiokafka.structs import TopicPartition

from streamlet.runtime.metrics_event import (
    EVENT_TYPE,
    METRICS_VERSION,
    ClientSample,
    ThreadSample,
    build_metrics_event,
    metrics_topic,
    parse_metrics_event,
)
from streamlet.runtime.restore_listener import RestoreProgress
from streamlet.task_id import TaskId

T00, T01, T02 = TaskId(0, 0), TaskId(0, 1), TaskId(0, 2)
IN0, IN1 = TopicPartition("in", 0), TopicPartition("in", 1)
CL2 = TopicPartition("app-counts-changelog", 2)


def thread(name: str, **fields: object) -> ThreadSample:
    defaults: dict[str, object] = {
        "states": {},
        "processed": {},
        "not_running_s": {},
        "rebalances": 0,
        "commits": 0,
        "commit_total_s": 0.0,
        "commit_latencies_s": [],
    }
    defaults.update(fields)
    return ThreadSample(name=name, **defaults)  # type: ignore[arg-type]


def sample(
    *threads: ThreadSample,
    restoring: list[RestoreProgress] | None = None,
    restored_totals: dict[tuple[TopicPartition, str], int] | None = None,
    restored_bytes_totals: dict[tuple[TopicPartition, str], int] | None = None,
) -> ClientSample:
    return ClientSample(
        application_id="app",
        process_id="4b61083e-57d0-457d-951f-d06556c148ca",
        host="localhost:8080",
        timestamp_ms=1_700_000_000_000,
        sequence=7,
        interval_ms=5000,
        threads=threads,
        restoring=restoring or [],
        standby_lags={TopicPartition("app-counts-changelog", 1): 12},
        now=110.0,
        restored_totals=restored_totals or {},
        restored_bytes_totals=restored_bytes_totals or {},
    )


def test_the_event_adds_up_the_threads_of_a_client() -> None:
    one = thread(
        "t1",
        states={T00: "RUNNING"},
        processed={T00: 100, T01: 40},  # T01 ran here before it moved to t2
        not_running_s={T00: 1.5, T01: 0.25},
        rebalances=3,
        commits=2,
        commit_total_s=0.05,
        commit_latencies_s=[0.010, 0.040],
        consumer_lags={IN0: 0},
    )
    two = thread(
        "t2",
        states={T01: "RESTORING", T02: "STANDBY"},
        processed={T01: 2},
        not_running_s={T01: 2.0},
        rebalances=2,
        commits=1,
        commit_total_s=0.02,
        commit_latencies_s=[0.020],
        consumer_lags={IN1: 5},
    )
    progress = RestoreProgress("counts", CL2, start_offset=100, end_offset=1100, started=100.0, restored=250)
    progress.position = 350
    totals = {(CL2, "counts"): 250, (TopicPartition("app-counts-changelog", 0), "counts"): 9}
    byte_totals = {(CL2, "counts"): 4000, (TopicPartition("app-counts-changelog", 0), "counts"): 90}
    event = build_metrics_event(
        sample(one, two, restoring=[progress], restored_totals=totals, restored_bytes_totals=byte_totals)
    )

    assert event["type"] == EVENT_TYPE and event["version"] == METRICS_VERSION
    assert event["tasks"] == {
        "0_0": {"state": "RUNNING", "thread": "t1", "records_processed": 100, "not_running_ms": 1500.0},
        "0_1": {"state": "RESTORING", "thread": "t2", "records_processed": 42, "not_running_ms": 2250.0},
        "0_2": {"state": "STANDBY", "thread": "t2", "records_processed": 0, "not_running_ms": 0.0},
    }
    assert event["records_processed"] == 142
    assert event["consumer_lag"] == [
        {"topic": "in", "partition": 0, "lag": 0},
        {"topic": "in", "partition": 1, "lag": 5},
    ]
    assert event["standby_lag"] == [{"topic": "app-counts-changelog", "partition": 1, "lag": 12}]
    assert event["commit_latency_ms"] == {"count": 3, "p50": 20.0, "max": 40.0}
    assert event["commits"] == 3 and event["commit_total_ms"] == 70.0
    assert event["rebalances"] == 3  # a thread that started later saw fewer: the client saw the most
    # 250 offsets of 1000 in 10 s: 25 records/s, 750 to go at 25 offsets/s
    assert event["restore"] == [
        {
            "store": "counts",
            "topic": "app-counts-changelog",
            "partition": 2,
            "restored": 250,
            "remaining": 750,
            "total": 1000,
            "percent": 25.0,
            "rate": 25.0,
            "eta_s": 30.0,
        }
    ]
    assert event["restored_total"] == [
        {"store": "counts", "topic": "app-counts-changelog", "partition": 0, "records": 9},
        {"store": "counts", "topic": "app-counts-changelog", "partition": 2, "records": 250},
    ]
    assert event["restored_bytes_total"] == [
        {"store": "counts", "topic": "app-counts-changelog", "partition": 0, "bytes": 90},
        {"store": "counts", "topic": "app-counts-changelog", "partition": 2, "bytes": 4000},
    ]
    assert (event["process_id"], event["host"], event["sequence"], event["threads"]) == (
        "4b61083e-57d0-457d-951f-d06556c148ca",
        "localhost:8080",
        7,
        2,
    )


def test_an_idle_client_has_no_latency_and_no_rebalance() -> None:
    event = build_metrics_event(sample())
    assert event["commit_latency_ms"] == {"count": 0, "p50": None, "max": None}
    assert event["rebalances"] == 0 and event["tasks"] == {} and event["records_processed"] == 0


def test_events_round_trip_through_json_and_readers_refuse_what_they_do_not_know() -> None:
    event = build_metrics_event(sample(thread("t1", processed={T00: 3})))
    raw = json.dumps(event).encode()
    assert parse_metrics_event(raw) == json.loads(raw)
    assert parse_metrics_event(raw.decode()) == json.loads(raw)
    assert parse_metrics_event({**event, "version": METRICS_VERSION + 1}) is None
    assert parse_metrics_event({**event, "type": "streamlet.assignment"}) is None
    assert parse_metrics_event(b"{not json") is None
    assert parse_metrics_event(None) is None
    assert parse_metrics_event({k: v for k, v in event.items() if k != "tasks"}) is None


def test_version_1_events_without_restored_bytes_are_still_read() -> None:
    event = build_metrics_event(sample(thread("t1", processed={T00: 3})))
    old = {k: v for k, v in event.items() if k not in ("restored_bytes_total", "dropped_records_total")}
    old |= {"version": 1}
    assert METRICS_VERSION == 3
    assert parse_metrics_event(old) == old
    assert parse_metrics_event(old | {"version": 2}) == old | {"version": 2}
    assert parse_metrics_event({**old, "version": 0}) is None
    assert metrics_topic("wordcount") == "wordcount-metrics"


def test_dropped_records_are_summed_over_threads_per_task_processor_and_reason() -> None:
    agg, join = "KSTREAM-AGGREGATE-0000000003", "KSTREAM-WINDOWED-0000000002"
    t1 = thread(
        "t1", states={T01: "RUNNING"}, dropped={T00: {(agg, "late"): 4, (agg, "null-key-or-value"): 1}, T01: {}}
    )
    t2 = thread("t2", dropped={T00: {(agg, "late"): 2}, T02: {(join, "late"): 3}})
    client = ClientSample(**{**sample(t1, t2).__dict__, "dropped_rates": {T00: 0.25, T02: 0.1}})
    event = build_metrics_event(client)
    assert event["dropped_records_total"] == 10
    assert event["tasks"]["0_0"]["dropped_records_total"] == 7
    assert event["tasks"]["0_0"]["dropped_records_rate"] == 0.25
    assert event["tasks"]["0_0"]["dropped_records"] == [
        {"processor": agg, "reason": "late", "count": 6},
        {"processor": agg, "reason": "null-key-or-value", "count": 1},
    ]
    assert event["tasks"]["0_2"]["dropped_records"] == [{"processor": join, "reason": "late", "count": 3}]
    assert "dropped_records_total" not in event["tasks"]["0_1"]  # a task that dropped nothing: no fields
    assert parse_metrics_event(json.dumps(event)) == event
