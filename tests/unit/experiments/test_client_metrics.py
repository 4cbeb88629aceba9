"""Per-client totals of an experiment from its metrics.jsonl, and how the report shows them (pure)."""

from __future__ import annotations

import json
from pathlib import Path

from aiokafka.structs import TopicPartition

from streamlet.experiments.cli import read_run_dir
from streamlet.experiments.client_metrics import client_totals, render_client_totals
from streamlet.experiments.report import render_report
from streamlet.runtime.metrics_event import ClientSample, ThreadSample, build_metrics_event
from streamlet.task_id import TaskId

A = "4b61083e-57d0-457d-951f-d06556c148ca"
B = "7156cef1-307e-49c0-a5bb-0f11d26a4933"
NAMES = {A: "A", B: "B"}


def line(
    pid: str, sequence: int, processed: dict[TaskId, int], not_running: dict[TaskId, float], rebalances: int
) -> str:
    thread = ThreadSample("t1", {}, processed, not_running, rebalances, 0, 0.0, [])
    sample = ClientSample("app", pid, "h", 1000 * sequence, sequence, 500, [thread], [], {}, now=0.0)
    return json.dumps(build_metrics_event(sample))


T0, T1 = TaskId(1, 0), TaskId(1, 1)
LINES = [
    line(A, 1, {T0: 10}, {T0: 2.0}, 1),
    line(B, 1, {T1: 5}, {T1: 0.5}, 1),
    line(A, 2, {T0: 30, T1: 4}, {T0: 2.0, T1: 1.5}, 2),  # A's counts so far: 34
    line(B, 2, {T1: 20}, {T1: 0.5}, 2),
    line(A, 1, {T0: 7}, {T0: 3.0}, 1),  # A restarted (same process id): its counts start over
    '{"type": "streamlet.metrics", "version": 1, "proc',  # cut short by a kill
]


def test_totals_add_each_process_runs_last_event() -> None:
    totals, problems = client_totals(LINES, NAMES)
    assert problems == ["metrics.jsonl: 1 unreadable or unknown line(s) skipped"]
    a, b = totals
    assert (a.name, a.events, a.starts, a.records_processed, a.rebalances) == ("A", 3, 2, 41, 3)
    assert a.not_running_s == {"1_0": 5.0, "1_1": 1.5} and a.total_not_running_s == 6.5
    assert (b.name, b.events, b.starts, b.records_processed) == ("B", 2, 1, 20)


def test_the_report_shows_records_processed_and_time_not_running(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"status": "passed", "clients": {"A": {"process_id": A}}}))
    (run / "assignments.jsonl").write_text("")
    (run / "metrics.jsonl").write_text("\n".join(LINES[:4]) + "\n")
    summary = read_run_dir(run)
    text = render_report([summary])
    assert "| records processed (all clients) | 54 |" in text
    assert "| time tasks not RUNNING (all clients) | 4.0s |" in text
    assert (
        "| client | records processed | time tasks not RUNNING (s) | longest task (s) | rebalances | starts |" in text
    )
    assert "| A | 34 | 3.5 | 1_0 2.0 | 2 | 1 | 0 | 0 |" in text
    assert f"| {B[:8]} | 20 | 0.5 | 1_1 0.5 | 2 | 1 | 0 | 0 |" in text  # not in run.json: its process id
    assert "| 1_1 | 2.0 |" in text  # both clients' time for the task


CL0, CL1 = TopicPartition("app-counts-changelog", 0), TopicPartition("app-counts-changelog", 1)


def restoring_line(pid: str, sequence: int, restored: dict[TopicPartition, tuple[int, int]], version: int = 2) -> str:
    """An event whose client restored (records, key + value bytes) per changelog partition since it started."""
    thread = ThreadSample("t1", {}, {}, {}, 1, 0, 0.0, [])
    sample = ClientSample(
        "app",
        pid,
        "h",
        1000 * sequence,
        sequence,
        500,
        [thread],
        [],
        {},
        now=0.0,
        restored_totals={(tp, "counts"): n for tp, (n, _) in restored.items()},
        restored_bytes_totals={(tp, "counts"): b for tp, (_, b) in restored.items()},
    )
    event = build_metrics_event(sample)
    if version == 1:  # an older worker: no bytes
        del event["restored_bytes_total"]
        event["version"] = 1
    return json.dumps(event)


def test_the_report_shows_records_and_bytes_restored_per_client_and_in_total(tmp_path: Path) -> None:
    lines = [
        restoring_line(A, 1, {CL0: (10, 300)}),
        restoring_line(A, 2, {CL0: (25, 800), CL1: (5, 50)}),  # A's first run: 30 records, 850 bytes
        restoring_line(A, 1, {CL1: (4, 100)}),  # A restarted: 4 records, 100 bytes more
        restoring_line(B, 1, {CL0: (7, 70)}, version=1),  # B's events do not carry bytes
    ]
    [a, b], problems = client_totals(lines, NAMES)
    assert problems == []
    assert (a.restored_records, a.restored_bytes, b.restored_records, b.restored_bytes) == (34, 950, 7, None)
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"status": "passed", "clients": {"A": {"process_id": A}}}))
    (run / "assignments.jsonl").write_text("")
    (run / "metrics.jsonl").write_text("\n".join(lines[:3]) + "\n")
    text = render_report([read_run_dir(run)])
    assert "| A | 0 | 0.0 | - | 2 | 2 | 34 | 950 |" in text  # one rebalance in each of its 2 runs
    assert "| records restored (all clients) | 34 |" in text
    assert "| bytes restored, key + value (all clients) | 950 |" in text
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    text = render_report([read_run_dir(run)])
    assert f"| {B[:8]} | 0 | 0.0 | - | 1 | 1 | 7 | ? |" in text
    assert "| records restored (all clients) | 41 |" in text
    assert "| bytes restored, key + value (all clients) | ? |" in text


def _dropping(pid: str, sequence: int, late: int, version: int | None = None) -> str:
    thread = ThreadSample("t1", {}, {T0: 100}, {}, 1, 0, 0.0, [], dropped={T0: {("AGG", "late"): late}})
    event = build_metrics_event(ClientSample("app", pid, "h", 1000 * sequence, sequence, 500, [thread], [], {}, 0.0))
    if version is not None:  # an older worker: no dropped records in its events
        event = {k: v for k, v in event.items() if k != "dropped_records_total"} | {"version": version}
    return json.dumps(event)


def test_records_dropped_per_client_over_its_runs() -> None:
    lines = [_dropping(A, 1, 3), _dropping(A, 2, 8), _dropping(A, 1, 2), _dropping(B, 1, 5, version=2)]
    [a, b], _ = client_totals(lines, NAMES)
    assert (a.dropped_records, b.dropped_records) == (10, None)  # 8 in A's first run, 2 after its restart
    rows = render_client_totals([a, b])
    assert rows[0].endswith("| records restored | bytes restored | records dropped |")
    assert rows[2].endswith("| 10 |") and rows[3].endswith("| ? |")
