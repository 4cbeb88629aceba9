"""Worker faults under steady input: a paused (zombie) worker, kill -9 with its state dir deleted, SIGTERM."""

from __future__ import annotations

import asyncio
import shutil
import signal
import time

import pytest

from tests.chaos._report import lost_updates, over_count, report
from tests.support.kafka import KafkaTestCluster
from tests.support.wordcount import SEED_LINE, expected_counts, real_text_lines, wait_for_counts
from tests.support.workers import produce_steadily

pytestmark = pytest.mark.chaos


def text(repeat: int = 1) -> list[str]:
    return (real_text_lines() + [SEED_LINE]) * repeat


async def test_a_paused_worker_past_its_session_timeout_loses_no_update(kafka: KafkaTestCluster, wordcount_app) -> None:
    """The zombie wakes after its tasks' new owner has counted all the input. Whatever stale state it still
    flushed would then be the last word in the changelog and the output: no later update would hide it."""
    # A short session timeout keeps the test short; the broker's minimum is 6 s.
    source, sink, workers = await wordcount_app(session_timeout_ms="6000", heartbeat_interval_ms="1000")
    workers.start(0)
    workers.start(1)
    await workers.wait_assigned(0, more_than=0)
    await workers.wait_assigned(1, more_than=0)
    lines = text(8)
    producing = asyncio.create_task(produce_steadily(kafka, source, lines, per_second=400))  # about 10 s
    await asyncio.sleep(5)
    workers.signal(0, signal.SIGSTOP)  # a long GC pause, a frozen VM: the group moves on without it
    paused_at = time.monotonic()
    await producing
    input_done = time.monotonic()
    truth = expected_counts(lines)
    before_wake = await wait_for_counts(kafka, sink, truth, timeout=60, at_least=True)
    assert not lost_updates(before_wake, truth), "worker 1 should have counted everything while worker 0 slept"
    await asyncio.sleep(max(0.0, 14 - (time.monotonic() - input_done)))
    workers.signal(0, signal.SIGCONT)
    paused_s = round(time.monotonic() - paused_at, 1)
    await asyncio.sleep(5)  # the zombie runs again: if it flushed stale counts, they are the latest now

    final = await wait_for_counts(kafka, sink, truth, timeout=30, at_least=True)
    assert not lost_updates(final, truth), f"lost updates: {list(lost_updates(final, truth).items())[:10]}"
    report("zombie", final, truth, since=input_done, paused_s=paused_s)
    assert workers.alive(0) and workers.alive(1)
    assert workers.dropped_tasks_dirty(0), workers.log(0)[-3000:]  # no stale state flushed
    assert workers.stop_all() == {0: 0, 1: 0}


async def test_kill_9_and_a_deleted_state_dir_lose_no_update(kafka: KafkaTestCluster, wordcount_app) -> None:
    source, sink, workers = await wordcount_app()
    workers.start(0)
    workers.start(1)
    await workers.wait_assigned(0, more_than=0)  # running, with its state dir: a loaded machine starts slowly
    await workers.wait_assigned(1, more_than=0)
    lines = text(2)
    producing = asyncio.create_task(produce_steadily(kafka, source, lines, per_second=500))
    await asyncio.sleep(8)  # not a synchronisation: where in the run the fault comes
    workers.kill9(0)
    shutil.rmtree(workers.state_dir(0))  # the disk is gone too: everything restores from the changelogs
    await asyncio.sleep(2)
    joined = workers.assignments(0)
    workers.start(0)
    await producing
    await workers.wait_assigned(0, more_than=joined)

    input_done = time.monotonic()
    truth = expected_counts(lines)
    final = await wait_for_counts(kafka, sink, truth, timeout=180, at_least=True)
    assert not lost_updates(final, truth), f"lost updates: {list(lost_updates(final, truth).items())[:10]}"
    report("kill -9 + state dir deleted", final, truth, since=input_done)
    assert workers.stop_all() == {0: 0, 1: 0}


async def test_sigterm_under_load_and_a_restart_count_exactly(kafka: KafkaTestCluster, wordcount_app) -> None:
    source, sink, workers = await wordcount_app()
    workers.start(0)
    workers.start(1)
    await workers.wait_assigned(0, more_than=0)  # its SIGTERM handler installed: a loaded machine starts slowly
    await workers.wait_assigned(1, more_than=0)
    lines = text(2)
    producing = asyncio.create_task(produce_steadily(kafka, source, lines, per_second=500))
    await asyncio.sleep(8)  # not a synchronisation: where in the run the fault comes
    assert workers.stop(0) == 0  # graceful: commit, flush, checkpoint, leave the group
    joined = workers.assignments(0)
    workers.start(0)
    await producing
    await workers.wait_assigned(0, more_than=joined)

    input_done = time.monotonic()
    truth = expected_counts(lines)
    final = await wait_for_counts(kafka, sink, truth, timeout=180)
    assert final == truth, f"{over_count(final, truth)} over, {len(lost_updates(final, truth))} words under"
    report("SIGTERM + restart", final, truth, since=input_done)
    assert workers.stop_all() == {0: 0, 1: 0}
