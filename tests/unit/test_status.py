"""`streamlet status`'s text, from an assignment event and metrics events (no Kafka)."""

from __future__ import annotations

from typing import Any

from aiokafka.structs import TopicPartition

from streamlet.cli import build_parser
from streamlet.runtime.metrics_event import ClientSample, ThreadSample, build_metrics_event
from streamlet.runtime.restore_listener import RestoreProgress
from streamlet.status import GroupEvents, format_status
from streamlet.task_id import TaskId

A = "4b61083e-57d0-457d-951f-d06556c148ca"
B = "7156cef1-307e-49c0-a5bb-0f11d26a4933"
C = "0b8d5d4a-0000-4000-8000-000000000000"
NOW = 1_700_000_100_000


def assignment(followup_ms: int | None) -> dict[str, Any]:
    return {
        "type": "streamlet.assignment",
        "version": 1,
        "generation": 4,
        "timestamp_ms": NOW - 30_000,
        "assignor": "high_availability",
        "trigger": "join",
        "tasks": ["0_0", "0_1", "1_0", "1_1"],
        "clients": [
            {
                "process_id": A,
                "host": "h1:8080",
                "capacity": 2,
                "active": ["0_0", "1_0"],
                "standby": [],
                "warmup": ["1_1"],
                "lags": {"1_1": 5000},
            },
            {
                "process_id": B,
                "host": "h2:8080",
                "capacity": 1,
                "active": ["0_1", "1_1"],
                "standby": [],
                "warmup": [],
                "lags": {},
            },
        ],
        "followup_scheduled": followup_ms is not None,
        "followup_deadline_ms": followup_ms,
    }


def metrics(
    pid: str, timestamp_ms: int, states: dict[TaskId, str], processed: dict[TaskId, int], **extra: Any
) -> dict[str, Any]:
    thread = ThreadSample(
        name="t1",
        states=states,
        processed=processed,
        not_running_s={t: 1.25 for t in states},
        rebalances=3,
        commits=1,
        commit_total_s=0.01,
        commit_latencies_s=[0.004, 0.009],
        consumer_lags=extra.get("lags", {}),
    )
    return build_metrics_event(
        ClientSample("app", pid, "h", timestamp_ms, 1, 5000, [thread], extra.get("restoring", []), {}, now=10.0)
    )


def test_the_group_with_states_lags_restorations_and_a_pending_probing_rebalance() -> None:
    restoring = RestoreProgress(
        "counts", TopicPartition("app-counts-changelog", 1), 0, 4000, started=0.0, restored=1000
    )
    restoring.position = 1000
    events = GroupEvents(
        "app",
        assignment=assignment(NOW + 45_000),
        metrics={
            A: metrics(
                A,
                NOW - 1_000,
                {TaskId(0, 0): "RUNNING", TaskId(1, 0): "RESTORING", TaskId(1, 1): "STANDBY"},
                {TaskId(0, 0): 120},
                lags={TopicPartition("in", 0): 7, TopicPartition("in", 1): 0},
                restoring=[restoring],
            ),
            B: metrics(B, NOW - 60_000, {TaskId(0, 1): "RUNNING", TaskId(1, 1): "RUNNING"}, {TaskId(0, 1): 5}),
        },
    )
    text = format_status(events, now_ms=NOW)
    lines = text.splitlines()
    assert lines[0] == "application app"
    assert lines[1] == "  generation 4 by high_availability at 22:14:30 UTC (join): 2 clients, 4 tasks"
    assert lines[2] == "  probing rebalance pending: scheduled for 22:15:45 UTC (in 45s)"
    assert f"client {A} (host h1:8080, 2 threads)" in lines
    assert "  metrics 1.0s ago: 120 records processed, 3 rebalances, commit p50 6.5 ms max 9.0 ms" in lines
    assert "    active  0_0    RUNNING   processed       120  not running 1.2s" in lines
    assert "    active  1_0    RESTORING processed         0  not running 1.2s" in lines
    assert (
        "    warmup  1_1    STANDBY   processed         0  not running 1.2s  lag 5000 (as the assignor saw it)" in lines
    )
    assert "  consumer lag 7 (in-0:7, in-1:0)" in lines
    assert "  restoring counts from app-counts-changelog-1: 25% (1000/4000), 100 records/s, ETA 30s" in lines
    assert (
        "  metrics 1m00s ago (SILENT: stopped or unreachable?): 5 records processed, 3 rebalances, "
        "commit p50 6.5 ms max 9.0 ms" in lines
    )


def test_no_probing_rebalance_a_client_without_metrics_and_one_not_in_the_assignment() -> None:
    events = GroupEvents(
        "app",
        assignment=assignment(None),
        metrics={C: metrics(C, NOW - 2_000, {TaskId(0, 0): "PENDING"}, {})},
    )
    lines = format_status(events, now_ms=NOW).splitlines()
    assert "  no probing rebalance pending" in lines
    assert "  no metrics event (metrics_interval_ms=0, or the client has not published yet)" in lines
    assert "    active  0_0    ?" in lines
    assert f"client {C} (host h)" in lines and "  not in the latest assignment (joined since, or left)" in lines
    assert "            0_0    PENDING   processed         0  not running 1.2s" in lines


def test_an_application_without_events_says_which_topics_are_missing() -> None:
    text = format_status(GroupEvents("app", missing=["app-assignments", "app-metrics"]), now_ms=NOW)
    assert text == "application app\n  no assignment event yet (missing topics: app-assignments, app-metrics)\n"


def test_the_command_line() -> None:
    args = build_parser().parse_args(["status", "--application-id", "app", "--bootstrap-servers", "b:9092", "--watch"])
    assert (args.application_id, args.bootstrap_servers, args.watch, args.interval) == ("app", "b:9092", True, 2.0)


def test_dropped_records_per_task_and_processor() -> None:
    thread = ThreadSample(
        name="t1",
        states={TaskId(0, 0): "RUNNING", TaskId(0, 1): "RUNNING"},
        processed={TaskId(0, 0): 50, TaskId(0, 1): 9},
        not_running_s={},
        rebalances=1,
        commits=1,
        commit_total_s=0.01,
        commit_latencies_s=[],
        dropped={TaskId(0, 0): {("AGG", "late"): 12, ("AGG", "null-key-or-value"): 1, ("JOIN", "late"): 2}},
    )
    sample = ClientSample(
        "app", A, "h", NOW - 1_000, 1, 5000, [thread], [], {}, now=10.0, dropped_rates={TaskId(0, 0): 0.5}
    )
    lines = format_status(GroupEvents("app", metrics={A: build_metrics_event(sample)}), now_ms=NOW).splitlines()
    assert "            0_0    RUNNING   processed        50  not running 0.0s  dropped 15 (0.5/s)" in lines
    assert "            0_1    RUNNING   processed         9  not running 0.0s" in lines  # nothing dropped
    assert "  dropped by AGG in 0_0: 12 late, 1 null-key-or-value" in lines
    assert "  dropped by JOIN in 0_0: 2 late" in lines
