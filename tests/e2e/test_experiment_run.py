"""`streamlet experiment run` end to end on the real broker: seed 000's 2 -> 3 scenario, Ctrl-C, a failing step.

The runner is run as users run it (the CLI, in its own process) against the session's broker; every test
checks that no worker process it started is left alive, whatever the outcome.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from tests.support.chromium import Elements, dump_dom
from tests.support.workers import ROOT, running

pytestmark = pytest.mark.e2e

SEED_SCENARIO = ROOT / "examples" / "experiments" / "seed000_2_to_3.toml"
A = "4b61083e-57d0-457d-951f-d06556c148ca"
B = "7156cef1-307e-49c0-a5bb-0f11d26a4933"
C = "bbb83e43-b1af-4b2d-a60a-94a7091684d0"
STATEFUL = {f"1_{p}" for p in range(6)}

SHORT_APP = """
[app]
target = "examples.wordcount.app:app"
env = { WORDCOUNT_INPUT_TOPIC = "{input_topic}", WORDCOUNT_OUTPUT_TOPIC = "{output_topic}", \
WORDCOUNT_APPLICATION_ID = "{application_id}" }

[app.config]
commit_interval_ms = 500

[input]
generator = "words"
lines = 100
rate = 50
"""


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "streamlet.cli", "experiment", *args]


def _worker_pids(run_dir: Path) -> dict[str, int]:
    return {p.parent.name: int(p.read_text()) for p in (run_dir / "clients").glob("*/pid")}


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "assignments.jsonl").read_text().splitlines() if line.strip()]


def _steps_allow_s(scenario: Path) -> float:
    """What the scenario's steps may take by their own timeouts and sleeps."""
    steps = tomllib.loads(scenario.read_text())["step"]
    return float(sum(step.get("timeout", 0) + step.get("seconds", 0) for step in steps))


def _stateful(tasks: list[str]) -> set[str]:
    return set(tasks) & STATEFUL


