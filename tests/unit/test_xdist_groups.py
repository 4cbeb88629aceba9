"""scripts/test's premise: under `-n N --dist loadgroup`, a test module runs on one process (tests/conftest.py groups
by module), so a module fixture (a Kafka Streams JVM, a 3-node cluster) starts once.

pytest 9.2 with pytest-xdist 3.8 broke it silently: xdist renamed the node ids pytest no longer reads, every test went
to any process, and the failover tests started two 3-node clusters at once. A real pytest run proves the grouping.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# cheap modules with several tests each; xdist hands single tests out round-robin, so ungrouped they would split
MODULES = ("tests/unit/test_logging_utils.py", "tests/unit/test_wordcount_split.py")


def test_a_module_runs_on_one_process_under_loadgroup() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-v", *MODULES],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, module in re.findall(r"^\[(gw\d+)\] .*?PASSED (tests/\S+?\.py)::", run.stdout, re.MULTILINE):
        workers[module].add(worker)
    assert set(workers) == set(MODULES), run.stdout[-3000:]
    assert all(len(w) == 1 for w in workers.values()), dict(workers)
