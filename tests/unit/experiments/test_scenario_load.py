"""Every shipped scenario scales under load: its input is still being produced after every membership change."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from streamlet.experiments.scenario import load_problem, parse_scenario

EXPERIMENTS = Path(__file__).resolve().parents[3] / "examples" / "experiments"
SHIPPED = sorted(EXPERIMENTS.glob("*.toml"))
#: the runner's defaults, restated: a wait's timeout when none is given, and a stop's SIGKILL deadline
DEFAULT_TIMEOUT_S = 120.0
STOP_S = 60.0


def _worst_case_last_change_s(raw: dict[str, Any]) -> float:
    """Seconds into the run of the last start/add/stop/replace if every wait ran to its timeout."""
    elapsed = last = 0.0
    for step in raw["step"]:
        action = step["action"]
        if action in ("wait_stable", "wait_converged"):
            elapsed += step.get("timeout", DEFAULT_TIMEOUT_S)
        elif action in ("sleep", "pause"):
            elapsed += step.get("seconds", 0.0)
        elif action in ("stop", "replace"):
            elapsed += STOP_S
        if action in ("start", "add", "stop", "replace"):
            last = elapsed
    return last


def test_there_are_shipped_scenarios() -> None:
    assert len(SHIPPED) >= 4


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_input_lasts_past_every_membership_change(path: Path) -> None:
    raw = tomllib.loads(path.read_text())
    assert not any(step["action"] == "rate" for step in raw["step"]), "a rate step makes the input's end unknown"
    input_s = raw["input"]["lines"] / raw["input"]["rate"]
    last_change_s = _worst_case_last_change_s(raw)
    assert input_s >= last_change_s + 10, f"{path.name}: input ends at {input_s:g}s, last change at {last_change_s:g}s"
    assert load_problem(parse_scenario(raw, base_dir=path.parent)) is None


def _seed_like(lines: int) -> dict[str, Any]:
    """seed000_2_to_3 as it shipped before: C joined after its 10 s of input had ended."""
    return {
        "experiment": {"name": "seed"},
        "app": {"target": "examples.wordcount.app:app"},
        "input": {"generator": "words", "lines": lines, "rate": 150},
        "step": [
            {"action": "start", "clients": ["A", "B"]},
            {"action": "wait_stable", "timeout": 60},
            {"action": "sleep", "seconds": 3},
            {"action": "add", "client": "C"},
            {"action": "wait_converged", "timeout": 90},
        ],
    }


def test_a_client_joining_after_the_input_ends_is_a_problem() -> None:
    problem = load_problem(parse_scenario(_seed_like(1500)))
    assert problem is not None
    assert "the input lasts 10s (1500 lines at 150/s)" in problem
    assert "63s in" in problem and "at least 10950 lines" in problem


def test_enough_input_is_no_problem() -> None:
    assert load_problem(parse_scenario(_seed_like(10950))) is None
    assert load_problem(parse_scenario(_seed_like(10949))) is not None


def test_a_stop_counts_at_its_kill_deadline() -> None:
    raw = _seed_like(100_000)
    raw["step"].append({"action": "stop", "client": "A"})  # at most 60 + 3 + 90 + 60 s in
    assert load_problem(parse_scenario(raw)) is None
    raw["input"]["lines"] = int((213 + 10) * 150) - 1
    assert "213s in" in (load_problem(parse_scenario(raw)) or "")
