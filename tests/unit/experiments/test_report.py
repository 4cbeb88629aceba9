"""`experiment report` on hand-made event lists: seed 000's rounds, the numbers, damaged run dirs (pure)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from streamlet.experiments.cli import read_run_dir
from streamlet.experiments.report import (
    TaskMove,
    convergences,
    max_excess,
    max_skew,
    render_report,
    stateful_moves,
    summarize,
    task_moves,
)

A = "4b61083e-57d0-457d-951f-d06556c148ca"
B = "7156cef1-307e-49c0-a5bb-0f11d26a4933"
C = "bbb83e43-b1af-4b2d-a60a-94a7091684d0"
STATEFUL = [f"1_{p}" for p in range(6)]
RECORD: dict[str, Any] = {
    "scenario": "seed000-2-to-3",
    "assignor": "high_availability",
    "status": "passed",
    "clients": {"A": {"process_id": A}, "B": {"process_id": B}, "C": {"process_id": C}},
    "verification": {"ok": True, "differences": 0},
}


def _client(pid: str, active: str, warmup: str = "", standby: str = "") -> dict[str, Any]:
    return {
        "process_id": pid,
        "capacity": 2,
        "active": active.split(),
        "standby": standby.split(),
        "warmup": warmup.split(),
    }


def _event(generation: int, followup: bool, *clients: dict[str, Any], trigger: str = "probing") -> str:
    return json.dumps(
        {
            "type": "streamlet.assignment",
            "version": 1,
            "generation": generation,
            "timestamp_ms": 1000 * generation,
            "assignor": "high_availability",
            "trigger": trigger,
            "stateful_tasks": STATEFUL,
            "clients": list(clients),
            "followup_scheduled": followup,
        }
    )


# Seed 000's Kafka Streams run: two clients, C joins, two probing rebalances, converged.
SEED = [
    _event(1, False, _client(A, "0_0 0_2 0_4 1_0 1_2 1_4"), _client(B, "0_1 0_3 0_5 1_1 1_3 1_5"), trigger="join"),
    _event(
        2,
        True,
        _client(C, "0_0 0_1 0_2 0_3", warmup="1_0"),
        _client(A, "0_4 1_0 1_2 1_4"),
        _client(B, "0_5 1_1 1_3 1_5", warmup="1_2"),
        trigger="join",
    ),
    _event(
        3,
        True,
        _client(C, "0_0 0_2 0_4 1_0", warmup="1_3"),
        _client(A, "0_1 0_3 0_5 1_4", warmup="1_1"),
        _client(B, "1_1 1_2 1_3 1_5"),
    ),
    _event(4, False, _client(C, "0_0 0_3 1_0 1_3"), _client(A, "0_1 0_4 1_1 1_4"), _client(B, "0_2 0_5 1_2 1_5")),
]


def test_seed_rounds_convergence_moves_and_skew() -> None:
    summary = summarize("hata", RECORD, SEED)
    assert summary.problems == [] and len(summary.rounds) == 4
    assert [c.name for c in summary.rounds[1].clients] == ["C", "A", "B"]
    conv = convergences(summary.rounds)
    assert [(c.change, c.rebalances) for c in conv] == [("start: A, B", 1), ("+C", 3)]
    # the events are 1 s apart: C's join (generation 2) to the converging generation 4 took 2 s
    assert [c.seconds for c in conv] == [0.0, 2.0]
    assert [c.excess for c in conv] == [0.0, 2.0]  # 3 of 6 on each of 2 clients; then B's 4 where 2 is even
    # 1_0 A->C (round 3), 1_2 A->B (round 3), 1_1 B->A and 1_3 B->C (round 4)
    assert stateful_moves(summary.rounds) == [(2, 0), (3, 2), (4, 2)]
    assert task_moves(summary.rounds) == [
        TaskMove(3, "1_0", "A", "C"),
        TaskMove(3, "1_2", "A", "B"),
        TaskMove(4, "1_1", "B", "A"),
        TaskMove(4, "1_3", "B", "C"),
    ]
    # the seed's pitfall: B holds 4 stateful actives in round 3 while the even share is 2
    assert max_skew(summary.rounds) == (4, "B", 3, 2.0)
    assert max_excess(summary.rounds) == (2.0, "B", 3)


def test_the_markdown_has_seed_000s_round_table() -> None:
    text = render_report([summarize("hata", RECORD, SEED)])
    assert "| 2 | 2 | join | C | 2 | 0_0 0_1 0_2 0_3 | - | 1_0 | 0 | yes |" in text
    assert "|  |  |  | B | 2 | 1_1 1_2 1_3 1_5 | - | - | 4 |  |" in text
    assert "| rebalances to converge | start: A, B: 1 in 0.0s; +C: 3 in 2.0s, 4 stateful moves |" in text
    assert "| max stateful actives on one client | 4 (B, round 3; even share 2.0) |" in text
    assert "| final stateful split | A=2 B=2 C=2 |" in text
    assert "| max stateful actives above even share | +2.0 (B, round 3) |" in text
    assert "| output | exact |" in text


def test_a_thread_joining_late_is_its_own_membership_change() -> None:
    one_thread = json.loads(SEED[0])
    one_thread["clients"][1]["capacity"] = 1
    summary = summarize("threads", RECORD, [json.dumps(one_thread), *SEED])
    changes = [c.change for c in convergences(summary.rounds)]
    assert changes == ["start: A, B", "B threads 1->2", "+C"]


def test_a_change_that_comes_before_convergence_supersedes_the_previous_one() -> None:
    d = "0f3c1f2e-9a7b-4c1d-8e2f-3a4b5c6d7e8f"
    record = dict(RECORD, clients={**RECORD["clients"], "D": {"process_id": d}})
    four = _event(3, False, *json.loads(SEED[2])["clients"], _client(d, ""), trigger="join")
    summary = summarize("superseded", record, [*SEED[:2], four])
    assert [c.describe() for c in convergences(summary.rounds)] == [
        "start: A, B: 1 in 0.0s",
        "+C: superseded after 1",
        "+D: 1 in 0.0s, 2 stateful moves",
    ]


def test_several_runs_side_by_side() -> None:
    balanced = dict(RECORD, assignor="balanced")
    text = render_report([summarize("hata", RECORD, SEED), summarize("balanced", balanced, SEED[:2])])
    assert text.startswith("# Runs side by side")
    assert "|  | hata | balanced |" in text
    assert "| assignor | high_availability | balanced |" in text
    assert (
        "| rebalances to converge | start: A, B: 1 in 0.0s; +C: 3 in 2.0s, 4 stateful moves "
        "| start: A, B: 1 in 0.0s; +C: not converged |" in text
    )


def test_partial_events_are_named_and_the_rest_is_reported() -> None:
    lines = [SEED[0], '{"type": "streamlet.assignment", "version": 1, "gen', SEED[3], json.dumps({"version": 9})]
    summary = summarize("partial", RECORD, lines)
    assert len(summary.rounds) == 2
    assert summary.problems == [
        "event line 2: not JSON (truncated?); skipped",
        "event line 4: version 9 is not supported (this report reads version 1); skipped",
        "generation(s) 2..3 have no event (between 1 and 4)",
    ]
    text = render_report([summary])
    assert "Problems (the rest is reported):" in text and "| 2 | 4 | probing | C |" in text


def test_missing_files_say_what_is_missing(tmp_path: Path) -> None:
    only_events = tmp_path / "only-events"
    only_events.mkdir()
    (only_events / "assignments.jsonl").write_text("\n".join(SEED) + "\n")
    summary = read_run_dir(only_events)
    assert summary.problems == [
        "run.json is missing or unreadable: client names are process ids, no verification",
        "metrics.jsonl is missing: no per-client records processed or time not RUNNING",
    ]
    assert [c.name for c in summary.rounds[-1].clients] == [C[:8], A[:8], B[:8]]

    only_record = tmp_path / "only-record"
    only_record.mkdir()
    (only_record / "run.json").write_text(json.dumps(dict(RECORD, status="failed", error="step 3 timed out")))
    summary = read_run_dir(only_record)
    assert summary.problems == [
        "run status failed: step 3 timed out",
        "assignments.jsonl is missing: no rounds to report",
        "metrics.jsonl is missing: no per-client records processed or time not RUNNING",
    ]
    assert "| rounds | 0 |" in render_report([summary])
    assert read_run_dir(tmp_path / "nowhere").problems[0].endswith("is not a directory")


def test_shutdown_events_after_the_timeline_are_left_out() -> None:
    summary = summarize("cut", dict(RECORD, timeline_events=4), [*SEED, _event(5, False, _client(A, "1_0"))])
    assert len(summary.rounds) == 4 and summary.problems == []
    assert summary.notes == ["1 event(s) after the timeline (the shutdown's rebalances) are not reported"]


def _metrics(pid: str, processed: int) -> str:
    """A client's last metrics event, with only what the per-client totals read."""
    tasks = {"0_0": {"records_processed": processed, "not_running_ms": 0.0}}
    return json.dumps(
        {"type": "streamlet.metrics", "version": 2, "process_id": pid, "sequence": 1, "records_processed": processed}
        | {"tasks": tasks, "rebalances": 1}
    )


