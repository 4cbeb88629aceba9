"""The Prometheus exposition of a client metrics event: exact lines, and what a Prometheus parser reads back."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from streamlet.runtime.prometheus import CONTENT_TYPE, prometheus_text

EVENT: dict[str, Any] = {
    "application_id": "wordcount",
    "process_id": "4b61083e-57d0-457d-951f-d06556c148ca",
    "tasks": {
        "1_0": {"state": "RUNNING", "thread": "t1", "records_processed": 42, "not_running_ms": 1500.0},
        "1_1": {"state": "RESTORING", "thread": "t2", "records_processed": 0, "not_running_ms": 250.0},
        "1_2": {"state": None, "thread": None, "records_processed": 7, "not_running_ms": 0.0},
    },
    "consumer_lag": [{"topic": "in", "partition": 0, "lag": 3}],
    "standby_lag": [{"topic": "wordcount-counts-changelog", "partition": 5, "lag": 12}],
    "restore": [
        {
            "store": "counts",
            "topic": "wordcount-counts-changelog",
            "partition": 1,
            "restored": 250,
            "remaining": 750,
            "total": 1000,
            "percent": 25.0,
            "rate": 25.0,
            "eta_s": 30.0,
        }
    ],
    "restored_bytes_total": [{"store": "counts", "topic": "wordcount-counts-changelog", "partition": 1, "bytes": 4096}],
    "commit_latency_ms": {"count": 2, "p50": 12.0, "max": 40.0},
    "commits": 9,
    "commit_total_ms": 150.0,
    "rebalances": 2,
    "records_processed": 49,
}
PROCESS = 'process_id="4b61083e-57d0-457d-951f-d06556c148ca"'
CLIENT = f'application_id="wordcount",{PROCESS}'


def test_the_text_format_has_help_type_and_one_line_per_sample() -> None:
    lines = prometheus_text(EVENT).decode().splitlines()
    assert "# TYPE streamlet_task_records_processed_total counter" in lines
    assert "# HELP streamlet_task_records_processed_total Records processed by the task on this client" in lines
    assert f'streamlet_task_records_processed_total{{{CLIENT},task="1_0"}} 42.0' in lines
    assert f'streamlet_task_not_running_seconds_total{{{CLIENT},task="1_0"}} 1.5' in lines
    assert f'streamlet_task_state{{{CLIENT},state="RESTORING",task="1_1"}} 1.0' in lines
    assert not any(line.startswith("streamlet_task_state") and 'task="1_2"' in line for line in lines)  # moved away
    assert "# TYPE streamlet_consumer_lag gauge" in lines
    # labels in alphabetical order, as prometheus_client writes them
    assert f'streamlet_consumer_lag{{application_id="wordcount",partition="0",{PROCESS},topic="in"}} 3.0' in lines
    restore = f'application_id="wordcount",partition="1",{PROCESS},store="counts",topic="wordcount-counts-changelog"'
    assert f"streamlet_restore_eta_seconds{{{restore}}} 30.0" in lines
    assert f'streamlet_commit_latency_seconds{{{CLIENT},quantile="1"}} 0.04' in lines
    assert f"streamlet_rebalances_total{{{CLIENT}}} 2.0" in lines
    assert CONTENT_TYPE.startswith("text/plain; version=0.0.4")


def test_a_prometheus_parser_reads_back_every_value() -> None:
    samples = {
        (
            s.name,
            tuple(sorted((k, v) for k, v in s.labels.items() if k not in ("application_id", "process_id"))),
        ): s.value
        for family in text_string_to_metric_families(prometheus_text(EVENT).decode())
        for s in family.samples
    }
    assert samples[("streamlet_task_records_processed_total", (("task", "1_2"),))] == 7
    assert samples[("streamlet_records_processed_total", ())] == 49
    assert samples[("streamlet_standby_lag", (("partition", "5"), ("topic", "wordcount-counts-changelog")))] == 12
    restore = (("partition", "1"), ("store", "counts"), ("topic", "wordcount-counts-changelog"))
    assert samples[("streamlet_restore_records_restored", restore)] == 250
    assert samples[("streamlet_restore_records_remaining", restore)] == 750
    assert samples[("streamlet_restore_records_per_second", restore)] == 25
    assert samples[("streamlet_restored_bytes_total", restore)] == 4096
    assert samples[("streamlet_commits_total", ())] == 9
    assert samples[("streamlet_commit_seconds_total", ())] == 0.15
    assert samples[("streamlet_commit_latency_seconds", (("quantile", "0.5"),))] == 0.012


def test_an_idle_client_exposes_its_counters_and_no_latency() -> None:
    idle = {
        "application_id": "a",
        "process_id": "p",
        "tasks": {},
        "commit_latency_ms": {"count": 0, "p50": None, "max": None},
    }
    text = prometheus_text(idle).decode()
    assert 'streamlet_rebalances_total{application_id="a",process_id="p"} 0.0' in text.splitlines()
    assert "streamlet_commit_latency_seconds{" not in text


def test_dropped_records_per_task_with_its_rate_and_per_processor_and_reason() -> None:
    event = {
        **EVENT,
        "tasks": {
            **EVENT["tasks"],
            "1_0": {
                **EVENT["tasks"]["1_0"],
                "dropped_records_total": 5,
                "dropped_records_rate": 0.5,
                "dropped_records": [
                    {"processor": "KSTREAM-AGGREGATE-0000000003", "reason": "late", "count": 4},
                    {"processor": "KSTREAM-AGGREGATE-0000000003", "reason": "null-key-or-value", "count": 1},
                ],
            },
        },
    }
    lines = prometheus_text(event).decode().splitlines()
    assert "# TYPE streamlet_task_dropped_records_total counter" in lines
    assert f'streamlet_task_dropped_records_total{{{CLIENT},task="1_0"}} 5.0' in lines
    assert f'streamlet_task_dropped_records_total{{{CLIENT},task="1_1"}} 0.0' in lines  # every task has the series
    assert f'streamlet_task_dropped_records_rate{{{CLIENT},task="1_0"}} 0.5' in lines
    late = f'{CLIENT},processor="KSTREAM-AGGREGATE-0000000003",reason="late",task="1_0"'
    assert f"streamlet_processor_dropped_records_total{{{late}}} 4.0" in lines
    families = {f.name: f for f in text_string_to_metric_families(prometheus_text(event).decode())}
    by_processor = families["streamlet_processor_dropped_records"].samples
    assert sum(s.value for s in by_processor) == 5.0
