"""The upgrade bounce of issue 22 (README "Rebalancing: cooperative by default"): three WordCount workers run with
`rebalance_protocol=eager`, under steady input, and are restarted one by one with the default (cooperative). In
between, eager and cooperative members share the group: a cooperative member keeps its partitions while it rejoins
and says which it owns, an eager one gives everything up first and owns nothing, and whichever member leads
withholds a partition that another member still owns.

Each bounce stops a worker (a clean SIGTERM: commit, flush, checkpoint, leave), waits until the group has settled
without it (its tasks moved), restarts it and waits until the group has settled with it again (tasks moved back,
withheld from their cooperative owners for a round). At-least-once, but with clean stops nothing is replayed, so
every word's final count must equal an independent count of the input exactly (a lost update would be below it,
a replay above it).
"""

from __future__ import annotations

import asyncio
import collections
import time
from pathlib import Path

import pytest
from aiokafka.partitioner import murmur2

from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.rebalances import tail_history, wait_settled
from tests.support.reports import add_report
from tests.support.wordcount import SEED_LINE, expected_counts, real_text_lines, wait_for_counts
from tests.support.workers import SteadyInput, Workers

pytestmark = pytest.mark.e2e

WORKERS = 3
THREADS = 2
COMMIT_INTERVAL_MS = 1_000
#: each layout runs this long under input before the next bounce (several commits of every task)
HOLD_S = 3 * COMMIT_INTERVAL_MS / 1000
SETTLE_TIMEOUT_S = 120


async def test_eager_workers_bounced_one_by_one_to_cooperative_lose_no_update(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    source = await kafka.create_topic("bounce-input", partitions=6)
    sink = await kafka.create_topic("bounce-output", partitions=6)
    app_id = unique_name("bounce-wordcount")
    for suffix in ("counts-store-repartition", "counts-store-changelog", "metrics"):
        kafka.track(f"{app_id}-{suffix}")
    # probing rebalances soon enough that a warmup a bounce needs finishes within the wait for the settled group
    config = {"commit_interval_ms": str(COMMIT_INTERVAL_MS), "probing_rebalance_interval_ms": "5000"}
    workers = Workers(kafka.bootstrap_servers, source, sink, app_id, tmp_path, config)
    load = SteadyInput(kafka, source, real_text_lines() + [SEED_LINE], per_second=100)
    bounces: list[str] = []
    try:
        async with tail_history(kafka, app_id) as history:
            began = time.time()
            for index in range(WORKERS):
                workers.start(index, threads=THREADS, rebalance_protocol="eager")
            await wait_settled(history, after=began, clients=WORKERS, threads=THREADS, timeout=SETTLE_TIMEOUT_S)
            load.start()
            await asyncio.sleep(HOLD_S)  # the eager group runs under input: not a wait for anything
            for index in range(WORKERS):
                stopped = time.time()
                assert await workers.terminate(index) == 0, workers.log(index)[-3000:]
                assert "stopped (clean=True)" in workers.log(index)
                # its tasks move to the others (to cooperative members too, from the second bounce on), and come
                # back after the restart: in the mixed group, from members that keep their partitions while they
                # rejoin as well as from members that give everything up
                await wait_settled(
                    history, after=stopped, clients=WORKERS - 1, threads=THREADS, timeout=SETTLE_TIMEOUT_S
                )
                restarted = time.time()
                workers.start(index, threads=THREADS)  # the default protocol: cooperative
                await wait_settled(history, after=restarted, clients=WORKERS, threads=THREADS, timeout=SETTLE_TIMEOUT_S)
                bounces.append(f"worker {index}: {len(history.since(stopped))} rounds, {time.time() - stopped:.1f} s")
                await asyncio.sleep(HOLD_S)  # the mixed (then all-cooperative) group runs under input
            lines = await load.stop()
        # counted by the workers still running (stopping them before they caught up would leave input uncounted)
        truth = expected_counts(lines)
        final = await wait_for_counts(kafka, sink, truth, timeout=120)
        lost = {w: (final.get(w, 0), c) for w, c in truth.items() if final.get(w, 0) < c}
        if lost:  # where: in the split tasks' output (the repartition topic) already, or only in the counts
            repartitioned = collections.Counter(
                r.key.decode() for r in await kafka.drain(f"{app_id}-counts-store-repartition", 6)
            )
            short = {w: (repartitioned[w], c) for w, c in truth.items() if repartitioned[w] < c}
            where = {p: sum((murmur2(w.encode()) & 0x7FFFFFFF) % 6 == p for w in lost) for p in range(6)}
            raise AssertionError(
                f"lost updates: {list(lost.items())[:10]}; lost words per partition {where}; words the "
                f"repartition topic holds fewer times than the input: {len(short)} {list(short.items())[:10]}"
            )
        assert final == truth, f"replayed: {[(w, final[w], truth[w]) for w in truth if final[w] != truth[w]][:10]}"
    finally:
        await load.stop()
        codes = workers.stop_all()
    assert codes == dict.fromkeys(range(WORKERS), 0), codes

    for index in range(WORKERS):  # each worker ran both protocols: eager first, then cooperative
        first, second = workers.log(index).split("streamlet client stopped", 1)
        assert "Updating assignment with" not in first, f"worker {index} was not eager before its bounce"
        assert "Updating assignment with" in second, f"worker {index} did not rejoin as a cooperative member"
    add_report(
        "rebalances: upgrade bounce, eager -> cooperative",
        f"{WORKERS} workers bounced one by one under input: {sum(truth.values())} words, counts exact; "
        + "; ".join(bounces),
    )
