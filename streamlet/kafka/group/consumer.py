"""The group consumer: aiokafka fetches, streamlet's `GroupMembership` decides what it fetches.

aiokafka's consumer runs with no group of its own (`group_id=None`, one manual assignment that starts empty),
so its fetcher, connections and metadata work as always. The membership changes that one assignment in place:
a partition kept across a rebalance keeps its `TopicPartitionState` (position, pause, fetched high watermark)
and whatever the fetcher has already buffered for it; a removed one gets a detached state, so a fetch response
still in flight for it is discarded. This is the only code that reaches into aiokafka's consumer internals,
checked once, at import, against the aiokafka version streamlet pins.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import aiokafka
from aiokafka import AIOKafkaConsumer
from aiokafka.client import ConnectionGroup, CoordinationType
from aiokafka.cluster import ClusterMetadata
from aiokafka.consumer.fetcher import Fetcher
from aiokafka.consumer.subscription_state import Assignment as _AiokafkaAssignment
from aiokafka.consumer.subscription_state import TopicPartitionState
from aiokafka.protocol.group import JoinGroupRequest, SyncGroupRequest
from aiokafka.protocol.metadata import MetadataRequest
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from streamlet.kafka.aiokafka_internals import require
from streamlet.kafka.group.consumer_protocol import NO_GENERATION
from streamlet.kafka.group.membership import (
    GroupAssignor,
    GroupMembership,
    MembershipConfig,
    RebalanceListener,
)
from streamlet.kafka.txn_offset_commit import GroupMetadata

#: aiokafka keys its connections by (node, group); any other value opens one more connection to the node
REBALANCE_CONNECTION = 2


class _AiokafkaChannel:
    """The coordinator connections over aiokafka's client: a broker answers one request per connection at a
    time, in order, so nothing may queue behind a request the coordinator holds. Heartbeats, commits and offset
    fetches use aiokafka's coordination connection (never behind a fetch); JoinGroup and SyncGroup, which the
    coordinator holds until the whole group has joined (seconds, up to the rebalance timeout), get one of their
    own: a stream thread's commits and offset fetches go on while the group rebalances."""

    def __init__(self, consumer: AIOKafkaConsumer, group_id: str) -> None:
        self._consumer = consumer
        self._group_id = group_id
        self._node_id: int | None = None

    def coordinator_known(self) -> bool:
        return self._node_id is not None

    async def find_coordinator(self) -> None:
        client = self._consumer._client
        if client.get_random_node() is None:  # aiokafka asserts on it: no broker known yet
            raise aiokafka.errors.NodeNotReadyError("no broker is known")
        node_id = await client.coordinator_lookup(CoordinationType.GROUP, self._group_id)
        if not await client.ready(node_id, group=ConnectionGroup.COORDINATION):
            raise aiokafka.errors.NodeNotReadyError(f"group coordinator {node_id} is not reachable")
        self._node_id = node_id

    def coordinator_dead(self) -> None:
        self._node_id = None

    async def send(self, request: Any) -> Any:
        node_id = self._node_id
        if node_id is None:
            raise aiokafka.errors.CoordinatorNotAvailableError()
        held = isinstance(request, JoinGroupRequest | SyncGroupRequest)
        group = REBALANCE_CONNECTION if held else ConnectionGroup.COORDINATION
        try:
            return await self._consumer._client.send(node_id, request, group=group)
        except aiokafka.errors.KafkaError:
            self.coordinator_dead()
            raise

    async def partition_counts(self, topics: Collection[str], *, fresh: bool = True) -> dict[str, int]:
        client = self._consumer._client
        cluster = client.cluster
        if fresh:
            asked = await self._ask_metadata(topics)
            if asked is not None:
                cluster = asked
            else:
                await client.force_metadata_update()
        counts = {}
        for topic in topics:
            partitions = cluster.partitions_for_topic(topic)
            if partitions:
                counts[topic] = len(partitions)
        return counts

    async def _ask_metadata(self, topics: Collection[str]) -> ClusterMetadata | None:
        """The topics' metadata from a Metadata request on the coordination connection (None: no answer).
        aiokafka's own refresh goes on the connection its fetcher long-polls, and waits behind the fetch: a leader
        whose partitions are idle during a rebalance performed its assignment up to `fetch_max_wait_ms` (500 ms)
        late, and every task of the group waited with it."""
        node_id = self._node_id
        if node_id is None:
            return None
        request = MetadataRequest(sorted(topics), allow_auto_topic_creation=False)
        try:
            response = await self._consumer._client.send(node_id, request, group=ConnectionGroup.COORDINATION)
        except aiokafka.errors.KafkaError:
            return None
        cluster = ClusterMetadata()
        cluster.update_metadata(response)  # aiokafka's parser of every response version
        return cluster


