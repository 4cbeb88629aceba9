"""The tests' recorded durations (tests/durations.json), by which the parallel runs deal their longest groups first.

pytest-xdist deals groups (a test without one is its own) to its processes in collection order: a long group dealt
last leaves the other processes idle while it ends (seed 000's scenario, 77 s, started 5 minutes into the e2e tier
and kept one process busy a minute and a half after the others had finished). tests/conftest.py sorts the groups by
their recorded seconds, longest first (largest processing time first); a test with no record (a new one) counts as 0
and keeps its tier's place. The figures only order the run: a stale one costs time, never a result. Refresh them from
a full run's timeline:

    STREAMLET_TEST_TIMELINE=/tmp/timeline scripts/test && python -m tests.support.durations /tmp/timeline
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DURATIONS_FILE = Path(__file__).resolve().parents[1] / "durations.json"
#: shorter tests are not recorded: they fill the end of a run whatever their order
RECORDED_FROM_S = 1.0


def test_id(nodeid: str) -> str:
    """A test's id without pytest-xdist's "@group" suffix."""
    return nodeid.rsplit("@", 1)[0] if "@" in nodeid.rsplit("]", 1)[-1] else nodeid


def load(path: Path = DURATIONS_FILE) -> dict[str, float]:
    if not path.is_file():
        return {}
    durations: dict[str, float] = json.loads(path.read_text())
    return durations


def from_timeline(lines: list[str]) -> dict[str, float]:
    """{test id: seconds} of the tests a timeline (STREAMLET_TEST_TIMELINE) recorded at RECORDED_FROM_S or longer; a
    test run twice (the compatibility and pure-Python passes run tests again) keeps its first run's."""
    durations: dict[str, float] = {}
    for line in lines:
        began, ended, _process, nodeid = line.rstrip("\n").split(" ", 3)
        seconds = float(ended) - float(began)
        if seconds >= RECORDED_FROM_S:
            durations.setdefault(test_id(nodeid), round(seconds, 1))
    return durations


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.support.durations TIMELINE", file=sys.stderr)
        return 2
    durations = from_timeline(Path(argv[0]).read_text().splitlines())
    DURATIONS_FILE.write_text(json.dumps(dict(sorted(durations.items())), indent=0) + "\n")
    print(f"wrote {len(durations)} durations to {DURATIONS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