# run.json of seed 000's scenario: A and B start in step 1, C in step 4 (an `add`)
JOINED_RECORD: dict[str, Any] = {
    **RECORD,
    "clients": {
        "A": {"process_id": A, "started_at": 100.0},
        "B": {"process_id": B, "started_at": 100.1},
        "C": {"process_id": C, "started_at": 120.5},
    },
    "steps": [
        {"index": 1, "action": "start", "started_at": 100.0, "ended_at": 100.2},
        {"index": 2, "action": "wait_stable", "started_at": 100.2, "ended_at": 117.0},
        {"index": 3, "action": "sleep", "started_at": 117.0, "ended_at": 120.0},
        {"index": 4, "action": "add", "started_at": 120.4, "ended_at": 120.6},
        {"index": 5, "action": "wait_converged", "started_at": 120.6, "ended_at": 140.0},
    ],
}


def test_a_joining_client_that_processed_nothing_is_flagged() -> None:
    metrics = [_metrics(A, 800), _metrics(B, 700), _metrics(C, 0)]
    summary = summarize("hata", JOINED_RECORD, SEED, metrics)
    assert any(p.startswith("client C joined (step 4) but processed no record") for p in summary.problems)
    text = render_report([summary])
    assert "| joining clients that processed nothing | C |" in text
    assert "Problems (the rest is reported):" in text


def test_a_joining_client_that_processed_records_is_not_flagged() -> None:
    metrics = [_metrics(A, 800), _metrics(B, 700), _metrics(C, 300)]
    summary = summarize("hata", JOINED_RECORD, SEED, metrics)
    assert not any("processed no record" in p for p in summary.problems)
    assert "| joining clients that processed nothing | none |" in render_report([summary])


def test_a_starting_client_that_processed_nothing_is_not_a_joiner() -> None:
    metrics = [_metrics(A, 0), _metrics(B, 700), _metrics(C, 300)]
    assert not any("processed no record" in p for p in summarize("hata", JOINED_RECORD, SEED, metrics).problems)
