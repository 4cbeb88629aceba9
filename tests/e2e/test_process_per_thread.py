"""`streamlet worker --threads 2 --process-per-thread` on the real broker: one client per stream thread, one worker."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamlet.state.state_directory import PROCESS_FILE_NAME
from tests.support.kafka import KafkaTestCluster
from tests.support.waiting import wait_until
from tests.support.wordcount import SEED_LINE, expected_counts, real_text_lines, wait_for_counts
from tests.support.workers import Workers, running, wordcount_workers

pytestmark = pytest.mark.e2e

PIDS = re.compile(r"worker: 2 processes, one per stream thread: 0: pid (\d+), 1: pid (\d+)")


@pytest.fixture
async def wordcount(kafka: KafkaTestCluster, tmp_path: Path) -> Iterator[tuple[str, str, Workers]]:
    source, sink, workers = await wordcount_workers(
        kafka, tmp_path, config={"process_per_thread": "true", "session_timeout_ms": "10000"}
    )
    try:
        yield source, sink, workers
    finally:
        workers.stop_all()


async def test_each_thread_runs_in_a_process_of_its_own_and_the_worker_stops_as_one(
    kafka: KafkaTestCluster, wordcount
) -> None:
    source, sink, workers = wordcount
    text = real_text_lines() + [SEED_LINE]
    first, second = text[: len(text) // 2], text[len(text) // 2 :]
    workers.start(0, threads=2)
    await kafka.produce(source, [(None, line.encode()) for line in first])
    assert await wait_for_counts(kafka, sink, expected_counts(first), timeout=120) == expected_counts(first)

    # two clients: each process has its own state dir and process id, and both took tasks
    log = workers.log(0)
    pids = [int(p) for p in PIDS.search(log).groups()]  # type: ignore[union-attr]
    state = workers.state_dir(0)
    ids = {(state / f"process-{i}" / workers.application_id / PROCESS_FILE_NAME).read_text() for i in (0, 1)}
    assert len(ids) == 2, ids
    for i in (0, 1):
        assert re.search(rf"^\[process {i}\] .*\] assigned active ", log, re.MULTILINE), log[-3000:]

    # one process dies: the worker stops the other cleanly and exits non-zero, leaving no process behind
    os.kill(pids[1], signal.SIGKILL)
    assert workers.procs[0].wait(timeout=60) == 1, workers.log(0)[-3000:]
    assert not running(pids[0]) and not running(pids[1])
    assert re.search(r"^\[process 0\] .*stopped \(clean=True\)", workers.log(0), re.MULTILINE), workers.log(0)[-3000:]

    # restarted on the same state dir, it goes on from there: nothing is lost (at least once)
    before = workers.assignments(0)
    workers.start(0, threads=2)
    await workers.wait_assigned(0, more_than=before)
    await kafka.produce(source, [(None, line.encode()) for line in second])
    truth = expected_counts(text)
    final = await wait_for_counts(kafka, sink, truth, timeout=120, at_least=True)
    assert final.keys() == truth.keys()
    lost = {w: (final[w], c) for w, c in truth.items() if final[w] < c}
    assert not lost, f"lost updates: {list(lost.items())[:10]}"

    restarted = [int(p) for p in PIDS.findall(workers.log(0))[-1]]
    assert workers.stop(0) == 0, workers.log(0)[-3000:]
    await wait_until(lambda: not any(map(running, restarted)), "the worker's processes to exit")
