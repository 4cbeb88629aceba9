"""exactly_once_v2 under kill -9 (restarts on the same and on a deleted state dir) and under scaling (2 -> 5 -> 2
workers, cooperative rebalances), under steady input. The final counts equal the truth exactly, and over the
whole read_committed output each word's counts are 1..N, in order, with none repeated and none skipped (the
record cache is off, so every update is emitted). A worker restarted at once on its own state dir restores only
what its changelogs got since its last commit (KIP-892 transactional stores), not the whole changelog."""

from __future__ import annotations

import asyncio
import os
import random
import re
import shutil
import signal
import time
from dataclasses import dataclass

import pytest

from tests.chaos._report import lost_updates, over_count, report
from tests.support.kafka import KafkaTestCluster
from tests.support.rebalances import tail_history, wait_settled
from tests.support.waiting import wait_until
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
# the worker log's lines this test reads (LoggingRestoreListener's, the stream thread's); the count store's tasks
# are those of sub-topology 1
LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (.*)$", re.MULTILINE)
RESTORE_START = re.compile(r"restoring store \S+ from \S+-counts-store-changelog-(\d+) offsets (\d+)\.\.(\d+) ")
RESTORE_DONE = re.compile(r"restored store \S+ from \S+-counts-store-changelog-(\d+):")
ASSIGNED = re.compile(r"stream-thread \[(\S+)\] assigned active \[([^\]]*)\]")
STARTED = re.compile(r"streamlet client \S+ started")
SETTLING = re.compile(rf"assigned active|now RUNNING|{STARTED.pattern}")
# how long before a kill the changelogs' last stable offsets are read: every record under them is in a transaction
# that was decided by then, and a committed one's writes are in the worker's stores a moment after its commit
COMMITTED_BEFORE_KILL_S = 2.0


@dataclass
class Restart:
    """A kill -9 and an immediate restart on the same state dir."""

    victim: int
    killed_at: float  # time.time()
    # the changelog's last stable offsets COMMITTED_BEFORE_KILL_S before the kill (its end offsets would count the
    # records of a transaction still open then, one the kill aborts: CI's run of 2026-11-28 failed on a worker whose
    # first commit had not come through, seed 298426435)
    ends_before: dict[int, int]
    ends_at_kill: dict[int, int]
    log_from: int  # where the restarted worker's log begins
    log_to: int | None = None  # where its next kill is


def timed_lines(log: str, only: re.Pattern[str] | None = None) -> list[tuple[float, str]]:
    """(epoch seconds, text) of the log's lines (those matching `only`)."""
    return [
        (time.mktime(time.strptime(ts[:19], "%Y-%m-%d %H:%M:%S")) + int(ts[20:]) / 1000, text)
        for ts, text in LINE.findall(log)
        if only is None or only.search(text)
    ]


def assigned_tasks(lines: list[tuple[float, str]]) -> set[str]:
    """The active tasks of the threads' last assignment lines."""
    last: dict[str, str] = {}
    for _, text in lines:
        for thread, tasks in ASSIGNED.findall(text):
            last[thread] = tasks
    return {task.strip(" '") for tasks in last.values() for task in tasks.split(",") if task.strip()}