class _InPlaceOwnership:
    """aiokafka's one manual `Assignment`, changed in place (see the module docstring)."""

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self._consumer = consumer

    def _assignment(self) -> Any:
        return self._consumer._subscription.subscription.assignment

    def owned(self) -> frozenset[TopicPartition]:
        return frozenset(self._assignment().tps)

    def assign(self, partitions: Collection[TopicPartition], positions: Mapping[TopicPartition, int]) -> None:
        assignment = self._assignment()
        old, new = frozenset(assignment.tps), frozenset(partitions)
        states: dict[TopicPartition, TopicPartitionState] = assignment._tp_state
        for tp in old - new:
            states[tp] = TopicPartitionState(assignment)  # no position: an in-flight fetch for it is discarded
        for tp in new - old:
            state = TopicPartitionState(assignment)
            position = positions.get(tp)
            if position is None:
                state.await_reset(self._reset_strategy())
            else:
                state.seek(position)
            states[tp] = state
        assignment._topic_partitions = new
        fetcher = self._consumer._fetcher
        if fetcher is not None:
            for tp in old ^ new:  # what was fetched for a partition that left is not for its next state
                fetcher._records.pop(tp, None)
            fetcher._notify(fetcher._wait_consume_future)  # wake its loop now rather than at its next timeout

    def _reset_strategy(self) -> int:
        return int(self._consumer._fetcher._default_reset_strategy)

    def idle_seconds(self) -> float:
        return float(self._consumer._subscription.fetcher_idle_time)


class GroupConsumer(AIOKafkaConsumer):
    """A stream thread's main consumer: aiokafka's fetching under streamlet's group membership."""

    def __init__(self, *, membership: MembershipConfig, **config: Any) -> None:
        super().__init__(group_id=None, **config)
        self._membership_config = membership
        self.membership: GroupMembership | None = None
        self.assign([])  # aiokafka's manual mode with nothing yet; the membership fills it in place

    async def start(self) -> None:
        await super().start()
        self.membership = GroupMembership(
            self._membership_config,
            _AiokafkaChannel(self, self._membership_config.group_id),
            _InPlaceOwnership(self),
        )

    def subscribe(  # type: ignore[override]
        self, topics: Collection[str], listener: RebalanceListener, assignor: GroupAssignor
    ) -> None:
        """Join the group for `topics` (after `start()`): the membership runs in the background."""
        membership = self._required()
        self._client.set_topics(list(topics))
        self._client.cluster.add_listener(self._on_metadata)
        membership.subscribe(topics, listener, assignor)

    def _on_metadata(self, cluster: Any) -> None:
        membership = self.membership
        if membership is not None:
            counts = {t: len(cluster.partitions_for_topic(t) or ()) for t in membership.topics}
            membership.metadata_changed({t: n for t, n in counts.items() if n})

    async def getmany(  # type: ignore[override]
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[Any]]:
        if self.membership is not None:
            self.membership.check_errors()
        return await super().getmany(*partitions, timeout_ms=timeout_ms, max_records=max_records)

    async def stop(self, *, leave: bool | None = None) -> None:  # type: ignore[override]
        membership = self.membership
        if membership is not None:
            if membership.topics:
                self._client.cluster.remove_listener(self._on_metadata)
            await membership.close(leave=leave)
        await super().stop()

    # ---- the group questions a stream thread asks ---------------------------------------------------------

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:  # type: ignore[override]
        await self._required().commit(offsets)

    async def committed_offsets(
        self, partitions: Collection[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        return await self._required().committed(partitions)

    def drop_partitions_and_rejoin(self) -> None:
        if self.membership is not None:
            self.membership.drop_partitions_and_rejoin("its tasks were closed without committing")

    def request_rejoin(self) -> None:
        if self.membership is not None:
            self.membership.request_rejoin("triggered followup rebalance")

    def generation_lost(self) -> bool:
        return self.membership is not None and self.membership.generation_lost()

    async def leave_group(self) -> None:
        if self.membership is not None:
            await self.membership.leave_group("the application asked to leave")

    def lag(self, partition: TopicPartition) -> int | None:
        # aiokafka keeps both per assigned partition; `position()` would wait for one, this never waits
        assignment = self._subscription.subscription.assignment
        if partition not in assignment.tps:
            return None
        state = assignment.state_value(partition)
        if state is None or not state.has_valid_position:
            return None
        # under read_committed the position stops at the LSO, before another producer's open transaction
        end = state.lso if self._isolation_level == "read_committed" else state.highwater
        if end is None or end < 0:
            return None
        return max(0, int(end) - int(state.position))

    def group_metadata(self) -> GroupMetadata:
        membership = self.membership
        instance_id = self._membership_config.group_instance_id
        if membership is None:
            return GroupMetadata(NO_GENERATION, "", instance_id)
        generation = membership.generation
        return GroupMetadata(generation.generation_id, generation.member_id, instance_id)

    def _required(self) -> GroupMembership:
        if self.membership is None:
            raise RuntimeError("start() the consumer first")
        return self.membership


require(
    "streamlet's group membership",
    [
        (_AiokafkaAssignment.__init__, ("self._topic_partitions", "self._tp_state")),
        (Fetcher.__init__, ("self._default_reset_strategy",)),
        (Fetcher._fetch_requests_routine, ("self._wait_consume_future",)),
        (AIOKafkaConsumer.__init__, ("self._subscription", "self._client")),
    ],
)
