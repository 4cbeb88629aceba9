"""KIP-925 on a real cluster: brokers in three racks (`broker.rack`), one WordCount client in each (`client_rack`),
`rack_aware_assignment_strategy=min_traffic`. Each input partition has its one replica on a known node, so where
each task should run is known without the code under test: in the rack of its partition's replica."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aiokafka.admin import NewTopic

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.kafka.cluster import LocalCluster
from streamlet.runtime.kafka_streams import KafkaStreams, State
from streamlet.task_id import TaskId
from tests.support.cluster import cluster_client, running_cluster
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import wait_until
from tests.support.wordcount import expected_counts, wait_for_counts

pytestmark = pytest.mark.integration

RACKS = ["az-1", "az-2", "az-3"]  # nodes 1, 2, 3
PARTITIONS = 6
LINES = ["all streams lead to kafka", "hello kafka streams", "join kafka summit"] * 10


@pytest.fixture(scope="module")
def racked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("racked"), racks=RACKS) as nodes:
        yield nodes


@pytest.fixture
async def kafka3(racked: LocalCluster) -> AsyncIterator[KafkaTestCluster]:
    async with cluster_client(racked) as client:
        yield client


def node_of(partition: int) -> int:
    return partition % len(RACKS) + 1


async def _topic_on_known_nodes(kafka: KafkaTestCluster, prefix: str) -> str:
    """One replica per partition, partition p on node p % 3 + 1."""
    topic = unique_name(prefix)
    assignments = {p: [node_of(p)] for p in range(PARTITIONS)}  # (counts are -1 with a manual assignment)
    response = await kafka.admin.create_topics([NewTopic(topic, -1, -1, replica_assignments=assignments)])
    assert all(error == 0 for _, error, _ in response.topic_errors), response
    kafka.track(topic)
    await kafka.wait_for_metadata(topic, PARTITIONS)
    return topic


async def test_min_traffic_runs_each_task_in_the_rack_of_its_input(kafka3: KafkaTestCluster, tmp_path: Path) -> None:
    source = await _topic_on_known_nodes(kafka3, "racked-input")
    sink = await _topic_on_known_nodes(kafka3, "racked-output")
    app_id = unique_name("racked-wordcount")
    for suffix in ("counts-store-repartition", "counts-store-changelog"):
        kafka3.track(f"{app_id}-{suffix}")
    clients = [
        KafkaStreams(
            build_topology(source, sink),
            StreamsConfig(
                application_id=app_id,
                bootstrap_servers=kafka3.bootstrap_servers,
                state_dir=str(tmp_path / rack),
                client_rack=rack,
                rack_aware_assignment_strategy="min_traffic",
                replication_factor=3,  # internal topics on every rack: their tasks may run anywhere
                commit_interval_ms=200,
            ),
        )
        for rack in RACKS
    ]

    def actives() -> dict[str, set[TaskId]]:
        return {
            rack: {t for th in c.threads for t in th.task_manager.active}
            for rack, c in zip(RACKS, clients, strict=True)
        }

    def settled() -> bool:
        held = actives()
        every = [t for tasks in held.values() for t in tasks]
        # every client holds tasks: a client that joins after the others settled (a loaded machine) would otherwise
        # find the input already written, and its tasks would wait as warmups for a probing rebalance
        running = all(c.state is State.RUNNING for c in clients) and all(held.values())
        return running and len(every) == len(set(every)) == 2 * PARTITIONS

    try:
        for client in clients:
            await client.start()
        await wait_until(settled, "every task runs on exactly one client, and every client runs some", timeout=120)
        await kafka3.produce(source, [(None, line.encode()) for line in LINES])
        expected = expected_counts(LINES)
        assert await wait_for_counts(kafka3, sink, expected, partitions=PARTITIONS) == expected

        placed = actives()
        misplaced = {
            rack: sorted(str(t) for t in tasks if t.subtopology == 0 and RACKS[node_of(t.partition) - 1] != rack)
            for rack, tasks in placed.items()
        }
        assert not any(misplaced.values()), f"tasks reading another rack's partition: {misplaced} (all: {placed})"
        assert all(len(tasks) == 4 for tasks in placed.values()), placed  # and balanced, as without racks
    finally:
        for client in clients:
            await client.close()
