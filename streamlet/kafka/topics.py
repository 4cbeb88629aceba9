"""InternalTopicManager: makes sure the topics a topology needs exist with the right shape.

Source topics belong to the user: missing ones are an error naming the topic. Repartition and changelog
topics belong to the application: they are created when missing, and validated when they exist, since
a changelog with the wrong partition count silently mixes the state of several tasks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from aiokafka.admin import NewTopic

from streamlet.errors import MissingTopicError, StreamletError, TopologyError
from streamlet.kafka import connect
from streamlet.kafka.acls import TOPIC_AUTHORIZATION_FAILED, not_authorized
from streamlet.kafka.connect import Cluster
from streamlet.topology.dsl_graph import REPARTITION_TOPIC_SUFFIX
from streamlet.topology.topology import CHANGELOG_SUFFIX

log = logging.getLogger(__name__)

_UNKNOWN_TOPIC = 3
#: how long a missing source or sink topic is looked for again at start-up before it is an error
NEW_TOPIC_WAIT_S = 2.0
_TOPIC_EXISTS = 36


@dataclass(frozen=True)
class TopicSpec:
    """An internal topic to create: name, partition count and topic configs."""

    name: str
    partitions: int
    config: Mapping[str, str] = field(default_factory=dict)


class InternalTopicManager:
    """Creates and validates topics through one admin client."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        replication_factor: int = -1,
        topic_configs: Mapping[str, str] | None = None,
        client_id: str = "streamlet-admin",
        application_id: str = "<application_id>",
    ) -> None:
        self._cluster = cluster
        self._application_id = application_id  # for the ACL a "not authorized" asks for
        self._admin = connect.admin(cluster, client_id=client_id)
        self._replication_factor = replication_factor  # -1: the broker's default.replication.factor
        # every created topic's configs (min.insync.replicas...), under each spec's own
        self._topic_configs = dict(topic_configs or {})

    async def start(self) -> None:
        """Connect; a worker's first connection, so bad credentials end here in one clear `ClusterAccessError`."""
        await connect.start(self._admin, self._cluster, "the admin client")

    async def close(self) -> None:
        await self._admin.close()

    async def partition_counts(self, topics: Iterable[str]) -> dict[str, int]:
        """Partition count of each existing topic; topics that don't exist are left out."""
        names = sorted(set(topics))
        if not names:
            return {}
        counts: dict[str, int] = {}
        for described in await self._admin.describe_topics(names):
            if described.get("error_code", 0) == _UNKNOWN_TOPIC:
                continue
            if described.get("error_code", 0) == TOPIC_AUTHORIZATION_FAILED:
                raise not_authorized(
                    self._cluster,
                    self._application_id,
                    f"describing topic {described['topic']}",
                    TOPIC_AUTHORIZATION_FAILED,
                )
            if described.get("error_code", 0) != 0:
                raise StreamletError(f"describing topic {described['topic']} failed: error {described['error_code']}")
            counts[described["topic"]] = len(described["partitions"])
        return counts

    async def existing_topics(self, topics: Iterable[str], wait_s: float = NEW_TOPIC_WAIT_S) -> dict[str, int]:
        """`partition_counts`, asked again for up to `wait_s` while some topic is missing: a topic created just
        before the application started may not have reached the broker that answers yet (on a cluster, each
        broker learns of it from the controller a moment apart). Free when every topic is there."""
        wanted = sorted(set(topics))
        deadline = asyncio.get_running_loop().time() + wait_s
        counts = await self.partition_counts(wanted)
        while len(counts) < len(wanted) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.1)  # the metadata the next describe reads, not a synchronisation of ours
            counts = await self.partition_counts(wanted)
        return counts

    async def require_source_topics(self, topics: Iterable[str]) -> dict[str, int]:
        """Partition counts of the source topics; a missing one raises MissingTopicError naming it."""
        wanted = sorted(set(topics))
        counts = await self.existing_topics(wanted)
        missing = [t for t in wanted if t not in counts]
        if missing:
            raise MissingTopicError(
                f"source topic(s) {', '.join(missing)} do not exist; create them first "
                "(e.g. `streamlet topics create NAME --partitions N`) or check the topology"
            )
        return counts

    async def ensure(self, specs: Iterable[TopicSpec], timeout: float = 30.0) -> None:
        """Create missing topics; validate the partition count of existing ones."""
        specs = list(specs)
        if not specs:
            return
        existing = await self.partition_counts(s.name for s in specs)
        _validate(specs, existing)
        missing = [s for s in specs if s.name not in existing]
        if missing:
            new = [self._new_topic(s) for s in missing]
            response = await self._admin.create_topics(new)
            for topic, code, message in _topic_errors(response):
                if code == TOPIC_AUTHORIZATION_FAILED:
                    raise not_authorized(self._cluster, self._application_id, f"creating topic {topic}", code)
                if code not in (0, _TOPIC_EXISTS):
                    raise StreamletError(f"creating internal topic {topic} failed: error {code} {message or ''}")
            for s in missing:
                log.info("created internal topic %s with %d partitions", s.name, s.partitions)
        await self._wait_for_leaders(specs, timeout)
        # another client may have created a topic concurrently with another partition count
        _validate(specs, await self.partition_counts(s.name for s in specs))

    def _new_topic(self, spec: TopicSpec) -> NewTopic:
        """The CreateTopics entry of a spec: replication factor -1 (with no replica assignment) lets the broker
        apply its default.replication.factor, as Kafka Streams' replication.factor=-1 does."""
        rf = self._replication_factor
        return NewTopic(
            spec.name,
            spec.partitions,
            rf,
            replica_assignments={} if rf == -1 else None,
            topic_configs={**self._topic_configs, **spec.config},
        )

    async def delete(self, topics: Iterable[str]) -> None:
        """Delete topics this application made for itself (a reply topic when its App stops)."""
        names = sorted(set(topics))
        if names:
            await self._admin.delete_topics(names)

    async def _wait_for_leaders(self, specs: list[TopicSpec], timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        pending = {s.name: s.partitions for s in specs}
        while pending:
            for described in await self._admin.describe_topics(sorted(pending)):
                parts = described.get("partitions", [])
                if len(parts) == pending.get(described["topic"], -1) and all(p["leader"] >= 0 for p in parts):
                    pending.pop(described["topic"], None)
            if pending and loop.time() > deadline:
                raise StreamletError(f"internal topics {sorted(pending)} have no leader after {timeout:.0f}s")
            if pending:
                await asyncio.sleep(0.1)


def _validate(specs: Iterable[TopicSpec], existing: Mapping[str, int]) -> None:
    for spec in specs:
        found = existing.get(spec.name)
        if found is not None and found != spec.partitions:
            raise TopologyError(partition_mismatch_message(spec.name, found, spec.partitions))


def partition_mismatch_message(topic: str, found: int, needed: int) -> str:
    """Why an existing topic's partition count is wrong and what each way out costs.

    The advice depends on what the topic holds. A changelog is the only durable copy of a store: deleting it
    deletes the state, so that is offered only as the explicit price of the second option. A repartition
    topic holds records in transit between sub-topologies: it can be recreated, losing only the records not
    yet processed from it. The kind is read from the name (`-changelog`, `-repartition`), as the topology
    names its internal topics; any other topic was asked for by name (`streamlet topics create`).
    """
    head = f"topic {topic} has {found} partitions but the topology needs {needed}"
    if topic.endswith(CHANGELOG_SUFFIX):
        return (
            f"changelog {head} (one per task, i.e. the partition count of its sub-topology's source topics). "
            "The changelog holds the only durable copy of the store's state, partitioned by task, so streamlet "
            "leaves it alone; adding partitions to it would not fix it either, keys would stay in the partitions "
            f"of their old tasks. Either keep the state: give the source topics {found} partitions again "
            "(Kafka cannot remove partitions, so recreate them consistently) or undo the topology change that "
            "altered the count. Or give up this store's state: stop every instance, delete the changelog topic "
            "and every instance's local state (`streamlet cleanup MODULE:APP`), and start again; the store then "
            "starts empty."
        )
    if topic.endswith(REPARTITION_TOPIC_SUFFIX):
        return (
            f"repartition {head} (that of its upstream source topics, or the count given to repartition()). Its "
            "records are in transit between sub-topologies, not state: stop every instance, delete the topic and "
            "start again, and streamlet recreates it. Records written to it but not yet processed downstream are "
            "lost with it."
        )
    return f"{head}; streamlet does not change the partition count of an existing topic"


def _topic_errors(response: object) -> list[tuple[str, int, str | None]]:
    out = []
    for entry in getattr(response, "topic_errors", []):
        topic, code = entry[0], entry[1]
        message = entry[2] if len(entry) > 2 else None
        out.append((topic, code, message))
    return out
