"""The runner's stable/converged decisions, from hand-made events and worker logs (no broker, no process)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from streamlet.experiments.runner import ExperimentRunner, HistoryCollector, Worker
from streamlet.experiments.scenario import parse_scenario
from streamlet.kafka.connect import Cluster

A = uuid.UUID("4b61083e-57d0-457d-951f-d06556c148ca")
B = uuid.UUID("7156cef1-307e-49c0-a5bb-0f11d26a4933")

RAW: dict[str, Any] = {
    "experiment": {"name": "waits"},
    "app": {
        "target": "examples.wordcount.app:app",
        "env": {"WORDCOUNT_INPUT_TOPIC": "{input_topic}", "WORDCOUNT_APPLICATION_ID": "{application_id}"},
    },
    "input": {"generator": "words", "lines": 5},
    "step": [{"action": "start", "clients": ["A", "B"]}, {"action": "wait_converged"}],
}


class _Proc:
    def __init__(self, code: int | None = None) -> None:
        self.returncode = code

    def poll(self) -> int | None:
        return self.returncode


def _runner(tmp_path: Path) -> ExperimentRunner:
    runner = ExperimentRunner(parse_scenario(RAW), tmp_path / "run")
    for name, pid in (("A", A), ("B", B)):
        directory = tmp_path / name
        directory.mkdir()
        runner.workers[name] = Worker(name, pid, 2, directory, _Proc())  # type: ignore[arg-type]
    runner.collector = HistoryCollector(Cluster("unused:0"), "unused", tmp_path / "events.jsonl")
    return runner


def _client(pid: uuid.UUID, active: list[str], lags: dict[str, int], capacity: int = 2) -> dict[str, Any]:
    return {"process_id": str(pid), "capacity": capacity, "active": active, "lags": lags}


def _event(followup: bool, *clients: dict[str, Any], at_ms: int = 0) -> dict[str, Any]:
    return {
        "generation": 1,
        "timestamp_ms": at_ms,
        "stateful_tasks": ["1_0", "1_1"],
        "clients": list(clients),
        "followup_scheduled": followup,
    }


def _log_line(worker: Worker, task: str, at: float) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at)) + f",{int(at * 1000) % 1000:03d}"
    with worker.log_path.open("a") as out:
        out.write(f"{stamp} INFO streamlet.runtime.task_manager stream-thread [x] task {task} restored, now RUNNING\n")


def test_stable_needs_an_event_with_exactly_the_running_clients_and_their_threads(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    assert runner.stable_problem(converged=False) == "no assignment event yet"
    assert runner.collector is not None
    runner.collector.events.append(_event(False, _client(A, ["1_0"], {"1_0": -2})))
    assert "has clients ['A'], expected ['A', 'B']" in (runner.stable_problem(converged=False) or "")
    runner.collector.events.append(_event(False, _client(A, ["1_0"], {}), _client(B, ["1_1"], {}, capacity=1)))
    assert runner.stable_problem(converged=False) == "client B has capacity 1, expected 2"
    runner.collector.events.append(_event(True, _client(A, ["1_0"], {"1_0": -2}), _client(B, ["1_1"], {"1_1": -2})))
    assert runner.stable_problem(converged=False) is None
    assert "scheduled a follow-up" in (runner.stable_problem(converged=True) or "")
    # a paused client is not expected in the group
    runner.workers["B"].paused = True
    assert "expected ['A']" in (runner.stable_problem(converged=False) or "")


def test_converged_needs_every_moved_stateful_active_running(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    assert runner.collector is not None
    now = time.time()
    event_ms = int(now * 1000)
    # B takes over 1_1 (it did not run it: lag 5), A keeps 1_0 (running there: lag -2)
    runner.collector.events.append(
        _event(False, _client(A, ["0_0", "1_0"], {"1_0": -2}), _client(B, ["1_1"], {"1_1": 5}), at_ms=event_ms)
    )
    assert runner.stable_problem(converged=True) == "client B is still restoring ['1_1']"
    _log_line(runner.workers["B"], "1_1", now - 60)  # restored in an earlier round: does not count
    assert runner.stable_problem(converged=True) == "client B is still restoring ['1_1']"
    _log_line(runner.workers["B"], "1_1", now + 0.5)
    assert runner.stable_problem(converged=True) is None


def test_a_task_the_clients_metrics_report_running_since_the_event_is_running(tmp_path: Path) -> None:
    """Cooperative: B ran 1_1 on through a later rebalance whose event gives its offset lag (0), not -2, and
    logged nothing new; B's metrics event after the rebalance says it is RUNNING."""
    runner = _runner(tmp_path)
    assert runner.collector is not None
    runner.metrics = HistoryCollector(Cluster("unused:0"), "unused", tmp_path / "metrics.jsonl")
    runner.collector.events.append(
        _event(False, _client(A, ["1_0"], {"1_0": -2}), _client(B, ["1_1"], {"1_1": 0}), at_ms=5000)
    )

    def metrics(pid: uuid.UUID, at_ms: int, state: str) -> dict[str, Any]:
        return {"process_id": str(pid), "timestamp_ms": at_ms, "tasks": {"1_1": {"state": state}}}

    runner.metrics.events.append(metrics(B, 4000, "RUNNING"))  # before the rebalance: does not count
    assert runner.stable_problem(converged=True) == "client B is still restoring ['1_1']"
    runner.metrics.events += [metrics(B, 6000, "RUNNING"), metrics(A, 6500, "RUNNING")]  # A's says nothing of B
    assert runner.stable_problem(converged=True) is None
    runner.metrics.events.append(metrics(B, 7000, "RESTORING"))  # the latest event counts
    assert runner.stable_problem(converged=True) == "client B is still restoring ['1_1']"


def test_app_env_fills_the_placeholders(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    env = runner._app_env()
    assert env["WORDCOUNT_INPUT_TOPIC"] == runner.record.input_topic
    assert env["WORDCOUNT_APPLICATION_ID"] == runner.record.application_id
    assert runner.record.application_id.startswith("waits-")