def own_restores(restart: Restart, log: str) -> list[tuple[int, int, int]] | None:
    """The restorations the restarted worker ran for its own count tasks: (partition, start, end), or None when
    this restart cannot tell (the worker was still starting or rebalancing when it died, or got other tasks)."""
    settled_by = restart.killed_at - COMMITTED_BEFORE_KILL_S - 0.5  # before the changelog ends were read
    # the killed process's own lines, from its start: an earlier process's assignment says nothing of its stores (it
    # may have died rejoining, its tasks run elsewhere meanwhile; the restart then restores what they wrote since)
    starts = [match.start() for match in STARTED.finditer(log, 0, restart.log_from)]
    killed = log[log.rfind("\n", 0, starts[-1]) + 1 if starts else 0 : restart.log_from]
    before = timed_lines(killed, SETTLING)
    if not before or before[-1][0] > settled_by:
        return None  # its tasks had not been running since then
    owned = assigned_tasks(before)
    if not any(task.startswith("1_") for task in owned):
        return None  # no count store to restore
    restored_at: dict[str, float | None] = {}  # partition -> when its last restore ended (None: still restoring)
    for t, text in timed_lines(killed):
        if started := RESTORE_START.search(text):
            restored_at[started.group(1)] = None
        elif done := RESTORE_DONE.search(text):
            restored_at[done.group(1)] = t
    for task in (task for task in owned if task.startswith("1_")):
        done_at = restored_at.get(task[2:], 0.0)  # none logged: nothing to restore
        if done_at is None or done_at > settled_by:
            return None  # it died restoring (a restore waits for the transactions of killed workers to end)
    after = timed_lines(log[restart.log_from : restart.log_to])
    assigned_at = [t for t, text in after if ASSIGNED.search(text)]
    if not assigned_at:
        return None
    # the first rebalance after the restart (each thread logs its assignment) and the restores it started, until
    # the next rebalance
    burst = [t for t in assigned_at if t <= assigned_at[0] + 1.0]
    until = next((t for t in assigned_at if t > burst[-1]), float("inf"))
    first = [(t, text) for t, text in after if t < until]
    if assigned_tasks(first) != owned:
        return None  # not its own tasks back
    return [
        (int(p), int(start), int(end))
        for _, text in first
        for p, start, end in RESTORE_START.findall(text)
        if f"1_{p}" in owned
    ]


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
    changelog = f"{workers.application_id}-counts-store-changelog"
    restarts: list[Restart] = []
    for victim, wipe, after_session in schedule:
        await asyncio.sleep(2.5 - COMMITTED_BEFORE_KILL_S)
        ends_before = await kafka.end_offsets(changelog, 6, read_committed=True)
        await asyncio.sleep(COMMITTED_BEFORE_KILL_S)
        for restart in restarts:
            if restart.victim == victim and restart.log_to is None:
                restart.log_to = len(workers.log(victim))
        workers.kill9(victim)
        if not wipe and not after_session:  # its own tasks come back to its own stores
            ends = await kafka.end_offsets(changelog, 6)
            restarts.append(Restart(victim, time.time(), ends_before, ends, len(workers.log(victim))))
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

    # One more kill -9 once every worker has settled, under load: worker 0 restarts at once and, unless starting
    # took longer than its session (a loaded machine), takes its own tasks back.
    def settled() -> bool:
        now = time.time()
        last = [[t for t, _ in timed_lines(workers.log(i), SETTLING)] for i in range(size)]
        return all(times and times[-1] < now - 3 for times in last)

    await wait_until(settled, "every worker has run its tasks for 3 s", timeout=120)
    more = real_text_lines()[:1000]
    producing = asyncio.create_task(produce_steadily(kafka, source, more, per_second=200))  # about 5 s
    await asyncio.sleep(2.5 - COMMITTED_BEFORE_KILL_S)  # input flows: not a wait for anything
    ends_before = await kafka.end_offsets(changelog, 6, read_committed=True)
    await asyncio.sleep(COMMITTED_BEFORE_KILL_S)
    for restart in restarts:
        if restart.victim == 0 and restart.log_to is None:
            restart.log_to = len(workers.log(0))
    workers.kill9(0)
    last = Restart(0, time.time(), ends_before, await kafka.end_offsets(changelog, 6), len(workers.log(0)))
    restarts.append(last)
    workers.start(0, **ids[0])
    await producing
    truth = expected_counts(lines + more)
    final = await wait_for_counts(kafka, sink, truth, timeout=240, read_committed=True)
    assert final == truth, f"seed {seed}: after the last kill, over-counted {over_count(final, truth)}"
    await wait_until(lambda: "assigned active" in workers.log(0)[last.log_from :], "worker 0 rejoined", timeout=120)

    # KIP-892: no wipe after a crash. A worker restarted at once resumes each store from its own offset: it
    # restores at most the records written since its last commit (before: from offset 0, the whole changelog).
    checked = [(r, own_restores(r, workers.log(r.victim))) for r in restarts]
    restored = [(r, p, start, end) for r, restores in checked for p, start, end in restores or ()]
    # (less one: a committed transaction ends with its commit marker, an offset no store applies)
    too_far = [(r.victim, p, start, r.ends_before[p]) for r, p, start, _ in restored if start < r.ends_before[p] - 1]
    assert not too_far, f"seed {seed}: restores from before the last commit (worker, partition, start, bound) {too_far}"
    assert all(restores != [] for _, restores in checked), f"seed {seed}: a restart restored none of its stores"
    # (a restart that cannot tell, None, is one that died while starting or came back after its session expired)
    restored_records = sum(end - start for _, _, start, end in restored)
    changelog_records = sum(r.ends_at_kill[p] for r, p, _, _ in restored)
    wiped = sum(wipe for _, wipe, _ in schedule)
    moved = sum(after_session for _, _, after_session in schedule)
    report(
        f"exactly-once, {len(schedule)} kill -9s of {size} workers ({wiped} on a deleted state dir, "
        f"{moved} restarted after their session expired)",
        final,
        truth,
        since=input_done,
        restarts_in_place=f"{sum(restores is not None for _, restores in checked)} of {len(restarts)} checked",
        restored_records=restored_records,  # by those restarts, over the changelog partitions they restored
        changelog_records=changelog_records,  # what a wipe would have restored from those partitions
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
