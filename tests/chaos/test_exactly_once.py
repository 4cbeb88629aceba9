"""exactly_once_v2 under kill -9 (restarts on the same and on a deleted state dir) and under scaling (2 -> 5 -> 2
workers, cooperative rebalances), under steady input. The final counts equal the truth exactly, and over the
whole read_committed output each word's counts are 1..N, in order, with none repeated and none skipped (the
record cache is off, so every update is emitted)."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import time

import pytest

from tests.chaos._report import lost_updates, over_count, report
from tests.support.kafka import KafkaTestCluster
from tests.support.rebalances import tail_history, wait_settled
from tests.support.wordcount import (
    SEED_LINE,
    broken_count_sequences,
    expected_counts,
    real_text_lines,
    wait_for_counts,
)
from tests.support.workers import SteadyInput, produce_steadily, pyspark_verify_wordcount

pytestmark = pytest.mark.chaos
EOS = {"processing_guarantee": "exactly_once_v2", "statestore_cache_max_bytes": "0"}


async def test_kill_9s_under_exactly_once_give_exact_counts(kafka: KafkaTestCluster, wordcount_app) -> None:
    """Random kill -9s of random workers of three (static members), each restarted on the same state dir or a
    deleted one, either at once (it takes its own tasks back, no rebalance) or after its session expired (its
    tasks move to the others under load, then come back through the rebalances of its return).

    CI runs 6 kills; `STREAMLET_CHAOS_KILLS=20 scripts/test tests/chaos/test_exactly_once.py` runs 20, and
    `STREAMLET_CHAOS_SEED` repeats a run (the seed is in every failure message).
    """
    kills = int(os.environ.get("STREAMLET_CHAOS_KILLS", "6"))
    seed = int(os.environ.get("STREAMLET_CHAOS_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    size = 3
    schedule = [(rng.randrange(size), rng.random() < 0.5, rng.random() < 0.3) for _ in range(kills)]
    source, sink, workers = await wordcount_app(session_timeout_ms="6000", heartbeat_interval_ms="1000", **EOS)
    ids = {i: {"group_instance_id": f"worker-{i}"} for i in range(size)}
    for i in range(size):
        workers.start(i, **ids[i])
    await workers.wait_assigned(0, more_than=0)
    lines = (real_text_lines() + [SEED_LINE]) * max(4, len(schedule))
    producing = asyncio.create_task(produce_steadily(kafka, source, lines, per_second=200))
    for victim, wipe, after_session in schedule:
        await asyncio.sleep(2.5)
        workers.kill9(victim)
        if wipe:
            shutil.rmtree(workers.state_dir(victim), ignore_errors=True)
        if after_session:
            await asyncio.sleep(7)  # past session_timeout_ms: the group moves its tasks to the others
        workers.start(victim, **ids[victim])
    await producing
    input_done = time.monotonic()

    truth = expected_counts(lines)
    final = await wait_for_counts(kafka, sink, truth, timeout=240, read_committed=True)
    lost = list(lost_updates(final, truth).items())
    assert final == truth, f"seed {seed}: lost {len(lost)} words {lost[:5]}, over-counted {over_count(final, truth)}"

    broken = broken_count_sequences(await kafka.drain(sink, 6, read_committed=True), truth)
    assert not broken, f"seed {seed}: {len(broken)} words' counts are not 1..N: {list(broken.items())[:3]}"
    verify = pyspark_verify_wordcount(kafka.bootstrap_servers, source, sink)  # PySpark's ground truth agrees
    assert verify.returncode == 0, f"seed {seed}: " + verify.stdout[-3000:] + verify.stderr[-3000:]
    wiped = sum(wipe for _, wipe, _ in schedule)
    moved = sum(after_session for _, _, after_session in schedule)
    report(
        f"exactly-once, {len(schedule)} kill -9s of {size} workers ({wiped} on a deleted state dir, "
        f"{moved} restarted after their session expired)",
        final,
        truth,
        since=input_done,
    )
    assert workers.stop_all() == dict.fromkeys(range(size), 0)


async def test_a_paused_worker_under_exactly_once_gives_exact_counts(kafka: KafkaTestCluster, wordcount_app) -> None:
    """The zombie wakes after its tasks' new owner counted everything: its open transaction aborts, and any
    offset commit it tries is fenced by its stale generation."""
    source, sink, workers = await wordcount_app(session_timeout_ms="6000", heartbeat_interval_ms="1000", **EOS)
    workers.start(0)
    workers.start(1)
    await workers.wait_assigned(0, more_than=0)
    await workers.wait_assigned(1, more_than=0)
    lines = (real_text_lines() + [SEED_LINE]) * 3
    producing = asyncio.create_task(produce_steadily(kafka, source, lines, per_second=200))  # about 8 s
    await asyncio.sleep(4)
    workers.signal(0, signal.SIGSTOP)
    paused_at = time.monotonic()
    await producing
    input_done = time.monotonic()
    truth = expected_counts(lines)
    assert await wait_for_counts(kafka, sink, truth, timeout=90, read_committed=True) == truth
    await asyncio.sleep(max(0.0, 12 - (time.monotonic() - paused_at)))
    workers.signal(0, signal.SIGCONT)
    paused_s = round(time.monotonic() - paused_at, 1)
    await asyncio.sleep(5)

    final = await wait_for_counts(kafka, sink, truth, timeout=30, read_committed=True)
    assert final == truth, f"over-counted {over_count(final, truth)}"
    report("exactly-once zombie", final, truth, since=input_done, paused_s=paused_s)
    assert workers.dropped_tasks_dirty(0), workers.log(0)[-3000:]
    assert workers.stop_all() == {0: 0, 1: 0}


async def test_scaling_2_5_2_under_exactly_once_gives_exact_counts(kafka: KafkaTestCluster, wordcount_app) -> None:
    """Two workers, three more join at once, then those three stop at once (clean SIGTERMs), with input flowing
    throughout and after. The rebalances are cooperative (the default): tasks move in two rounds, each revoked one
    committed (its transaction) before it is handed over, and no task runs on two workers at a time."""
    source, sink, workers = await wordcount_app(**EOS)
    hold_s = 3.0  # each layout runs this long under input (dozens of 100 ms exactly-once commits)
    async with tail_history(kafka, workers.application_id) as history:
        began = time.monotonic(), time.time()
        for i in (0, 1):
            workers.start(i, threads=1)
        await wait_settled(history, after=began[1], clients=2, threads=1, timeout=120)
        load = SteadyInput(kafka, source, real_text_lines() + [SEED_LINE], per_second=100)
        load.start()
        try:
            await asyncio.sleep(hold_s)  # input flows into the two-worker layout: not a wait for anything
            at = time.time()
            for i in (2, 3, 4):
                workers.start(i, threads=1)
            await wait_settled(history, after=at, clients=5, threads=1, timeout=120)
            rounds_up = len(history.since(at))
            await asyncio.sleep(hold_s)
            at = time.time()
            codes = await asyncio.gather(*(workers.terminate(i) for i in (2, 3, 4)))
            assert codes == [0, 0, 0], [workers.log(i)[-3000:] for i in (2, 3, 4)]
            await wait_settled(history, after=at, clients=2, threads=1, timeout=120)
            rounds_down = len(history.since(at))
            await asyncio.sleep(hold_s)  # input goes on past the last step
        finally:
            lines = await load.stop()
    input_done = time.monotonic()

    truth = expected_counts(lines)
    final = await wait_for_counts(kafka, sink, truth, timeout=120, read_committed=True)
    lost = list(lost_updates(final, truth).items())
    assert final == truth, f"lost {len(lost)} words {lost[:5]}, over-counted {over_count(final, truth)}"
    broken = broken_count_sequences(await kafka.drain(sink, 6, read_committed=True), truth)
    assert not broken, f"{len(broken)} words' counts are not 1..N: {list(broken.items())[:3]}"
    report(
        "exactly-once, scale 2 -> 5 -> 2 workers (cooperative)",
        final,
        truth,
        since=input_done,
        rounds_up=rounds_up,
        rounds_down=rounds_down,
        took_s=round(input_done - began[0], 1),
    )
    assert workers.stop_all() == dict.fromkeys(range(5), 0)
