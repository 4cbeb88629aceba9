"""Scenario files: parsed and checked before anything starts (pure: no broker, no process)."""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

import pytest

from streamlet.experiments.scenario import ScenarioError, load_scenario, parse_scenario

EXPERIMENTS = Path(__file__).resolve().parents[3] / "examples" / "experiments"

BASE: dict[str, Any] = {
    "experiment": {"name": "t"},
    "app": {"target": "examples.wordcount.app:app", "config": {"task_assignor": "high_availability"}},
    "input": {"generator": "words", "lines": 10, "rate": 5},
    "process_ids": {"A": "4b61083e-57d0-457d-951f-d06556c148ca"},
    "step": [
        {"action": "start", "clients": ["A", "B"], "threads": 2},
        {"action": "wait_stable"},
        {"action": "add", "client": "C"},
        {"action": "stop", "client": "B", "signal": "kill"},
        {"action": "replace", "client": "A", "by": "D"},
        {"action": "pause", "client": "C"},
        {"action": "resume", "client": "C"},
        {"action": "rate", "rate": 50},
        {"action": "wait_converged", "timeout": 30},
    ],
}


def _with(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(BASE)
    for key, value in changes.items():
        raw[key] = value
    return raw


def _steps(*steps: dict[str, Any]) -> dict[str, Any]:
    return _with(step=list(steps))


@pytest.mark.parametrize("path", sorted(EXPERIMENTS.glob("*.toml")), ids=lambda p: p.stem)
@pytest.mark.parametrize(
    "assignor", ["high_availability", "balanced", "sticky", "legacy_sticky", "fallback_prior", "faust"]
)
def test_every_shipped_scenario_parses_with_every_assignor(path: Path, assignor: str) -> None:
    scenario = load_scenario(path).with_assignor(assignor)
    assert scenario.app.task_assignor == assignor
    assert scenario.app.target == "examples.wordcount.app:app"
    assert scenario.steps[0].action == "start"
    assert scenario.input.corpus is None or scenario.input.corpus.exists()


def test_seed_scenario_uses_the_seed_process_ids() -> None:
    scenario = load_scenario(EXPERIMENTS / "seed000_2_to_3.toml")
    assert scenario.process_ids["C"] == uuid.UUID("bbb83e43-b1af-4b2d-a60a-94a7091684d0")
    assert scenario.client_names() == ["A", "B", "C"]
    assert scenario.app.config["acceptable_recovery_lag"] == 0


def test_a_full_timeline_parses_with_typed_steps() -> None:
    scenario = parse_scenario(BASE)
    assert [s.action for s in scenario.steps][:3] == ["start", "wait_stable", "add"]
    assert scenario.steps[3].signal == "SIGKILL"
    assert scenario.steps[8].timeout == 30.0
    assert scenario.client_names() == ["A", "B", "C", "D"]
    counted = parse_scenario(_with(process_ids={}, step=[{"action": "start", "clients": 3}])).steps[0]
    assert counted.clients == ("c1", "c2", "c3")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (_steps({"action": "start", "clients": ["A"]}, {"action": "explode"}), "unknown action 'explode'"),
        (_steps({"action": "start", "clients": ["A"]}, {"action": "stop", "client": "X"}), "no running client 'X'"),
        (
            _steps(
                {"action": "start", "clients": ["A"]},
                {"action": "stop", "client": "A"},
                {"action": "stop", "client": "A"},
            ),
            "no running client 'A'",
        ),
        (_steps({"action": "start", "clients": ["A"]}, {"action": "add", "client": "A"}), "already exists"),
        (
            _steps({"action": "start", "clients": ["A"]}, {"action": "replace", "client": "A", "by": "A"}),
            "already exists",
        ),
        (_steps({"action": "start", "clients": ["A"]}, {"action": "resume", "client": "A"}), "is not paused"),
        (
            _steps(
                {"action": "start", "clients": ["A"]}, {"action": "stop", "client": "A"}, {"action": "wait_converged"}
            ),
            "no running client to wait for",
        ),
        (_steps({"action": "wait_stable"}), "no running client"),
        (_steps({"action": "start", "clients": ["A"], "color": "red"}), "unknown key(s) color"),
        (_steps({"action": "add"}), "missing client"),
        (
            _steps({"action": "start", "clients": ["A"]}, {"action": "stop", "client": "A", "signal": "SIGHUP"}),
            "SIGTERM or SIGKILL",
        ),
        (
            _steps({"action": "start", "clients": ["A"]}, {"action": "sleep", "seconds": -1}),
            "seconds must be a number >= 0",
        ),
        (_with(step=[]), "needs a timeline"),
        (_with(app={"target": "examples.wordcount.app"}), "expected MODULE:APP"),
        (_with(app={"config": {}}), "target must be a non-empty string"),
        (_with(app={"target": "m:a", "config": {"num_stream_thread": 2}}), "not a StreamsConfig setting"),
        (_with(app={"target": "m:a", "config": {"state_dir": "/x"}}), "set by the runner"),
        (_with(app={"target": "m:a", "config": {"task_assignor": "nope"}}), "not a known assignor"),
        (_with(app={"target": "m:a", "config": {"acceptable_recovery_lag": "lots"}}), "must be an integer"),
        (_with(app={"target": "m:a", "env": {"X": "{nope}"}}), "unknown placeholder"),
        (_with(input={"lines": 1}), "exactly one of corpus"),
        (_with(input={"corpus": "does/not/exist"}), "does not exist"),
        (_with(input={"generator": "dice"}), "expected one of words"),
        (_with(process_ids={"A": "not-a-uuid"}), "is not a UUID"),
        (_with(process_ids={"A": str(uuid.UUID(int=1)), "B": str(uuid.UUID(int=1))}), "given twice"),
        (_with(process_ids={"Z": str(uuid.UUID(int=1))}), "never starts: Z"),
        (_with(experiment={"name": "a b"}), "name 'a b'"),
        (_with(extra={}), "unknown key(s) extra"),
    ],
)
def test_bad_scenarios_are_errors_naming_the_problem(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(raw)
    assert message in str(info.value)


def test_unknown_assignor_override_is_an_error() -> None:
    with pytest.raises(ScenarioError, match="--assignor"):
        parse_scenario(BASE).with_assignor("fastest")


def test_missing_file_and_bad_toml_are_scenario_errors(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="does not exist"):
        load_scenario(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[experiment\nname=")
    with pytest.raises(ScenarioError, match="not valid TOML"):
        load_scenario(bad)


def test_boolean_settings_are_booleans_on_the_command_line_too() -> None:
    """A scenario's `leave_group_on_close = false` reaches the worker as `--config ...=false`, which must not
    become the (truthy) string "false"."""
    from streamlet.config import ConfigError, parse_setting

    raw = _with(app={"target": "m:a", "config": {"leave_group_on_close": False, "assignment_history": True}})
    assert parse_scenario(raw).app.config == {"leave_group_on_close": False, "assignment_history": True}
    assert parse_setting("leave_group_on_close", "false") is False
    assert parse_setting("assignment.history", "TRUE") is True
    with pytest.raises(ConfigError, match="must be true or false"):
        parse_setting("leave_group_on_close", "maybe")
