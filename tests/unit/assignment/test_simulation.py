"""`simulate` and the `streamlet assign` entry point: contract details and error paths."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from streamlet.assignment.simulation import SimulationInputError, main, simulate

CASE: dict[str, Any] = {
    "config": {"acceptable_recovery_lag": 0, "probing_rebalance_interval_ms": 60000},
    "tasks": {"stateless": ["0_0", "0_1"], "stateful": ["1_0", "1_1"]},
    "changelog_end_offset_sums": {"1_0": 2, "1_1": 2},
    "clients": {
        "4b61083e-57d0-457d-951f-d06556c148ca": {
            "capacity": 2,
            "prev_active": ["1_0"],
            "prev_standby": [],
            "task_offset_sums": {"1_0": -2, "1_1": 1},
        },
        "BBB83E43-B1AF-4B2D-A60A-94A7091684D0": {"capacity": 1},
    },
}


def test_contract_output() -> None:
    result = simulate(CASE)
    # clients in Java UUID order (negative msb first), canonical lower-case ids, sorted task lists
    assert list(result["clients"]) == ["bbb83e43-b1af-4b2d-a60a-94a7091684d0", "4b61083e-57d0-457d-951f-d06556c148ca"]
    # round robin: 1_0 -> bbb (lag 2 > 0, moved to the running 4b6 with a warmup), 1_1 -> 4b6 (lag 1, nobody better)
    assert result["clients"]["4b61083e-57d0-457d-951f-d06556c148ca"]["active"] == ["1_0", "1_1"]
    assert result["clients"]["bbb83e43-b1af-4b2d-a60a-94a7091684d0"] == {"active": ["0_0", "0_1"], "standby": ["1_0"]}
    assert result["followup_rebalance_ms"] == 60000


def test_defaults_and_no_probing() -> None:
    case = {"tasks": {"stateful": ["0_0"]}, "clients": {"00000000-0000-0000-0000-000000000001": {}}}
    assert simulate(case) == {
        "clients": {"00000000-0000-0000-0000-000000000001": {"active": ["0_0"], "standby": []}},
        "followup_rebalance_ms": None,
    }


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"tasks": {"stateful": ["1_0", "nope"]}}, "not a task id"),
        ({"changelog_end_offset_sums": {"7_7": 1}}, "unknown task id 7_7"),
        ({"changelog_end_offset_sums": {"0_0": 1}}, "stateless"),
        ({"config": {"max_warmups": 1}}, "unknown keys"),
        ({"config": {"num_standby_replicas": "1"}}, "must be an integer"),
        ({"clients": {"not-a-uuid": {}}}, "not a process id"),
        ({"clients": {"00000000-0000-0000-0000-000000000001": {"capacity": 0}}}, "capacity must be >= 1"),
        ({"clients": {"00000000-0000-0000-0000-000000000001": {"prev_active": ["5_5"]}}}, "unknown task id 5_5"),
        ({"clients": {"00000000-0000-0000-0000-000000000001": {"task_offset_sums": {"1_0": -7}}}}, "expected >= 0"),
        ({"tasks": {"stateless": ["1_0"], "stateful": ["1_0"]}}, "both stateless and stateful"),
    ],
)
def test_bad_input_is_rejected_with_the_field_named(patch: dict[str, Any], message: str) -> None:
    with pytest.raises(SimulationInputError, match=message):
        simulate(CASE | patch)


def test_main_reads_a_file_and_prints_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "case.json"
    path.write_text(json.dumps(CASE))
    assert main([str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == simulate(CASE)


def test_main_reads_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(CASE)))
    assert main(["--assignor", "high_availability"]) == 0
    assert json.loads(capsys.readouterr().out)["followup_rebalance_ms"] == 60000


@pytest.mark.parametrize(
    ("stdin", "argv", "message"),
    [
        ("{not json", [], "invalid JSON"),
        (json.dumps(CASE | {"tasks": {"stateful": ["1_0"]}}), [], "unknown task id 1_1"),
        (json.dumps(CASE), ["--assignor", "nope"], "'nope' is not a known assignor"),
        (json.dumps(CASE), ["/no/such/case.json"], "cannot read /no/such/case.json"),
        ("[1, 2]", [], "case must be a JSON object"),
    ],
)
def test_main_errors_go_to_stderr_with_exit_2(
    stdin: str, argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err


def test_main_bad_flag_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--bogus"]) == 2
    assert "usage" in capsys.readouterr().err
