"""Scaling WordCount worker processes 2 -> 3 -> 4 -> 3 under steady input (issue 22's first broker proof).

Under the cooperative protocol a count task that keeps its thread across a rebalance never stops: its output
partition shows no gap above 2 x commit_interval_ms around any rebalance. The same scenario under eager is run for
comparison: there every task stops until the whole group has rejoined, and its gaps are reported, not asserted.

What the test controls and how it measures:
- the input and output topics stamp records with the broker's append time (LogAppendTime), so output gaps are
  measured on the broker's clock, per output partition, and output partition p is written by count task 1_p only
  (checked on the records);
- the record cache is off, so a count task emits an update for every word it counts: a gap in its output is a
  stretch in which it counted nothing, not the wait for its next commit;
- who owns which task is read from the leader's assignment history, per round; a task "stays" across a step if
  the same thread owns it in the last round before the step and in every round of the step;
- each step's window runs from the moment the test starts or stops a worker to the next step (or the end of the
  input); the group holds each settled layout for `HOLD_S` first, longer than the bound, so a stall that begins
  only once the group has settled still falls inside the window;
- every worker counts as caught up on every task (`acceptable_recovery_lag` above any changelog here), so tasks
  move in the rebalance that the scale step causes, not in later probing rebalances; the `balanced` assignor keeps
  tasks where they are unless their client is above its share, so every step has tasks that stay;
- the guarantee is at-least-once, but no worker crashes: every handover commits first (cooperative: the revoked
  tasks' owner, before its rejoin; eager: every member, before it rejoins; a stopped worker, before it leaves), so
  the final counts must equal the independent count of the input exactly, under both protocols.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.rebalances import (
    APPEND_TIME,
    Step,
    append_times,
    check_task_writes_its_partition,
    largest_gap,
    rounds,
    staying_tasks,
    tail_history,
    wait_settled,
)
from tests.support.reports import add_report
from tests.support.wordcount import SEED_LINE, expected_counts, latest_counts, real_text_lines, wait_for_counts
from tests.support.workers import SteadyInput, Workers

pytestmark = [pytest.mark.e2e, pytest.mark.timing]

PARTITIONS = 6
THREADS = 2
COMMIT_INTERVAL_MS = 1_000
#: the issue's bound: a task that stays may miss one commit, never two
BOUND_S = 2 * COMMIT_INTERVAL_MS / 1000
#: how long each settled layout runs before the next step, and the input after the last one: longer than the bound
HOLD_S = 2 * BOUND_S
LINES_PER_SECOND = 100
COUNT_TASKS = [f"1_{p}" for p in range(PARTITIONS)]
#: (action, worker index, clients once the group has settled): 2 -> 3 -> 4 -> 3
STEPS = [("start", 2, 3), ("start", 3, 4), ("stop", 0, 3)]
SETTLE_TIMEOUT_S = 120


@pytest.fixture
async def scale_run(kafka: KafkaTestCluster, tmp_path: Path) -> AsyncIterator[tuple[str, str, str, Path]]:
    source = await kafka.create_topic("scale-input", partitions=PARTITIONS, config=APPEND_TIME)
    sink = await kafka.create_topic("scale-output", partitions=PARTITIONS, config=APPEND_TIME)
    app_id = unique_name("scale-wordcount")
    for suffix in ("counts-store-repartition", "counts-store-changelog", "metrics"):
        kafka.track(f"{app_id}-{suffix}")
    yield source, sink, app_id, tmp_path


@pytest.mark.parametrize("protocol", ["cooperative", "eager"])
async def test_tasks_that_stay_never_stop_while_workers_scale(
    kafka: KafkaTestCluster, scale_run: tuple[str, str, str, Path], protocol: str
) -> None:
    source, sink, app_id, root = scale_run
    config = {
        "rebalance_protocol": protocol,
        "commit_interval_ms": str(COMMIT_INTERVAL_MS),
        "statestore_cache_max_bytes": "0",
        "task_assignor": "balanced",
        "acceptable_recovery_lag": str(10**12),
    }
    workers = Workers(kafka.bootstrap_servers, source, sink, app_id, root, config)
    text = real_text_lines() + [SEED_LINE]
    load = SteadyInput(kafka, source, text, per_second=LINES_PER_SECOND)
    try:
        async with tail_history(kafka, app_id) as history:
            began = time.time()
            for index in (0, 1):
                workers.start(index, threads=THREADS)
            await wait_settled(history, after=began, clients=2, threads=THREADS, timeout=SETTLE_TIMEOUT_S)
            load.start()
            await asyncio.sleep(HOLD_S)  # a measured stretch of steady input before the first step, not a wait
            starts: list[tuple[str, float]] = []
            for action, index, clients in STEPS:
                at = time.time()
                starts.append((f"{action} worker {index} -> {clients} workers", at))
                if action == "start":
                    workers.start(index, threads=THREADS)
                else:
                    assert await workers.terminate(index) == 0, workers.log(index)[-3000:]
                await wait_settled(history, after=at, clients=clients, threads=THREADS, timeout=SETTLE_TIMEOUT_S)
                await asyncio.sleep(HOLD_S)  # the settled layout runs under input: part of the step's window
            input_end = time.time()
            lines = await load.stop()
            events = list(history.events)

        truth = expected_counts(lines)
        final = await wait_for_counts(kafka, sink, truth, timeout=120)
        assert final == truth, f"{len(set(final.items()) ^ set(truth.items()))} words differ from the input's count"
        output = await kafka.drain(sink, PARTITIONS)
        assert latest_counts(output) == truth
        repartitioned = await kafka.drain(f"{app_id}-counts-store-repartition", PARTITIONS)
        check_task_writes_its_partition(repartitioned, output, PARTITIONS)
        inputs = append_times(await kafka.drain(source, PARTITIONS))
        input_times = sorted(t for times in inputs.values() for t in times)
    finally:
        await load.stop()
        codes = workers.stop_all()
    assert all(code == 0 for code in codes.values()), codes

    times = append_times(output)
    ends = [at for _, at in starts[1:]] + [input_end]
    steps = [Step(label, at, end) for (label, at), end in zip(starts, ends, strict=True)]
    worst: dict[str, float] = {}
    lines_out: list[str] = []
    for step in steps:
        staying = staying_tasks(events, step, COUNT_TASKS)
        gaps = {t: largest_gap(times.get(int(t[2:]), []), step.start, step.end) for t in COUNT_TASKS}
        moved = {t: g for t, g in gaps.items() if t not in staying}
        stayed = {t: g for t, g in gaps.items() if t in staying}
        input_gap = largest_gap(input_times, step.start, step.end)
        lines_out.append(
            f"  {step.label}: rounds {'/'.join(rounds(events, step))}; {len(stayed)} count tasks stayed, largest gap "
            f"{max(stayed.values(), default=0):.2f} s; {len(moved)} moved, largest gap "
            f"{max(moved.values(), default=0):.2f} s; input's largest gap {input_gap:.2f} s"
        )
        worst[step.label] = max(stayed.values(), default=0.0)
        if protocol == "cooperative":
            assert stayed, f"{step.label}: no count task stayed; the step checks nothing ({events[-1]})"
            over = {t: round(g, 2) for t, g in stayed.items() if g > BOUND_S}
            assert not over, (
                f"{step.label}: tasks that stayed on their thread stopped longer than {BOUND_S} s: {over} "
                f"(input's largest gap {input_gap:.2f} s)"
            )
    add_report(
        "rebalances: 2 -> 3 -> 4 -> 3 workers",
        f"{protocol}: largest output gap of a count task that stayed {max(worst.values()):.2f} s "
        f"(bound {BOUND_S} s = 2 x commit_interval_ms); {sum(truth.values())} words, counts exact\n"
        + "\n".join(lines_out),
    )
