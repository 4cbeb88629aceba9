"""A plain group member for broker tests of `streamlet.kafka.group`: a sticky assignor that follows the
cooperative rule (a partition another member still owns is given to nobody this round) and a listener that
records every callback."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from aiokafka.structs import TopicPartition

from streamlet.kafka.group.consumer import GroupConsumer
from streamlet.kafka.group.consumer_protocol import Assignment, RebalanceProtocol, Subscription
from streamlet.kafka.group.membership import MembershipConfig


class StickyAssignor:
    """Each member keeps what it owns up to an even share; the rest is dealt to members below their share,
    except that a partition still owned by another member waits for the next round (the owner revokes it)."""

    name = "test-sticky"

    async def subscription_user_data(self, topics: Collection[str]) -> bytes:
        return b""

    async def assign(
        self, partition_counts: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        members = sorted(subscriptions)
        partitions = [TopicPartition(t, p) for t in sorted(partition_counts) for p in range(partition_counts[t])]
        share = {
            m: len(partitions) // len(members) + (i < len(partitions) % len(members)) for i, m in enumerate(members)
        }
        owner = {tp: m for m, sub in subscriptions.items() for tp in sub.owned_partitions}
        target = {m: sorted(tp for tp in partitions if owner.get(tp) == m)[: share[m]] for m in members}
        kept = {tp for tps in target.values() for tp in tps}
        for tp in partitions:
            if tp not in kept:
                taker = next(m for m in members if len(target[m]) < share[m])
                target[taker].append(tp)
        return {m: Assignment(tuple(tp for tp in target[m] if owner.get(tp, m) == m)) for m in members}

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        pass


@dataclass
class RecordingListener:
    events: list[tuple[str, frozenset[TopicPartition]]] = field(default_factory=list)

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.events.append(("revoked", frozenset(partitions)))

    async def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.events.append(("assigned", frozenset(partitions)))

    async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.events.append(("lost", frozenset(partitions)))


def group_consumer(
    bootstrap_servers: str,
    group: str,
    *,
    protocol: RebalanceProtocol = RebalanceProtocol.COOPERATIVE,
    instance_id: str | None = None,
    stable: bool = False,
    **config: object,
) -> GroupConsumer:
    """A consumer of `streamlet.kafka.group` with short timeouts (start it, then `subscribe`)."""
    return GroupConsumer(
        membership=MembershipConfig(
            group_id=group,
            group_instance_id=instance_id,
            session_timeout_ms=10_000,
            heartbeat_interval_ms=500,
            rebalance_timeout_ms=20_000,
            protocol=protocol,
            require_stable_offsets=stable,
            client_id=instance_id or group,
        ),
        bootstrap_servers=bootstrap_servers,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed" if stable else "read_uncommitted",
        **config,
    )
