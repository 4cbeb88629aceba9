"""Corrupt local state before a restart: a truncated SST, a truncated MANIFEST, a garbage checkpoint.

Each store is wiped and restored from its changelog once, with a WARNING naming the task and the store,
and the counts come out exact (the worker had stopped cleanly, so nothing is replayed).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.chaos._report import report
from tests.support.kafka import KafkaTestCluster
from tests.support.wordcount import SEED_LINE, expected_counts, real_text_lines, wait_for_counts
from tests.support.workers import produce_steadily

pytestmark = pytest.mark.chaos


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


async def test_corrupt_stores_and_checkpoints_are_wiped_and_restored(kafka: KafkaTestCluster, wordcount_app) -> None:
    source, sink, workers = await wordcount_app()
    lines = real_text_lines() + [SEED_LINE]
    first, second = lines[: len(lines) // 2], lines[len(lines) // 2 :]
    workers.start(0)
    await produce_steadily(kafka, source, first, per_second=1000)
    assert await wait_for_counts(kafka, sink, expected_counts(first), timeout=120) == expected_counts(first)
    assert workers.stop(0) == 0

    app_dir = next(p for p in workers.state_dir(0).iterdir() if p.is_dir())
    stores = {task: app_dir / task / "rocksdb" / "counts-store" for task in ("1_0", "1_1", "1_2")}
    truncate(max(stores["1_0"].glob("*.sst"), key=lambda p: p.stat().st_size))
    truncate(next(stores["1_1"].glob("MANIFEST-*")))
    (app_dir / "1_2" / ".checkpoint").write_text("0\nnot a checkpoint\n")

    workers.start(0)
    await produce_steadily(kafka, source, second, per_second=1000)
    input_done = time.monotonic()
    truth = expected_counts(lines)
    final = await wait_for_counts(kafka, sink, truth, timeout=120)
    assert final == truth, "a wiped store must restore every count from its changelog"
    report("corrupt SST / MANIFEST / checkpoint", final, truth, since=input_done)

    log = workers.log(0)
    for task in ("1_0", "1_1", "1_2"):
        assert f"task {task}" in log, f"no log line names task {task}"
    warnings = [line for line in log.splitlines() if " WARNING " in line or " ERROR " in line]
    assert len(warnings) <= 20, warnings[:30]
    files = sum(1 for _ in app_dir.rglob("*"))
    assert files < 400, f"{files} files under the state dir: is a store retried in a loop?"
    assert workers.stop(0) == 0
    await asyncio.sleep(0)
