"""Broker failover under load on a 3-node cluster (issue 24): every topic has replication factor 3 and
min.insync.replicas 2, and two WordCount workers process steady input while one node at a time is killed -9:
the leader of the busiest changelog partition, then the leader of the busiest repartition partition, then the
transaction coordinator (the group coordinator under at-least-once, which has none). Each node stays down
until the controller has moved its leaderships away (the scenario's downtime, bounded by the broker session
timeout) and is then started again; the next fault waits until every replica is back in sync.

exactly_once_v2: the read_committed counts are exact, and every word's updates are 1..N in order. at-least-once:
no word below its true count. A rolling restart of the 3 nodes (each stopped cleanly, started, and back in sync
before the next) under both, with the same checks. The longest stretch without output on any output partition
after each fault is reported. The cluster is the module's (3 JVMs), secured as production clusters are
(SASL_SSL with SCRAM users, TLS between the nodes; the workers connect as `streamlet`); the tests share it, one
after the other, each with its own topics and application.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiokafka.errors import KafkaError
from aiokafka.structs import ConsumerRecord

from streamlet.kafka.broker import SASL_SSL_MODE
from streamlet.kafka.cluster import (
    BROKER_SESSION_TIMEOUT_MS,
    LocalCluster,
    in_sync_replicas,
    leader_of,
    transaction_coordinator,
)
from tests.chaos._report import lost_updates, report
from tests.support.cluster import cluster_client, running_cluster
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.rebalances import append_times, largest_gap
from tests.support.wordcount import (
    SEED_LINE,
    broken_count_sequences,
    expected_counts,
    real_text_lines,
    wait_for_counts,
    write_process_id,
)
from tests.support.workers import SteadyInput, Workers

pytestmark = pytest.mark.chaos
PARTITIONS = 6
# the controller fences a silent node after the session timeout and moves its leaderships; thrice that is slack
# for a loaded machine and the metadata round that shows it
FENCED_WITHIN_S = 3 * BROKER_SESSION_TIMEOUT_MS / 1000
RECOVERY_S = 120  # a restarted node's JVM start and catch-up on a loaded 2-core machine


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("cluster"), security=SASL_SSL_MODE) as nodes:
        yield nodes


@pytest.fixture
async def kafka3(cluster: LocalCluster) -> AsyncIterator[KafkaTestCluster]:
    async with cluster_client(cluster) as client:
        yield client


@dataclass
class Fault:
    """One kill: what was killed, which node, when (wall clock, as the output's LogAppendTime)."""

    label: str
    node: int
    killed_at: float


async def wait_for(what: str, timeout: float, check: Callable[[], Awaitable[bool]]) -> None:
    """Until `check()` holds, polling; a TimeoutError naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not within {timeout:.0f}s")
        await asyncio.sleep(0.25)


async def all_in_sync(kafka: KafkaTestCluster, topics: list[str]) -> bool:
    for topic in topics:
        if any(len(isr) < 3 for isr in (await in_sync_replicas(kafka.admin, topic)).values()):
            return False
    return True


async def busiest_partition(kafka: KafkaTestCluster, topic: str) -> int:
    ends = await kafka.end_offsets(topic, PARTITIONS)
    return max(ends, key=lambda p: ends[p])


async def kill_and_restart(cluster: LocalCluster, label: str, node: int, now_at: Callable[[], Awaitable[int]]) -> Fault:
    """kill -9 `node`; once the role it had (`now_at()`: the node holding it now) is on another node, start it
    again and wait until it answers. The downtime is the failover itself: fencing takes a session timeout."""
    fault = Fault(label, node, time.time())
    cluster.kill(node)

    async def elsewhere() -> bool:
        try:
            return (await now_at()) not in (node, -1)
        except KafkaError:  # no coordinator while its partition elects a leader
            return False

    await wait_for(f"the {label} on another node than {node}", FENCED_WITHIN_S, elsewhere)
    await restart(cluster, node)
    return fault


async def restart(cluster: LocalCluster, node: int) -> None:
    """Start `node` again from the event loop's thread (see `launch_node`), waiting for it off the loop."""
    state = cluster.launch_node(node)
    await asyncio.to_thread(cluster.wait_node, node, state, RECOVERY_S)


@dataclass
class Run:
    """One application under steady input on the cluster: its topics, workers and input."""

    kafka: KafkaTestCluster
    guarantee: str
    app_id: str
    process_ids: list[str]
    source: str
    sink: str
    workers: Workers
    steady: SteadyInput

    @property
    def changelog(self) -> str:
        return f"{self.app_id}-counts-store-changelog"

    @property
    def repartition(self) -> str:
        return f"{self.app_id}-counts-store-repartition"

    @property
    def topics(self) -> list[str]:
        return [self.source, self.sink, self.changelog, self.repartition]

    async def all_in_sync(self) -> None:
        await wait_for("every replica back in sync", RECOVERY_S, lambda: all_in_sync(self.kafka, self.topics))

    async def more_output(self) -> None:
        """Until the output grows: the workers process again (or still) after a fault. A timeout says whether
        the input went on meanwhile (stuck workers) or not (a stuck input producer)."""
        before = sum((await self.kafka.end_offsets(self.sink, PARTITIONS)).values())
        lines = len(self.steady.lines)

        async def grown() -> bool:
            return sum((await self.kafka.end_offsets(self.sink, PARTITIONS)).values()) > before

        try:
            await wait_for("more output", RECOVERY_S, grown)
        except TimeoutError as e:
            raise TimeoutError(f"{e}; {len(self.steady.lines) - lines} input lines acknowledged meanwhile") from e


async def start_run(cluster: LocalCluster, kafka: KafkaTestCluster, tmp_path: Path, guarantee: str) -> Run:
    """Topics (RF 3 by the cluster's default), two workers asking for RF 3 and min ISR 2 themselves, input."""
    source = await kafka.create_topic("failover-input", PARTITIONS, replication_factor=-1)
    # LogAppendTime: each output record carries when the broker appended it, so gaps are the output's own
    sink = await kafka.create_topic(
        "failover-output", PARTITIONS, replication_factor=-1, config={"message.timestamp.type": "LogAppendTime"}
    )
    app_id = unique_name("failover")
    config = {
        "processing_guarantee": guarantee,
        "statestore_cache_max_bytes": "0",  # every update is output: exactly-once's 1..N check sees them all
        "replication_factor": "3",
        "topic.min.insync.replicas": "2",
    }
    workers = Workers(
        cluster.bootstrap_servers, source, sink, app_id, tmp_path / app_id, config, env=cluster.client_settings()
    )
    workers.root.mkdir(parents=True)
    steady = SteadyInput(kafka, source, real_text_lines() + [SEED_LINE], per_second=300)
    run = Run(kafka, guarantee, app_id, [str(uuid.uuid4()) for _ in range(2)], source, sink, workers, steady)
    for topic in (run.changelog, run.repartition):
        kafka.track(topic)
    for index, process_id in enumerate(run.process_ids):
        write_process_id(workers.state_dir(index), app_id, process_id)  # known transactional ids
        workers.start(index)
    try:
        await workers.wait_assigned(0, more_than=0)
        await workers.wait_assigned(1, more_than=0)
        steady.start()
        await run.more_output()
    except BaseException:
        try:
            await steady.stop()  # re-raises the input's own failure, if it failed
        finally:
            workers.stop_all()  # never left running (two workers once outlived a failed start by an hour)
        raise
    return run


async def kill_leaders_and_coordinator(cluster: LocalCluster, run: Run) -> list[Fault]:
    kafka, faults = run.kafka, []
    for label, topic in (("changelog leader", run.changelog), ("repartition leader", run.repartition)):
        part = await busiest_partition(kafka, topic)
        node = await leader_of(kafka.admin, topic, part)
        faults.append(await kill_and_restart(cluster, label, node, leader(kafka, topic, part)))
        await run.all_in_sync()
        await run.more_output()
    if run.guarantee == "exactly_once_v2":
        transactional_id = f"{run.app_id}-{run.process_ids[0]}-1"  # worker 0's first thread

        async def coordinator() -> int:
            return await transaction_coordinator(kafka.admin, transactional_id)

        label = "transaction coordinator"
    else:  # no transactions: the other coordinator the workers depend on

        async def coordinator() -> int:
            return await kafka.admin.find_coordinator(run.app_id)

        label = "group coordinator"
    faults.append(await kill_and_restart(cluster, label, await coordinator(), coordinator))
    await run.all_in_sync()
    await run.more_output()
    return faults


async def rolling_restart(cluster: LocalCluster, run: Run) -> list[Fault]:
    """Each node in turn stopped (SIGTERM: a controlled shutdown hands its leaderships over) and started, the
    next one only once every replica is back in sync, as an operator upgrades a cluster."""
    faults = []
    layout = cluster.layout()
    assert layout is not None
    for node in layout.node_ids:
        faults.append(Fault(f"rolling restart, node {node}", node, time.time()))
        assert await asyncio.to_thread(cluster.broker(node).stop), f"node {node} was not running"
        await restart(cluster, node)
        await run.all_in_sync()
        await run.more_output()
    return faults


def leader(kafka: KafkaTestCluster, topic: str, partition: int) -> Callable[[], Awaitable[int]]:
    async def now() -> int:
        return await leader_of(kafka.admin, topic, partition)

    return now


async def _has_output(kafka: KafkaTestCluster, sink: str) -> bool:
    return sum((await kafka.end_offsets(sink, PARTITIONS)).values()) > 0


def output_gaps(records: Sequence[ConsumerRecord], faults: list[Fault], end: float) -> dict[str, float]:
    """Per fault: the longest stretch without output on any one output partition, from the kill to the next
    kill (or the end of the input)."""
    times = append_times(records)
    ends = [f.killed_at for f in faults[1:]] + [end]
    return {
        f.label: round(max(largest_gap(t, f.killed_at, stop) for t in times.values()), 1)
        for f, stop in zip(faults, ends, strict=True)
    }


async def check(run: Run, faults: list[Fault]) -> None:
    """Stop the input; the counts reach the truth (exactly, and 1..N per word, under exactly-once; at least it
    under at-least-once); the longest output gap after each fault is reported."""
    lines = await run.steady.stop()
    input_done, input_end = time.monotonic(), time.time()
    truth = expected_counts(lines)
    exactly_once = run.guarantee == "exactly_once_v2"
    final = await wait_for_counts(
        run.kafka, run.sink, truth, timeout=180, at_least=not exactly_once, read_committed=exactly_once
    )
    records = await run.kafka.drain(run.sink, PARTITIONS, read_committed=exactly_once)
    gaps = output_gaps(records, faults, input_end)
    for fault in faults:
        name = f"failover {run.guarantee}: {fault.label} (node {fault.node})"
        report(name, final, truth, since=input_done, longest_output_gap_s=gaps[fault.label])
    assert not lost_updates(final, truth), f"lost: {list(lost_updates(final, truth).items())[:5]}"
    if exactly_once:
        assert final == truth
        broken = broken_count_sequences(records, truth)
        assert not broken, f"{len(broken)} words' counts are not 1..N: {list(broken.items())[:3]}"
    workers = run.workers
    assert workers.alive(0) and workers.alive(1)
    for index in (0, 1):  # a failover is retried, never the end of a client's sender (see txn_offset_commit)
        log = workers.log(index)
        at = log.find("Unexpected error in sender routine")
        assert at < 0, "\n".join(log[at:].splitlines()[:20])
    assert workers.stop_all() == {0: 0, 1: 0}


@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
async def test_leader_and_coordinator_kills_lose_nothing(
    cluster: LocalCluster, kafka3: KafkaTestCluster, tmp_path: Path, guarantee: str
) -> None:
    run = await start_run(cluster, kafka3, tmp_path, guarantee)
    try:
        faults = await kill_leaders_and_coordinator(cluster, run)
        await check(run, faults)
    finally:
        try:
            await run.steady.stop()
        finally:
            run.workers.stop_all()


@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
async def test_a_rolling_restart_loses_nothing(
    cluster: LocalCluster, kafka3: KafkaTestCluster, tmp_path: Path, guarantee: str
) -> None:
    run = await start_run(cluster, kafka3, tmp_path, guarantee)
    try:
        await check(run, await rolling_restart(cluster, run))
    finally:
        try:
            await run.steady.stop()
        finally:
            run.workers.stop_all()
