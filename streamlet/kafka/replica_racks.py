"""The racks holding each partition's replicas: what KIP-925 rack-aware assignment weighs a client's rack against.

As Kafka Streams' `RackUtils`: a partition's racks are those of its replicas that have one (`broker.rack`); a
replica without a rack adds nothing, and a partition with no replica rack at all gets an empty set, which keeps
rack-aware assignment off for the rebalance (`canEnableRackAwareAssignor`). The leader asks the cluster at each
assignment (DescribeCluster for the brokers' racks, Metadata for the replicas), since changelog and repartition
topics are not in its consumer's metadata and replicas move.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient

log = logging.getLogger("streamlet.assignment")

Partition = tuple[str, int]


def replica_racks(
    broker_racks: Mapping[int, str | None], topics: Iterable[Mapping[str, Any]]
) -> dict[Partition, frozenset[str]]:
    """(topic, partition) -> the racks of its replicas, from DescribeCluster's brokers (node id -> rack) and
    described topics (`{"topic": ..., "partitions": [{"partition": ..., "replicas": [node ids]}]}`)."""
    racks: dict[Partition, frozenset[str]] = {}
    for topic in topics:
        for partition in topic.get("partitions") or ():
            replicas = list(partition.get("replicas") or ())
            if not replicas:
                log.error("no replicas found for topic partition %s-%s", topic["topic"], partition["partition"])
                continue
            name = f"{topic['topic']}-{partition['partition']}"
            rackless = [node for node in replicas if broker_racks.get(node) is None]
            if rackless:
                log.warning("nodes %s of topic partition %s do not have a rack", rackless, name)
            known = (broker_racks.get(node) for node in replicas)
            racks[(topic["topic"], int(partition["partition"]))] = frozenset(r for r in known if r is not None)
    return racks


async def describe_replica_racks(
    admin: AIOKafkaAdminClient, topics: Collection[str]
) -> dict[Partition, frozenset[str]]:
    """`replica_racks` of `topics` as the cluster describes them now (a topic it does not know is left out)."""
    cluster = await admin.describe_cluster()
    brokers = {int(b["node_id"]): b.get("rack") for b in cluster.get("brokers", ())}
    described = [t for t in await admin.describe_topics(sorted(topics)) if not t.get("error_code")]
    missing = set(topics) - {t["topic"] for t in described}
    if missing:
        log.error("failed to describe topics %s: their partitions have no rack information", sorted(missing))
    return replica_racks(brokers, described)
