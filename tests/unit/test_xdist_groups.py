"""scripts/test's premise: under `-n N --dist loadgroup`, a test module outside the unit tier runs on one process
(tests/conftest.py), so a module fixture (a Kafka Streams JVM, a 3-node cluster) starts once.

pytest 9.2 with pytest-xdist 3.8 broke it silently: xdist renamed the node ids pytest no longer reads, every test went
to any process, and the failover tests started two 3-node clusters at once. A real pytest run proves the grouping.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.conftest import deal_order, scheduling_rank, xdist_group
from tests.support import durations

REPO = Path(__file__).resolve().parents[2]
CONFTEST = "from tests.conftest import pytest_collection_modifyitems, pytest_configure  # noqa: F401\n"
TESTS = "".join(f"def test_{i}() -> None:\n    pass\n\n\n" for i in range(6))


def test_groups_by_module_but_spark_together_and_the_unit_tier_apart() -> None:
    assert xdist_group("tests/integration/runtime/test_a.py") == "tests/integration/runtime/test_a.py"
    assert xdist_group("tests/integration/spark/test_a.py") == "spark"
    assert xdist_group("tests/unit/runtime/test_a.py") is None


def test_a_process_test_is_dealt_alone_unless_its_module_shares_a_fixture() -> None:
    assert xdist_group("tests/chaos/test_a.py", "def test_x(kafka) -> None: ...") is None
    assert xdist_group("tests/e2e/test_a.py", "@pytest.fixture\ndef app(): ...") is None
    shared = '@pytest.fixture(scope="module")\ndef cluster(): ...'
    assert xdist_group("tests/chaos/test_a.py", shared) == "tests/chaos/test_a.py"


def test_the_long_groups_are_dealt_first_and_the_unit_tier_last() -> None:
    tests = [
        ("tests/unit/test_a.py", None),
        ("tests/e2e/test_a.py", None),
        ("tests/integration/runtime/test_a.py", "tests/integration/runtime/test_a.py"),
        ("tests/chaos/test_a.py", None),
        ("tests/oracle/semantics/test_a.py", "tests/oracle/semantics/test_a.py"),
        ("tests/integration/spark/test_a.py", "spark"),
    ]
    assert [path for path, _ in sorted(tests, key=lambda t: scheduling_rank(*t))] == [
        "tests/integration/spark/test_a.py",
        "tests/oracle/semantics/test_a.py",
        "tests/chaos/test_a.py",
        "tests/e2e/test_a.py",
        "tests/integration/runtime/test_a.py",
        "tests/unit/test_a.py",
    ]


def test_groups_are_dealt_by_their_recorded_seconds_longest_first() -> None:
    tests = [
        ("tests/chaos/test_a.py::test_short", "tests/chaos/test_a.py", None),
        ("tests/e2e/test_b.py::test_long", "tests/e2e/test_b.py", None),
        ("tests/integration/runtime/test_c.py::test_1", "tests/integration/runtime/test_c.py", "c"),
        ("tests/integration/runtime/test_c.py::test_2", "tests/integration/runtime/test_c.py", "c"),
        ("tests/unit/test_d.py::test_new", "tests/unit/test_d.py", None),
        ("tests/oracle/test_e.py::test_new", "tests/oracle/test_e.py", "e"),
    ]
    recorded = {
        "tests/chaos/test_a.py::test_short": 4.0,
        "tests/e2e/test_b.py::test_long": 77.0,
        "tests/integration/runtime/test_c.py::test_1": 30.0,
        "tests/integration/runtime/test_c.py::test_2": 30.0,
    }
    # the module's two tests (60 s together) before the 4 s one; the unrecorded ones after, oracle before unit
    assert deal_order(tests, recorded) == [1, 2, 3, 0, 5, 4]


def test_a_timeline_gives_the_durations_of_its_tests_without_their_groups() -> None:
    lines = [
        "100.00 177.50 gw2 tests/e2e/test_b.py::test_long\n",
        "100.00 130.00 gw1 tests/integration/runtime/test_c.py::test_1[x]@tests/integration/runtime/test_c.py\n",
        "100.00 100.20 gw0 tests/unit/test_d.py::test_fast\n",
    ]
    assert durations.from_timeline(lines) == {
        "tests/e2e/test_b.py::test_long": 77.5,
        "tests/integration/runtime/test_c.py::test_1[x]": 30.0,
    }


def _run_loadgroup(tmp_path: Path, modules: dict[str, str], processes: int) -> str:
    """pytest -v on `modules` (path -> source) under tests/conftest.py's hooks, `--dist loadgroup`: its output."""
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for module, source in modules.items():
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text(source)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", str(processes), "--dist", "loadgroup", "-v"]
        + list(modules),
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout


def test_a_module_runs_on_one_process_under_loadgroup(tmp_path: Path) -> None:
    modules = ("tests/integration/runtime/test_first.py", "tests/oracle/test_second.py")
    stdout = _run_loadgroup(tmp_path, dict.fromkeys(modules, TESTS), processes=2)
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, module in re.findall(r"^\[(gw\d+)\] .*?PASSED (tests/\S+?\.py)::", stdout, re.MULTILINE):
        workers[module].add(worker)
    assert set(workers) == set(modules), stdout[-3000:]
    assert all(len(w) == 1 for w in workers.values()), dict(workers)


def test_groups_are_dealt_in_rank_order_not_by_their_number_of_tests(tmp_path: Path) -> None:
    """pytest-xdist would deal the six-test module first (it sorts groups by size): Spark's one goes first."""
    modules = {
        "tests/integration/runtime/test_many.py": TESTS,
        "tests/integration/spark/test_few.py": TESTS.split("\n\n\n")[0] + "\n",
    }
    stdout = _run_loadgroup(tmp_path, modules, processes=1)
    ran = re.findall(r"PASSED (tests/\S+?\.py)::", stdout)
    assert ran[0] == "tests/integration/spark/test_few.py" and len(ran) == 7, stdout[-3000:]
