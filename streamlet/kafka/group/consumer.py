"""The group consumer: aiokafka fetches, streamlet's `GroupMembership` decides what it fetches.

aiokafka's consumer runs with no group of its own (`group_id=None`, one manual assignment that starts empty),
so its fetcher, connections and metadata work as always. The membership changes that one assignment in place:
a partition kept across a rebalance keeps its `TopicPartitionState` (position, pause, fetched high watermark)
and whatever the fetcher has already buffered for it; a removed one gets a detached state, so a fetch response
still in flight for it is discarded, and what the fetcher buffered for it is dropped. This is the only code that
reaches into aiokafka's consumer internals, checked once, at import, against the aiokafka version streamlet pins.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Mapping
from typing import Any

import aiokafka
from aiokafka import AIOKafkaConsumer
from aiokafka.client import ConnectionGroup, CoordinationType
from aiokafka.consumer.fetcher import Fetcher
from aiokafka.consumer.subscription_state import Assignment as _AiokafkaAssignment
from aiokafka.consumer.subscription_state import TopicPartitionState
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from streamlet.kafka.group.consumer_protocol import NO_GENERATION
from streamlet.kafka.group.membership import (
    GroupAssignor,
    GroupMembership,
    MembershipConfig,
    RebalanceListener,
)
from streamlet.kafka.txn_offset_commit import GroupMetadata

SUPPORTED_AIOKAFKA = "0.14."


def _check_aiokafka() -> None:
    """The internals used below exist as streamlet expects (aiokafka 0.14): fail at import, not mid-rebalance."""
    version = getattr(aiokafka, "__version__", "?")
    sources = {
        "Assignment": inspect.getsource(_AiokafkaAssignment.__init__),
        "Fetcher": inspect.getsource(Fetcher.__init__) + inspect.getsource(Fetcher._fetch_requests_routine),
    }
    expected = {
        "Assignment": ("self._topic_partitions", "self._tp_state"),
        "Fetcher": ("self._default_reset_strategy", "self._wait_consume_future", "self._records"),
    }
    missing = [
        f"{owner}.{name[5:]}" for owner, names in expected.items() for name in names if name not in sources[owner]
    ]
    missing += [name for name in ("COORDINATION",) if not hasattr(ConnectionGroup, name)]
    if not version.startswith(SUPPORTED_AIOKAFKA) or missing:
        raise ImportError(
            f"streamlet's group membership needs aiokafka {SUPPORTED_AIOKAFKA}x (installed: {version}; "
            f"missing: {', '.join(missing) or 'nothing'}): reinstall streamlet's pinned dependencies"
        )


class _AiokafkaChannel:
    """The coordinator connection over aiokafka's client (a connection group of its own, as aiokafka's
    coordinator uses, so heartbeats never queue behind fetches)."""

    def __init__(self, consumer: AIOKafkaConsumer, group_id: str) -> None:
        self._consumer = consumer
        self._group_id = group_id
        self._node_id: int | None = None

    def coordinator_known(self) -> bool:
        return self._node_id is not None

    async def find_coordinator(self) -> None:
        client = self._consumer._client
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
        try:
            return await self._consumer._client.send(node_id, request, group=ConnectionGroup.COORDINATION)
        except aiokafka.errors.KafkaError:
            self.coordinator_dead()
            raise

    async def partition_counts(self, topics: Collection[str]) -> dict[str, int]:
        client = self._consumer._client
        await client.force_metadata_update()
        counts = {}
        for topic in topics:
            partitions = client.cluster.partitions_for_topic(topic)
            if partitions:
                counts[topic] = len(partitions)
        return counts


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
        new = frozenset(partitions)
        states: dict[TopicPartition, TopicPartitionState] = assignment._tp_state
        fetcher = self._consumer._fetcher
        for tp in assignment.tps - new:
            states[tp] = TopicPartitionState(assignment)  # no position: an in-flight fetch for it is discarded
            if fetcher is not None:
                # and what the fetcher already holds for it goes too (its next getmany would ask the
                # position-less state for a position: aiokafka asserts there is one)
                fetcher._records.pop(tp, None)
        for tp in new - assignment.tps:
            state = TopicPartitionState(assignment)
            position = positions.get(tp)
            if position is None:
                state.await_reset(self._reset_strategy())
            else:
                state.seek(position)
            states[tp] = state
        assignment._topic_partitions = new
        if fetcher is not None:  # wake its loop now rather than at its next timeout
            fetcher._notify(fetcher._wait_consume_future)

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

    def rebalance_in_progress(self) -> bool:
        return self.membership is not None and self.membership.rebalance_in_progress()

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


_check_aiokafka()