def test_seed_000_scenario_runs_and_reports(bootstrap_servers: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "hata"
    began = time.monotonic()
    run = subprocess.run(
        _cli("run", str(SEED_SCENARIO), "--run-dir", str(run_dir), "--bootstrap-servers", bootstrap_servers),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    elapsed = time.monotonic() - began
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "passed" and record["verification"]["ok"], record
    assert record["produced"] == 7000 and record["assignor"] == "high_availability"
    assert record["protocol"] == "cooperative"  # StreamsConfig's default: the scenario does not set it
    pids = _worker_pids(run_dir)
    assert set(pids) == {"A", "B", "C"} and not any(running(p) for p in pids.values())
    assert all(info["exit_code"] == 0 for info in record["clients"].values()), record["clients"]

    events = _events(run_dir)[: record["timeline_events"]]
    assert all(e["version"] == 1 and e["application_id"] == record["application_id"] for e in events)
    last = {c["process_id"]: c for c in events[-1]["clients"]}
    assert set(last) == {A, B, C} and events[-1]["followup_scheduled"] is False
    assert sorted(len(_stateful(c["active"])) for c in last.values()) == [2, 2, 2]
    # seed 000's mechanism: C joins with warmups and no stateful active
    joined = next(e for e in events if C in {c["process_id"] for c in e["clients"]})
    c_first = next(c for c in joined["clients"] if c["process_id"] == C)
    assert not _stateful(c_first["active"]) and 0 < len(c_first["warmup"]) <= 2, joined
    assert joined["followup_scheduled"] is True and joined["trigger"] == "join"
    # later rounds move them: probing rebalances, or (cooperative) the follow-ups of rounds that withheld tasks,
    # which rerun the assignor too
    assert any(e["trigger"] in ("probing", "revocation") for e in events[events.index(joined) + 1 :])

    # every client's metrics events were collected; its last one holds its final counts (sent on shutdown)
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    last_metrics = {e["process_id"]: e for e in metrics}
    assert set(last_metrics) == {A, B, C} and all(e["type"] == "streamlet.metrics" for e in metrics)
    lines_read = sum(
        t["records_processed"] for e in last_metrics.values() for n, t in e["tasks"].items() if n[0] == "0"
    )
    assert lines_read >= record["produced"]  # every input line once (more only if a task reprocessed)
    # C joined while the input still flowed: it processed records, and the report flags no idle joiner
    assert last_metrics[C]["records_processed"] > 0, last_metrics[C]
    # tasks are SUSPENDED from each revocation to the next assignment: several rebalances took some time
    assert sum(t["not_running_ms"] for e in last_metrics.values() for t in e["tasks"].values()) > 0

    report = subprocess.run(
        _cli("report", str(run_dir), "--markdown-only"), cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert report.returncode == 0, report.stderr
    assert "| client | records processed | time tasks not RUNNING (s) |" in report.stdout
    assert "metrics.jsonl" not in "".join(line for line in report.stdout.splitlines() if "missing" in line)
    assert "| final stateful split | A=2 B=2 C=2 |" in report.stdout
    assert "| output | exact |" in report.stdout
    assert "| joining clients that processed nothing | none |" in report.stdout
    assert "| rebalance protocol | cooperative |" in report.stdout
    assert "| round | gen | trigger | client |" in report.stdout
    assert (run_dir / "report.md").read_text() == report.stdout
    # the steps fail on their own timeouts; this bounds the whole run, start-up and verification included (a minute
    # more), under the other e2e tests' load: 132 s in a full run, 82 s alone (47 s of input, so C joins under load)
    assert elapsed < _steps_allow_s(SEED_SCENARIO) + 60, f"the e2e scenario took {elapsed:.0f}s"

    _check_html_report(run_dir, tmp_path / "report", events, last_metrics)


def _check_html_report(run_dir: Path, out: Path, events: list[dict], last_metrics: dict[str, dict]) -> None:
    """The PySpark report of the run: summary.json's numbers against the events, report.html in Chromium."""
    began = time.monotonic()
    report = subprocess.run(
        _cli("report", str(run_dir), "--out", str(out)), cwd=ROOT, capture_output=True, text=True, timeout=150
    )
    assert report.returncode == 0, report.stdout[-2000:] + report.stderr[-3000:]
    spark_s = time.monotonic() - began
    summary = json.loads((out / "summary.json").read_text())
    [run] = summary["runs"]
    assert [r["generation"] for r in run["rounds"]] == [e["generation"] for e in events]
    assert run["problems"] == [] and run["convergence"][-1]["rebalances"] is not None
    assert run["protocol"] == "cooperative" and [r["protocol"] for r in summary["protocols"]] == ["cooperative"]
    # every record the clients counted is in the throughput curve once (no client restarted in this run)
    series = run["series"]
    counted = sum(e["records_processed"] for e in last_metrics.values())
    assert round(sum(v for _, v in series["throughput"]) * series["bucket_s"]) == counted
    assert max(v for _, v in series["throughput"]) > 0 and set(series["load"]) == {"A", "B", "C"}
    # the moves are the rounds' own, each with the records its destination restored (0 when a warmup caught up)
    # (every round's: under cooperative, rounds after a convergence re-run the assignor and may move tasks too)
    assert len(run["moves"]) == int(run["metrics"]["stateful task moves"].split()[0]) > 0
    assert all(isinstance(m["restored"], int) and m["restored"] >= 0 for m in run["moves"])

    page = Elements(dump_dom((out / "report.html").as_uri()))
    rendered_rounds = [int(t["data-round"]) for t in page.find("table", class_="round")]
    assert rendered_rounds == [r["round"] for r in run["rounds"]]
    plots = {p["data-plot"]: int(p["data-points"]) for p in page.find("svg", class_="plot")}
    assert {"throughput", "lag", "load", "stateful", "placement A", "placement B", "placement C"} <= set(plots)
    assert all(n > 0 for n in plots.values()), plots
    assert all(line["points"].strip() for line in page.find("polyline", class_="series"))
    assert len(page.find("rect", class_="bar")) == sum(n for k, n in plots.items() if k.startswith("placement"))
    print(f"report: Spark job + HTML in {spark_s:.0f}s")


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.2)


def test_ctrl_c_stops_every_process_the_run_started_even_a_paused_one(bootstrap_servers: str, tmp_path: Path) -> None:
    scenario = tmp_path / "long.toml"
    scenario.write_text(
        '[experiment]\nname = "interrupted"\n'
        + SHORT_APP
        + '\n[[step]]\naction = "start"\nclients = ["A", "B"]\nthreads = 1\n'
        + '\n[[step]]\naction = "wait_stable"\ntimeout = 60\n'
        + '\n[[step]]\naction = "pause"\nclient = "A"\n'
        + '\n[[step]]\naction = "sleep"\nseconds = 300\n'
    )
    run_dir = tmp_path / "run"
    out_path = tmp_path / "runner.out"
    with out_path.open("wb") as out:
        proc = subprocess.Popen(
            _cli("run", str(scenario), "--run-dir", str(run_dir), "--bootstrap-servers", bootstrap_servers),
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            # as in a terminal: a test session started in the background by a shell without job control
            # inherits SIGINT ignored, and the runner would never see the Ctrl-C this test sends
            preexec_fn=_default_sigint,
        )
    try:

        def sleeping() -> bool:
            path = run_dir / "run.json"
            return path.exists() and len(json.loads(path.read_text() or "{}").get("steps", [])) == 4

        _wait_for(sleeping, 90, "the run never reached its sleep step (after the group was stable)")
        pids = _worker_pids(run_dir)
        assert len(pids) == 2 and all(running(p) for p in pids.values())
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    output = out_path.read_text(errors="replace")
    assert code == 130, output[-3000:]
    assert not any(running(p) for p in pids.values()), pids
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted"
    # stopped cleanly (SIGTERM), the paused A too (SIGCONT first)
    assert [c["exit_code"] for c in record["clients"].values()] == [0, 0]
    assert "every process was stopped" in output


def test_a_failing_step_stops_every_process_and_says_why(bootstrap_servers: str, tmp_path: Path) -> None:
    scenario = tmp_path / "fails.toml"
    scenario.write_text(
        '[experiment]\nname = "fails"\n'
        + SHORT_APP
        + '\n[[step]]\naction = "start"\nclients = ["A", "B"]\nthreads = 1\n'
        + '\n[[step]]\naction = "stop"\nclient = "B"\nsignal = "SIGKILL"\n'
        + '\n[[step]]\naction = "wait_converged"\ntimeout = 1\n'
    )
    run_dir = tmp_path / "run"
    run = subprocess.run(
        _cli("run", str(scenario), "--run-dir", str(run_dir), "--bootstrap-servers", bootstrap_servers),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "failed" and "did not converge within 1s" in record["error"]
    assert record["clients"]["B"]["stop"] == "SIGKILL" and record["clients"]["B"]["exit_code"] == -9
    assert not any(running(p) for p in _worker_pids(run_dir).values())
    assert "did not converge" in run.stderr


def test_a_bad_scenario_starts_nothing(tmp_path: Path) -> None:
    scenario = tmp_path / "bad.toml"
    scenario.write_text(
        '[experiment]\nname = "bad"\n'
        + SHORT_APP
        + '\n[[step]]\naction = "start"\nclients = ["A"]\n\n[[step]]\naction = "stop"\nclient = "X"\n'
    )
    run_dir = tmp_path / "run"
    run = subprocess.run(
        _cli("run", str(scenario), "--run-dir", str(run_dir)), cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2 and "no running client 'X'" in run.stderr, run.stderr
    assert not run_dir.exists()


def test_a_scenario_runs_under_both_protocols_side_by_side(bootstrap_servers: str, tmp_path: Path) -> None:
    """`--protocols eager,cooperative`: one run dir per protocol, each run's workers on that protocol (the leader
    withholds the tasks that move only under cooperative), and the report's table of both."""
    scenario = tmp_path / "protocols.toml"
    scenario.write_text(
        '[experiment]\nname = "protocols"\n'
        + SHORT_APP.replace("commit_interval_ms = 500", "commit_interval_ms = 500\nmetrics_interval_ms = 500")
        + '\n[[step]]\naction = "start"\nclients = ["A"]\nthreads = 1\n'
        + '\n[[step]]\naction = "wait_stable"\ntimeout = 60\n'
        + '\n[[step]]\naction = "add"\nclient = "B"\nthreads = 1\n'
        + '\n[[step]]\naction = "wait_converged"\ntimeout = 60\n'
    )
    base = tmp_path / "runs"
    run = subprocess.run(
        _cli(
            "run",
            str(scenario),
            "--protocols",
            "eager,cooperative",
            "--run-dir",
            str(base),
            "--bootstrap-servers",
            bootstrap_servers,
        ),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for protocol in ("eager", "cooperative"):
        run_dir = base / f"protocols-{protocol}"
        record = json.loads((run_dir / "run.json").read_text())
        assert record["protocol"] == protocol and record["verification"]["ok"], record
        assert not any(running(p) for p in _worker_pids(run_dir).values())
        logs = "".join((run_dir / "clients" / c / "worker.log").read_text() for c in ("A", "B"))
        withheld = "until it is safely revoked in followup rebalance" in logs
        assert withheld == (protocol == "cooperative"), f"{protocol}: the leader withheld tasks: {withheld}"
    table = (base / "protocols.md").read_text()
    assert table.startswith("# Rebalance protocols side by side")
    rows = [line for line in table.splitlines() if line.startswith("| protocols |")]
    assert [row.split(" | ")[1] for row in rows] == ["cooperative", "eager"] and all(" exact |" in r for r in rows)

    report = subprocess.run(
        _cli("report", str(base / "protocols-eager"), str(base / "protocols-cooperative"), "--markdown-only"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert report.returncode == 0 and report.stdout.startswith(table), report.stdout[:2000] + report.stderr
    assert "| rebalance protocol | eager | cooperative |" in report.stdout
