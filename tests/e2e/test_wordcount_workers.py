"""WordCount as separate worker processes (`streamlet worker ...`) on the real broker: scale-out and kill -9."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.kafka import KafkaTestCluster
from tests.support.wordcount import SEED_LINE, expected_counts, real_text_lines, wait_for_counts
from tests.support.workers import Workers, pyspark_verify_wordcount, wordcount_workers

pytestmark = pytest.mark.e2e


@pytest.fixture
async def wordcount(kafka: KafkaTestCluster, tmp_path: Path) -> Iterator[tuple[str, str, Workers]]:
    source, sink, workers = await wordcount_workers(kafka, tmp_path)
    try:
        yield source, sink, workers
    finally:
        workers.stop_all()


async def test_two_worker_processes_count_a_real_text(kafka: KafkaTestCluster, wordcount) -> None:
    source, sink, workers = wordcount
    workers.start(0)
    workers.start(1)
    lines = real_text_lines() + [SEED_LINE]
    await kafka.produce(source, [(None, line.encode()) for line in lines])
    expected = expected_counts(lines)
    got = await wait_for_counts(kafka, sink, expected, timeout=120)
    assert got == expected, f"{len(set(got.items()) ^ set(expected.items()))} differences"
    codes = workers.stop_all()
    assert codes == {0: 0, 1: 0}, (workers.log(0)[-2000:], workers.log(1)[-2000:])
    assert "stopped (clean=True)" in workers.log(0)

    # the batch side agrees on the same run: PySpark's ground truth vs the output topic
    verify = pyspark_verify_wordcount(kafka.bootstrap_servers, source, sink)
    assert verify.returncode == 0, verify.stdout[-3000:] + verify.stderr[-3000:]


async def test_kill_9_loses_no_update(kafka: KafkaTestCluster, wordcount) -> None:
    source, sink, workers = wordcount
    text = real_text_lines() + [SEED_LINE]
    parts = [text[: len(text) // 3], text[len(text) // 3 : 2 * len(text) // 3], text[2 * len(text) // 3 :]]
    workers.start(0)
    workers.start(1)
    await kafka.produce(source, [(None, line.encode()) for line in parts[0]])
    assert await wait_for_counts(kafka, sink, expected_counts(parts[0]), timeout=120) == expected_counts(parts[0])

    workers.kill9(0)  # no commit, no flush, no checkpoint: its tasks move to worker 1
    await kafka.produce(source, [(None, line.encode()) for line in parts[1]])
    so_far = expected_counts(parts[0] + parts[1])
    got = await wait_for_counts(kafka, sink, so_far, timeout=120, at_least=True)
    assert got.keys() == so_far.keys() and all(got[w] >= c for w, c in so_far.items())

    before = workers.assignments(0)
    workers.start(0)  # restarts on its old state dir: stores restored from the changelog (or wiped)
    await kafka.produce(source, [(None, line.encode()) for line in parts[2]])
    # it takes part: a SIGTERM while it is still starting (importing) would kill it before its handler exists
    await workers.wait_assigned(0, more_than=before)
    truth = expected_counts(text)
    final = await wait_for_counts(kafka, sink, truth, timeout=120, at_least=True)
    # at-least-once: a crash may replay uncommitted input (counts above the truth), but never loses any
    assert final.keys() == truth.keys()
    lost = {w: (final[w], c) for w, c in truth.items() if final[w] < c}
    assert not lost, f"lost updates: {list(lost.items())[:10]}"
    codes = workers.stop_all()
    assert codes[1] == 0 and codes[0] == 0, (workers.log(0)[-3000:], workers.log(1)[-3000:])
