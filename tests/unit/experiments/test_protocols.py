"""Eager vs cooperative in `experiment run`/`report` on hand-built events: the protocol as a run dimension,
rebalances per scale step, pauses of tasks that stayed, and the side-by-side table (pure).

Every expected number is worked out by hand in the comments next to it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from streamlet.experiments.cli import planned_runs, render_with_protocols
from streamlet.experiments.html_report import RunView, build_summary, render_html
from streamlet.experiments.pauses import NO_PROGRESS, NOT_RUNNING, StayingPause, staying_pauses
from streamlet.experiments.protocols import compares_protocols, pauses_per_step, protocol_rows
from streamlet.experiments.report import convergences, rebalances_per_step, render_report, summarize
from streamlet.experiments.scenario import ScenarioError, load_scenario, parse_scenario
from tests.unit.experiments.test_report import RECORD, SEED, A, B, C, _client, _event
from tests.unit.experiments.test_scenario import BASE, EXPERIMENTS

NAMES = {A: "A", B: "B", C: "C"}


def metrics(pid: str, sequence: int, tasks: dict[str, tuple[str | None, int, float]], late_ms: int = 0) -> str:
    """One metrics event of `pid` at t = sequence s (+ late_ms), every 1 s: task -> (state, records processed,
    ms not RUNNING)."""
    return json.dumps(
        {
            "type": "streamlet.metrics",
            "version": 2,
            "process_id": pid,
            "timestamp_ms": 1000 * sequence + late_ms,
            "sequence": sequence,
            "interval_ms": 1000,
            "records_processed": sum(n for _, n, _ in tasks.values()),
            "tasks": {
                t: {"state": s, "thread": "t1", "records_processed": n, "not_running_ms": ms}
                for t, (s, n, ms) in tasks.items()
            },
            "rebalances": 1,
        }
    )


R, S, X = "RUNNING", "SUSPENDED", "RESTORING"

# Eager, as a 2 -> 3 scale-out sees it on A. 0_0 stays on A but eager suspends it: 400 ms before the event at
# 2 s, 800 ms more before 3 s, RUNNING again by then; then RUNNING throughout. 1_0 leaves A: suspended
# (300 ms, then 200 ms more), then closed (no state). 1_1 arrives on C restoring and RUNNING from 2 s on.
EAGER_METRICS = [
    metrics(A, 0, {"0_0": (R, 4, 0.0), "1_0": (R, 2, 0.0)}),
    metrics(A, 1, {"0_0": (R, 10, 0.0), "1_0": (R, 5, 0.0)}),
    metrics(C, 1, {"1_1": (X, 0, 800.0)}),
    metrics(A, 2, {"0_0": (S, 15, 400.0), "1_0": (S, 6, 300.0)}),
    metrics(C, 2, {"1_1": (R, 3, 1500.0)}),
    metrics(A, 3, {"0_0": (R, 16, 1200.0), "1_0": (None, 6, 500.0)}),
    metrics(C, 3, {"1_1": (R, 9, 1500.0)}),
    metrics(A, 4, {"0_0": (R, 30, 1200.0), "1_0": (None, 6, 500.0)}),
]
# Cooperative: 0_0 runs on throughout (its count grows every second, never a ms not RUNNING); 1_0 leaves A.
COOPERATIVE_METRICS = [
    metrics(A, 0, {"0_0": (R, 2, 0.0), "1_0": (R, 1, 0.0)}),
    metrics(A, 1, {"0_0": (R, 10, 0.0), "1_0": (R, 5, 0.0)}),
    metrics(A, 2, {"0_0": (R, 20, 0.0), "1_0": (S, 6, 300.0)}),
    metrics(A, 3, {"0_0": (R, 30, 0.0), "1_0": (None, 6, 500.0)}),
    metrics(C, 3, {"1_0": (R, 4, 900.0)}),
]


def test_a_task_suspended_and_resumed_in_place_paused_and_moved_or_arriving_tasks_did_not() -> None:
    pauses = staying_pauses(EAGER_METRICS, NAMES)
    # 0_0 on A: 400 + 800 ms not RUNNING between RUNNING events (0 s and 1 s; 4 s); closed by the event at 4 s
    assert pauses == [StayingPause("A", "0_0", 1.2, NOT_RUNNING, 4000)]
    assert staying_pauses(COOPERATIVE_METRICS, NAMES) == []


def test_a_task_just_become_running_is_not_a_staying_task_yet() -> None:
    """C's 1_1 was RUNNING in one event only when 450 ms were charged to it: maybe its restore's last
    observation, billed late because the loop was busy elsewhere; a whole interval RUNNING first is needed."""
    lines = [
        metrics(C, 1, {"1_1": (S, 0, 0.0)}),
        metrics(C, 2, {"1_1": (R, 0, 0.0)}),
        metrics(C, 3, {"1_1": (R, 4, 450.0)}),
        metrics(C, 4, {"1_1": (R, 9, 450.0)}),
    ]
    assert staying_pauses(lines, NAMES) == []
    ran_longer = [metrics(C, 0, {"1_1": (R, 0, 0.0)}), *lines[1:]]
    assert staying_pauses(ran_longer, NAMES) == [StayingPause("C", "1_1", 0.45, NOT_RUNNING, 4000)]


def test_a_task_running_without_progress_for_whole_intervals_paused_but_not_the_idle_tail() -> None:
    lines = [
        metrics(B, 1, {"0_1": (R, 5, 0.0), "0_2": (R, 5, 0.0)}),
        metrics(B, 2, {"0_1": (R, 10, 0.0), "0_2": (R, 10, 0.0)}),
        metrics(B, 3, {"0_1": (R, 10, 0.0), "0_2": (R, 10, 0.0)}),
        metrics(B, 4, {"0_1": (R, 10, 0.0), "0_2": (R, 10, 0.0)}),
        metrics(B, 5, {"0_1": (R, 20, 0.0), "0_2": (R, 10, 0.0)}),
        # one event late by 300 ms without a whole interval of silence is not a pause
        metrics(B, 6, {"0_1": (R, 25, 0.0), "0_2": (R, 10, 0.0)}, late_ms=300),
    ]
    # 0_1 grew at 2 s, not at 3 s nor 4 s, again at 5 s: 5 - 2 - 1 (the interval that grew) = 2 s of nothing.
    # 0_2 never grows again (the input ended): no pause.
    assert staying_pauses(lines, NAMES) == [StayingPause("B", "0_1", 2.0, NO_PROGRESS, 5000)]


def test_nothing_spans_a_restart_of_the_same_process_id() -> None:
    lines = [
        metrics(A, 1, {"0_0": (R, 10, 0.0)}),
        metrics(A, 2, {"0_0": (R, 20, 500.0)}),  # a stop that never ends: A is killed
        metrics(A, 1, {"0_0": (R, 3, 100.0)}),  # restarted: counts from 0; RUNNING again is not "resumed"
        metrics(A, 2, {"0_0": (R, 9, 100.0)}),
    ]
    assert staying_pauses(lines, NAMES) == []


# Cooperative handover of C's join: the join round (gen 2) withholds the moving tasks (the event lists the
# assignor's decision; only its per-thread split leaves them out), the second round (gen 3) hands them over;
# neither schedules a probing follow-up.
COOPERATIVE_ROUNDS = [
    SEED[0],
    _event(
        2,
        False,
        _client(C, "0_4 0_5 1_4 1_5"),
        _client(A, "0_0 0_2 1_0 1_2"),
        _client(B, "0_1 0_3 1_1 1_3"),
        trigger="join",
    ),
    _event(3, False, _client(C, "0_4 0_5 1_4 1_5"), _client(A, "0_0 0_2 1_0 1_2"), _client(B, "0_1 0_3 1_1 1_3")),
]


def test_rebalances_per_step_count_every_round_to_the_next_change() -> None:
    seed = summarize("seed", RECORD, SEED).rounds
    # A, B start (gen 1); C joins (gen 2) and two probing rounds follow (3, 4): as many as to converge
    assert rebalances_per_step(seed) == [("start: A, B", 1), ("+C", 3)]
    rounds = summarize("coop", RECORD, COOPERATIVE_ROUNDS).rounds
    # converged at the join round (no follow-up scheduled), but the handover's second round is a rebalance too
    assert [(c.change, c.rebalances) for c in convergences(rounds)] == [("start: A, B", 1), ("+C", 1)]
    assert rebalances_per_step(rounds) == [("start: A, B", 1), ("+C", 2)]


def _summary(protocol: str, events: list[str], metrics_lines: list[str], label: str = "") -> Any:
    record = dict(RECORD, protocol=protocol, started_at=100.0, ended_at=131.4)
    return summarize(label or protocol, record, events, metrics_lines)


def test_the_protocols_side_by_side_table() -> None:
    eager = _summary("eager", SEED, EAGER_METRICS)
    cooperative = _summary("cooperative", COOPERATIVE_ROUNDS, COOPERATIVE_METRICS)
    assert compares_protocols([eager, cooperative]) and not compares_protocols([eager, eager])
    rows = protocol_rows([eager, cooperative])
    assert [r["protocol"] for r in rows] == ["cooperative", "eager"]  # a scenario's rows by protocol
    coop, eag = rows
    assert eag["rebalances per scale step"] == "start: A, B 1, +C 3"
    assert coop["rebalances per scale step"] == "start: A, B 1, +C 2"
    # not RUNNING, A's last event: 1200 + 500 ms; C's: 1500 ms -> 3.2 task-seconds. Cooperative: 500 + 900 ms
    assert eag["task-seconds not RUNNING"] == "3.2" and coop["task-seconds not RUNNING"] == "1.4"
    # the seed's 4 moves (see test_report); cooperative: 1_4 and 1_5 go from A and B to C in the second round
    assert eag["stateful moves"] == "4" and coop["stateful moves"] == "2"
    # the pause ended at 4 s, after C's join (generation 2, at 2 s): it belongs to that step
    assert eag["longest pause of a task that stayed"] == "+C 1.20s (0_0 on A, not RUNNING)"
    assert coop["longest pause of a task that stayed"] == "0"
    assert eag["run"] == coop["run"] == "31s" and eag["output"] == "exact"

    text = render_with_protocols([eager, cooperative])
    assert text.startswith("# Rebalance protocols side by side")
    assert (
        "| seed000-2-to-3 | eager | high_availability | start: A, B 1, +C 3 | 3.2 | 4 "
        "| +C 1.20s (0_0 on A, not RUNNING) | exact | 31s |" in text
    )
    assert "| rebalance protocol | eager | cooperative |" in text  # the runs' own side-by-side table
    # one protocol only: no protocols table, and a run without metrics shows "-"
    single = render_with_protocols([_summary("eager", SEED, [])])
    assert "Rebalance protocols" not in single and "| longest pause of a task that stayed | 0 |" in single
    assert "| longest pause of a task that stayed | - |" in render_report([summarize("x", RECORD, SEED)])


def test_each_pause_belongs_to_the_step_of_the_last_rebalance_before_it_ended() -> None:
    rounds = summarize("seed", RECORD, SEED).rounds  # start: A, B at 1 s (generation 1); +C at 2 s (2, 3, 4)
    early = StayingPause("A", "1_0", 0.5, NOT_RUNNING, 500)  # before any round: the first step's
    start = StayingPause("B", "1_1", 0.7, NOT_RUNNING, 1999)
    join, probing = StayingPause("A", "0_0", 0.3, NO_PROGRESS, 2000), StayingPause("C", "1_3", 0.9, NOT_RUNNING, 4500)
    assert pauses_per_step(rounds, [early, start, join, probing]) == [("start: A, B", start), ("+C", probing)]
    assert pauses_per_step(rounds, [join]) == [("start: A, B", None), ("+C", join)]
    assert pauses_per_step(rounds, []) == [("start: A, B", None), ("+C", None)]


def test_a_run_recorded_before_the_protocol_was_a_dimension_says_so() -> None:
    assert summarize("old", RECORD, SEED).protocol == "?"


def test_the_protocol_is_a_scenario_setting_and_an_override() -> None:
    scenario = parse_scenario(BASE)
    assert scenario.app.rebalance_protocol == "cooperative"  # StreamsConfig's default
    eager = scenario.with_protocol("eager")
    assert eager.app.rebalance_protocol == "eager" and eager.app.config["task_assignor"] == "high_availability"
    with pytest.raises(ScenarioError, match="'lazy' is not a rebalance protocol"):
        scenario.with_protocol("lazy")
    raw = json.loads(json.dumps(BASE))
    raw["app"]["config"]["rebalance_protocol"] = "eager"
    assert parse_scenario(raw).app.rebalance_protocol == "eager"


def _args(*scenarios: Path, protocols: str | None, run_dir: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(
        scenarios=[str(s) for s in scenarios], assignor=None, protocols=protocols, run_dir=run_dir
    )


def test_every_scenario_runs_under_every_protocol_each_into_its_own_dir(tmp_path: Path) -> None:
    seed, replace = EXPERIMENTS / "seed000_2_to_3.toml", EXPERIMENTS / "seed000_replace_a_by_d.toml"
    runs = planned_runs(_args(seed, replace, protocols="eager,cooperative", run_dir=str(tmp_path)))
    assert [(s.name, s.app.rebalance_protocol, d) for s, d in runs] == [
        ("seed000-2-to-3", "eager", tmp_path / "seed000-2-to-3-eager"),
        ("seed000-2-to-3", "cooperative", tmp_path / "seed000-2-to-3-cooperative"),
        ("seed000-replace-a-by-d", "eager", tmp_path / "seed000-replace-a-by-d-eager"),
        ("seed000-replace-a-by-d", "cooperative", tmp_path / "seed000-replace-a-by-d-cooperative"),
    ]
    [(one, run_dir)] = planned_runs(_args(seed, protocols=None, run_dir=str(tmp_path / "one")))
    assert one.app.rebalance_protocol == load_scenario(seed).app.rebalance_protocol and run_dir == tmp_path / "one"
    with pytest.raises(ScenarioError, match="not a rebalance protocol"):
        planned_runs(_args(seed, protocols="eager,eagre"))
    with pytest.raises(ScenarioError, match="given twice under the same protocol"):
        planned_runs(_args(seed, seed, protocols="eager"))


def test_the_html_report_and_summary_json_carry_the_protocols() -> None:
    views = [
        RunView(_summary("eager", SEED, EAGER_METRICS), None),
        RunView(_summary("cooperative", COOPERATIVE_ROUNDS, COOPERATIVE_METRICS), None),
    ]
    page = render_html(views)
    assert "<h2>Rebalance protocols side by side</h2>" in page
    assert "<td>+C 1.20s (0_0 on A, not RUNNING)</td>" in page
    summary = build_summary(views)
    assert [r["protocol"] for r in summary["protocols"]] == ["cooperative", "eager"]
    eager, cooperative = summary["runs"]
    assert eager["protocol"] == "eager" and cooperative["staying_pauses"] == []
    assert eager["staying_pauses"] == [
        {"client": "A", "task": "0_0", "seconds": 1.2, "kind": "not RUNNING", "end_ms": 4000}
    ]
    assert cooperative["rebalances_per_step"] == [
        {"change": "start: A, B", "rebalances": 1},
        {"change": "+C", "rebalances": 2},
    ]
    assert "Rebalance protocols" not in render_html(views[:1])
