"""One member of a consumer group: Kafka's AbstractCoordinator + ConsumerCoordinator, eager or cooperative.

Kafka's state machine, error handling and callback order, in one asyncio task for joining and one for
heartbeats, so the member's own loop (a stream thread) keeps processing while a JoinGroup waits for the group:

- **eager**: before every join the member gives up everything it owns (`on_partitions_revoked(all)`), then
  takes its new assignment (`on_partitions_assigned(all)`);
- **cooperative** (KIP-429): the member keeps its partitions while it rejoins, and reports them in its
  subscription. The leader hands a partition that changes owner to nobody this round; the old owner sees it
  missing from its assignment, revokes just that (`on_partitions_revoked(owned - assigned)`) and rejoins at
  once, and the second round gives it to the new owner;
- either way, a member whose generation is gone (the coordinator dropped it) has already lost its
  partitions to others: `on_partitions_lost(all)`, and nothing may be committed for them.

Everything that talks to Kafka goes through a `GroupChannel` and everything the fetcher reads through a
`PartitionOwnership`, so unit tests script the coordinator's answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiokafka import errors as Errors
from aiokafka.protocol.group import JoinGroupRequest, SyncGroupRequest
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from streamlet.kafka.group.consumer_protocol import (
    NO_GENERATION,
    PROTOCOL_TYPE,
    Assignment,
    RebalanceProtocol,
    Subscription,
)
from streamlet.kafka.group.requests import HeartbeatRequest, LeaveGroupRequest, OffsetCommitRequest, OffsetFetchRequest

log = logging.getLogger("streamlet.group")

UNKNOWN_MEMBER_ID = ""

# Kafka's error codes that the group protocol handles one by one
NONE = 0
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID_ERROR = 25
REBALANCE_IN_PROGRESS = 27
GROUP_AUTHORIZATION_FAILED = 30
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82
UNSTABLE_OFFSET_COMMIT = 88
_COORDINATOR_MOVED = (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR)

#: After each rebalance a member heartbeats this often, for EXPEDITE_S heartbeat intervals. A cooperative
#: rebalance usually has a second round (the revoking member rejoins at once), and the other members learn of a
#: new round only from a heartbeat: at Kafka's 3 s interval every round would wait up to 3 s for each of them.
#: A stable group heartbeats at the configured interval.
EXPEDITED_HEARTBEAT_S = 0.1
EXPEDITE_S = 2


class MemberState(enum.Enum):
    """Kafka's `AbstractCoordinator.MemberState`."""

    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"  # JoinGroup sent, no heartbeats
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # joined, waiting for SyncGroup
    STABLE = "STABLE"


@dataclass(frozen=True)
class Generation:
    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    protocol_name: str | None = None

    def __str__(self) -> str:
        return (
            f"Generation{{generationId={self.generation_id}, memberId='{self.member_id}', "
            f"protocol='{self.protocol_name}'}}"
        )


class FatalGroupError(Errors.KafkaError):
    """The member cannot go on in this group (fenced by another instance, not authorized, misconfigured)."""


class RetriableGroupError(Errors.KafkaError):
    """The coordinator asked to try again (loading, moved, rebalancing): the join loop backs off and rejoins."""

    retriable = True


class RebalanceInProgressCommitError(Errors.CommitFailedError):
    """The group is between a JoinGroup and its SyncGroup: the commit may be retried once it is stable.

    Not a lost membership: the offsets stay uncommitted (at-least-once redoes at most that much)."""


class GroupChannel(Protocol):
    """The connection to the group coordinator (aiokafka's client in production, a script in unit tests)."""

    def coordinator_known(self) -> bool: ...

    async def find_coordinator(self) -> None:
        """Look the coordinator up; raises a `KafkaError` (retriable or not) when that fails."""
        ...

    def coordinator_dead(self) -> None: ...

    async def send(self, request: Any) -> Any:
        """Send to the coordinator; a `KafkaError` means the connection failed (the coordinator is marked dead)."""
        ...

    async def partition_counts(self, topics: Collection[str], *, fresh: bool = True) -> dict[str, int]:
        """Partition counts (a topic without metadata is absent); `fresh` asks the cluster first (the leader's
        assignment), else the client's cached metadata will do (a member's snapshot at each join)."""
        ...


class PartitionOwnership(Protocol):
    """The partitions this member's fetcher reads: kept in place across rebalances (positions, buffers, pauses)."""

    def owned(self) -> frozenset[TopicPartition]: ...

    def assign(self, partitions: Collection[TopicPartition], positions: Mapping[TopicPartition, int]) -> None:
        """Own exactly `partitions`: kept ones untouched, new ones at `positions` (absent: the reset policy)."""
        ...

    def idle_seconds(self) -> float:
        """How long the member's loop has not polled (Kafka's max.poll.interval.ms check)."""
        ...


class RebalanceListener(Protocol):
    """Kafka's `ConsumerRebalanceListener`, with `onPartitionsLost`."""

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None: ...

    async def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None: ...

    async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None: ...


class GroupAssignor(Protocol):
    """Kafka's `ConsumerPartitionAssignor`, with the user data built (and the leader's plan made) asynchronously."""

    name: str

    async def subscription_user_data(self, topics: Collection[str]) -> bytes: ...

    async def assign(
        self, partition_counts: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]: ...

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None: ...


@dataclass(frozen=True)
class MembershipConfig:
    group_id: str
    group_instance_id: str | None = None
    session_timeout_ms: int = 45_000
    rebalance_timeout_ms: int = 60_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    retry_backoff_ms: int = 100
    protocol: RebalanceProtocol = RebalanceProtocol.COOPERATIVE
    require_stable_offsets: bool = False  # exactly-once: never read offsets a pending transaction will replace
    client_id: str = ""
    client_rack: str | None = None  # `client.rack`, in every subscription (v3): KIP-925 rack-aware assignment


class GroupMembership:
    """One consumer's membership: `subscribe()` joins in the background, `close()` leaves (dynamic members)."""

    def __init__(self, config: MembershipConfig, channel: GroupChannel, ownership: PartitionOwnership) -> None:
        self.config = config
        self._channel = channel
        self._ownership = ownership
        self._assignor: GroupAssignor | None = None
        self._listener: RebalanceListener | None = None
        self._topics: tuple[str, ...] = ()
        self.generation = Generation()
        self.state = MemberState.UNJOINED
        self._need_rejoin = True
        self._join_prepared = False
        self._fatal: BaseException | None = None
        self._closing = False
        self._wakeup = asyncio.Event()
        self._last_heartbeat_ok = time.monotonic()
        self._poll_timeout_left = False
        self._expedite_until = 0.0
        self._heartbeat_soon = asyncio.Event()
        self._metadata_snapshot: dict[str, int] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._prefix = f"[Consumer clientId={config.client_id}, groupId={config.group_id}]"

    # ---- lifecycle --------------------------------------------------------------------------------------

    def subscribe(self, topics: Collection[str], listener: RebalanceListener, assignor: GroupAssignor) -> None:
        """Join the group for `topics`, in the background (offsets can be fetched without joining)."""
        if self._tasks:
            raise RuntimeError("the member has already subscribed")
        self._topics = tuple(sorted(set(topics)))
        self._listener = listener
        self._assignor = assignor
        self._tasks = [
            asyncio.create_task(self._run(), name=f"{self.config.client_id}-group"),
            asyncio.create_task(self._heartbeat_loop(), name=f"{self.config.client_id}-heartbeat"),
        ]

    async def close(self, *, leave: bool | None = None) -> None:
        """Stop joining and heartbeating; leave the group if `leave` (default: only a dynamic member leaves)."""
        self._closing = True
        self._wakeup.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if leave is None:
            leave = self.config.group_instance_id is None
        if leave:
            await self.leave_group("the consumer is being closed")

    def check_errors(self) -> None:
        """Raise the fatal error that stopped the membership (called from the member's poll)."""
        if self._fatal is not None:
            raise self._fatal

    # ---- what the member's loop asks -------------------------------------------------------------------

    def request_rejoin(self, reason: str = "requested by the application") -> None:
        if not self._need_rejoin:
            log.info("%s Request joining group due to: %s", self._prefix, reason)
        self._need_rejoin = True
        self._wakeup.set()

    def drop_partitions_and_rejoin(self, reason: str) -> None:
        """Own nothing from now on (no callbacks: the member already closed what it had), and rejoin. Its positions
        are past what was committed, so the partitions must restart from their committed offsets, here or
        elsewhere (Kafka Streams unsubscribes on TaskMigratedException).

        At once, not at the next join: a join already in flight would otherwise complete with the partitions still
        owned, and the member would reopen their tasks at the positions past what was committed (skipping the
        aborted records), then jump back to the committed offsets at the next join and count again what the
        reopened tasks had already counted (seen as over-counts under exactly-once)."""
        self._ownership.assign((), {})
        self.request_rejoin(reason)

    def generation_lost(self) -> bool:
        return self.generation.generation_id == NO_GENERATION

    def metadata_changed(self, counts: Mapping[str, int]) -> None:
        """The client's metadata now has these partition counts: a change in a subscribed topic needs a rebalance."""
        snapshot = {t: counts[t] for t in self._topics if t in counts}
        if self._metadata_snapshot and snapshot != self._metadata_snapshot and self.state is MemberState.STABLE:
            self.request_rejoin(f"cached metadata has changed from {self._metadata_snapshot} to {snapshot}")

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Commit as this generation's member: a stale member's commit fails (`CommitFailedError`)."""
        if not offsets:
            return
        generation = self.generation
        if generation.generation_id == NO_GENERATION:
            raise Errors.CommitFailedError("this member is not part of an active generation of the group")
        if self.state is not MemberState.STABLE:
            # Kafka's generationIfStable(): a member that is rejoining does not commit. Sent now, the commit would
            # carry the generation the group is leaving (ILLEGAL_GENERATION once the join completes) or the one
            # it is not done forming (REBALANCE_IN_PROGRESS); the next commit after the rebalance sends them.
            raise RebalanceInProgressCommitError("the member is rejoining the group; the offsets are committed later")
        by_topic: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
        for tp, meta in sorted(offsets.items()):
            by_topic[tp.topic].append((tp.partition, meta.offset, meta.metadata))
        request = OffsetCommitRequest(
            self.config.group_id,
            generation.generation_id,
            generation.member_id,
            self.config.group_instance_id,
            sorted(by_topic.items()),
        )
        while True:
            response = await self._send_retrying(request)
            codes = {code for _topic, partitions in response.topics for _p, code in partitions}
            codes.discard(NONE)
            if not codes:
                return
            code = min(codes)
            if code == COORDINATOR_LOAD_IN_PROGRESS:
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
                continue
            if code in _COORDINATOR_MOVED:
                self._channel.coordinator_dead()
                await self._await_coordinator()
                continue
            if code == REBALANCE_IN_PROGRESS:
                self.request_rejoin("the group is rebalancing")
                raise RebalanceInProgressCommitError("the group is rebalancing; the offsets are committed later")
            if code in (UNKNOWN_MEMBER_ID_ERROR, ILLEGAL_GENERATION) and (
                self.generation != generation or self.state is MemberState.PREPARING_REBALANCE
            ):
                # Kafka's ConsumerCoordinator: the commit carried a generation this member is already leaving
                # (it joined a newer one meanwhile, or is joining). Resetting would throw away the generation it
                # just got, and the thread would close its tasks as lost, uncommitted: a rebalance in progress.
                raise RebalanceInProgressCommitError(
                    f"the commit of {generation} was refused ({Errors.for_code(code).__name__}): the member is in "
                    "a newer rebalance; the offsets are committed later"
                )
            if code in (UNKNOWN_MEMBER_ID_ERROR, ILLEGAL_GENERATION):
                self._reset_generation(f"OffsetCommit answered {Errors.for_code(code).__name__}", code)
                raise Errors.CommitFailedError(
                    f"{Errors.for_code(code).__name__}: the group has already rebalanced and assigned the "
                    "partitions to another member"
                )
            if code == FENCED_INSTANCE_ID:
                self._fail(FatalGroupError(self._fenced_message()))
                raise self._fatal  # type: ignore[misc]
            raise Errors.for_code(code)(f"OffsetCommit failed for group {self.config.group_id}")

    async def committed(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (partitions never committed: absent). Under exactly-once only stable ones:
        while a transaction holds pending offsets for a partition, this waits for it to complete."""
        if not partitions:
            return {}
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in partitions:
            by_topic[tp.topic].append(tp.partition)
        request = OffsetFetchRequest(self.config.group_id, sorted(by_topic.items()), self.config.require_stable_offsets)
        backoff = self.config.retry_backoff_ms / 1000
        while True:
            response = await self._send_retrying(request)
            code = response.error_code
            retry = False
            out: dict[TopicPartition, OffsetAndMetadata] = {}
            for topic, topic_partitions, _tags in response.topics:
                for partition, offset, _epoch, metadata, error, _ptags in topic_partitions:
                    if error in (UNSTABLE_OFFSET_COMMIT, COORDINATOR_LOAD_IN_PROGRESS):
                        retry = True
                    elif error:
                        code = code or error
                    elif offset >= 0:
                        out[TopicPartition(topic, partition)] = OffsetAndMetadata(offset, metadata or "")
            if code in _COORDINATOR_MOVED:
                self._channel.coordinator_dead()
                await self._await_coordinator()
                continue
            if code == COORDINATOR_LOAD_IN_PROGRESS or retry:
                log.debug(
                    "OffsetFetch of group %s: offsets pending in an open transaction, or the coordinator loading; "
                    "retrying in %g s",
                    self.config.group_id,
                    backoff,
                )
                await asyncio.sleep(backoff)
                continue
            if code:
                raise Errors.for_code(code)(f"OffsetFetch failed for group {self.config.group_id}")
            return out

    async def leave_group(self, reason: str) -> None:
        """LeaveGroup v3 (it names a static member's instance id too), then forget the generation."""
        generation = self.generation
        if generation.member_id == UNKNOWN_MEMBER_ID and self.config.group_instance_id is None:
            return
        log.info(
            "%s Member %s sending LeaveGroup request to coordinator due to %s",
            self._prefix,
            generation.member_id,
            reason,
        )
        try:
            if not self._channel.coordinator_known():
                await self._channel.find_coordinator()
            await self._channel.send(
                LeaveGroupRequest(self.config.group_id, generation.member_id, self.config.group_instance_id)
            )
        except Errors.KafkaError as exc:
            log.warning(
                "%s LeaveGroup for %s failed: %r",
                self._prefix,
                self.config.group_instance_id or generation.member_id,
                exc,
            )
        self.generation = Generation()
        self.state = MemberState.UNJOINED

    # ---- the join loop ----------------------------------------------------------------------------------

    @property
    def topics(self) -> tuple[str, ...]:
        return self._topics

    def _subscribed(self) -> tuple[GroupAssignor, RebalanceListener]:
        assert self._assignor is not None and self._listener is not None, "subscribe() first"
        return self._assignor, self._listener

    async def _run(self) -> None:
        backoff = self.config.retry_backoff_ms / 1000
        while not self._closing:
            try:
                await self._await_coordinator()
                if self._poll_timeout_left:
                    if self._ownership.idle_seconds() * 1000 > self.config.max_poll_interval_ms:
                        await self._wait(backoff)
                        continue
                    self._poll_timeout_left = False
                if self._need_rejoin or self.state is not MemberState.STABLE:
                    await self._join_group()
                    continue
                await self._wait(None)
            except asyncio.CancelledError:
                raise
            except FatalGroupError as exc:
                self._fail(exc)
                return
            except Errors.KafkaError as exc:
                if not exc.retriable and not isinstance(exc, Errors.KafkaConnectionError | Errors.NodeNotReadyError):
                    self._fail(FatalGroupError(f"group {self.config.group_id}: {exc!r}"))
                    return
                log.info("%s %r; retrying", self._prefix, exc)
                await asyncio.sleep(backoff)
            except Exception as exc:  # a rebalance callback or the assignor failed: the member cannot go on
                log.exception("%s the rebalance failed", self._prefix)
                self._fail(exc)
                return

    async def _wait(self, timeout: float | None) -> None:
        # asyncio.timeout, not wait_for: 3.11's wait_for loses a cancellation that lands as the event is set
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._wakeup.wait()
        self._wakeup.clear()

    async def _await_coordinator(self) -> None:
        """Look the coordinator up until found: backoff doubling to 1 s (Kafka's retry.backoff.max.ms), one log
        line when the search starts and one every 10 s while it lasts (a broker outage must not flood the log)."""
        backoff = self.config.retry_backoff_ms / 1000
        failures, started, logged = 0, time.monotonic(), 0.0
        while not self._channel.coordinator_known():
            try:
                await self._channel.find_coordinator()
            except Errors.GroupAuthorizationFailedError as exc:
                raise FatalGroupError(f"not authorized to use group {self.config.group_id}") from exc
            except Errors.KafkaError as exc:
                if not exc.retriable and not isinstance(exc, Errors.KafkaConnectionError | Errors.NodeNotReadyError):
                    raise
                failures += 1
                now = time.monotonic()
                if failures == 1 or now - logged >= 10:
                    logged = now
                    log.info(
                        "%s group coordinator not available (%r); %d attempts in %.0f s, retrying",
                        self._prefix,
                        exc,
                        failures,
                        now - started,
                    )
                await asyncio.sleep(min(1.0, backoff * 2 ** min(failures - 1, 10)))

    async def _send(self, request: Any) -> Any:
        await self._await_coordinator()
        return await self._channel.send(request)

    async def _send_retrying(self, request: Any) -> Any:
        """`_send`, again (to the coordinator found anew) when the connection fails or the request times out.

        An OffsetCommit or OffsetFetch in flight when the coordinator's broker dies fails with a connection
        error; it is safe to repeat (the same offsets, the same generation, whose check is the coordinator's),
        and Kafka's consumer repeats it too. Raised, it would stop the stream thread: one broker's failover
        must not end a worker on a replicated cluster."""
        failures = 0
        while True:
            try:
                return await self._send(request)
            except (Errors.KafkaConnectionError, Errors.NodeNotReadyError, Errors.RequestTimedOutError) as exc:
                failures += 1
                if failures == 1:
                    log.info(
                        "%s %s to the group coordinator failed (%r); sending it again to the coordinator found anew",
                        self._prefix,
                        type(request).__name__,
                        exc,
                    )
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)

    async def _join_group(self) -> None:
        assignor, _ = self._subscribed()
        if not self._join_prepared:
            await self._on_join_prepare()
            self._join_prepared = True
        self._need_rejoin = False
        self.state = MemberState.PREPARING_REBALANCE
        counts = await self._channel.partition_counts(self._topics, fresh=False)
        if counts.keys() != set(self._topics):  # the client's metadata lacks a topic: ask the cluster
            counts = await self._channel.partition_counts(self._topics)
        self._metadata_snapshot = {t: counts[t] for t in self._topics if t in counts}
        owned = self._ownership.owned() if self.config.protocol is RebalanceProtocol.COOPERATIVE else frozenset()
        subscription = Subscription(
            self._topics,
            await assignor.subscription_user_data(self._topics),
            tuple(sorted(owned)),
            self.generation.generation_id,
            rack_id=self.config.client_rack,
        )
        log.info("%s (Re-)joining group", self._prefix)
        response = await self._channel.send(
            JoinGroupRequest(
                self.config.group_id,
                self.config.session_timeout_ms,
                self.config.rebalance_timeout_ms,
                self.generation.member_id,
                self.config.group_instance_id,  # type: ignore[arg-type]
                PROTOCOL_TYPE,
                [(assignor.name, subscription.encode())],
            )
        )
        if not self._joined(response):
            return
        self.generation = Generation(response.generation_id, response.member_id, response.group_protocol)
        self.state = MemberState.COMPLETING_REBALANCE
        self._last_heartbeat_ok = time.monotonic()
        log.info("%s Successfully joined group with generation %s", self._prefix, self.generation)
        assignments: dict[str, Assignment] = {}
        if response.leader_id == response.member_id:
            assignments = await self._perform_assignment(response.members)
        sync = await self._channel.send(
            SyncGroupRequest(
                self.config.group_id,
                self.generation.generation_id,
                self.generation.member_id,
                self.config.group_instance_id,  # type: ignore[arg-type]
                [(member, a.encode()) for member, a in sorted(assignments.items())],
            )
        )
        if not self._synced(sync.error_code):
            return
        log.info("%s Successfully synced group in generation %s", self._prefix, self.generation)
        self.state = MemberState.STABLE
        self._expedite_until = time.monotonic() + EXPEDITE_S * self.config.heartbeat_interval_ms / 1000
        self._heartbeat_soon.set()
        try:
            await self._on_join_complete(Assignment.decode(sync.member_assignment))
        except BaseException:  # the assignment was not taken: join again rather than sit on a half-done one
            self._need_rejoin = True
            self.state = MemberState.UNJOINED
            raise
        self._join_prepared = False

    def _joined(self, response: Any) -> bool:
        """Kafka's JoinGroupResponseHandler: True to go on to SyncGroup; otherwise the rejoin is arranged."""
        code = response.error_code
        if code == NONE:
            return True
        error = Errors.for_code(code).__name__
        self._need_rejoin = True
        self.state = MemberState.UNJOINED
        if code == MEMBER_ID_REQUIRED:  # KIP-394: join again at once with the id the coordinator gave
            self.generation = Generation(NO_GENERATION, response.member_id, None)
            return False
        if code == UNKNOWN_MEMBER_ID_ERROR:
            self._reset_generation("JoinGroup answered UNKNOWN_MEMBER_ID", code)
            return False
        if code in (COORDINATOR_LOAD_IN_PROGRESS, REBALANCE_IN_PROGRESS):
            raise RetriableGroupError(f"JoinGroup answered {error}")
        if code in _COORDINATOR_MOVED:
            self._channel.coordinator_dead()
            raise RetriableGroupError(f"JoinGroup answered {error}")
        if code == FENCED_INSTANCE_ID:
            raise FatalGroupError(self._fenced_message())
        raise FatalGroupError(f"group {self.config.group_id}: JoinGroup failed with {error}")

    def _synced(self, code: int) -> bool:
        """Kafka's SyncGroupResponseHandler."""
        if code == NONE:
            return True
        error = Errors.for_code(code).__name__
        self._need_rejoin = True
        self.state = MemberState.UNJOINED
        if code == REBALANCE_IN_PROGRESS:
            log.info("%s SyncGroup failed: the group began another rebalance; rejoining", self._prefix)
            return False
        if code in (UNKNOWN_MEMBER_ID_ERROR, ILLEGAL_GENERATION):
            self._reset_generation(f"SyncGroup answered {error}", code)
            return False
        if code in _COORDINATOR_MOVED:
            self._channel.coordinator_dead()
            raise RetriableGroupError(f"SyncGroup answered {error}")
        if code == FENCED_INSTANCE_ID:
            raise FatalGroupError(self._fenced_message())
        raise FatalGroupError(f"group {self.config.group_id}: SyncGroup failed with {error}")

    async def _perform_assignment(self, members: list[Any]) -> dict[str, Assignment]:
        """The leader's part: decode every subscription, run the assignor, check the cooperative rule."""
        assignor, _ = self._subscribed()
        subscriptions: dict[str, Subscription] = {}
        for member in members:
            member_id, metadata = member[0], member[-1]
            instance_id = member[1] if len(member) == 3 else None  # JoinGroup v5+ names static members
            subscriptions[member_id] = Subscription.decode(metadata, instance_id)
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        counts = await self._channel.partition_counts(topics)
        log.info(
            "%s Performing assignment using strategy %s with subscriptions %s",
            self._prefix,
            assignor.name,
            {m: list(s.topics) for m, s in subscriptions.items()},
        )
        assignments = await assignor.assign(counts, subscriptions)
        if self.config.protocol is RebalanceProtocol.COOPERATIVE:
            validate_cooperative_assignment(subscriptions, assignments)
        return {m: assignments.get(m, Assignment(())) for m in subscriptions}

    async def _on_join_prepare(self) -> None:
        _, listener = self._subscribed()
        owned = set(self._ownership.owned())
        if self.generation_lost() or self.generation.member_id == UNKNOWN_MEMBER_ID:
            if owned:
                log.info(
                    "%s Giving away all assigned partitions as lost since generation/memberID has been reset, "
                    "indicating that consumer is in old state or no longer part of the group",
                    self._prefix,
                )
                await listener.on_partitions_lost(owned)
                self._ownership.assign((), {})
        elif self.config.protocol is RebalanceProtocol.EAGER:
            log.info("%s Revoke previously assigned partitions %s", self._prefix, _fmt(owned))
            await listener.on_partitions_revoked(owned)
            self._ownership.assign((), {})
        else:
            gone = {tp for tp in owned if tp.topic not in self._topics}
            if gone:
                await listener.on_partitions_revoked(gone)
                self._ownership.assign(owned - gone, {})

    async def _on_join_complete(self, assignment: Assignment) -> None:
        assignor, listener = self._subscribed()
        owned = set(self._ownership.owned())
        assigned = set(assignment.partitions)
        added = assigned - owned
        if self.config.protocol is RebalanceProtocol.COOPERATIVE:
            revoked = owned - assigned
            log.info(
                "%s Updating assignment with\n\tAssigned partitions:                       %s\n"
                "\tCurrent owned partitions:                  %s\n"
                "\tAdded partitions (assigned - owned):       %s\n"
                "\tRevoked partitions (owned - assigned):     %s",
                self._prefix,
                _fmt(assigned),
                _fmt(owned),
                _fmt(added),
                _fmt(revoked),
            )
            if revoked:
                log.info("%s Revoke previously assigned partitions %s", self._prefix, _fmt(revoked))
                await listener.on_partitions_revoked(revoked)
                self.request_rejoin("need to revoke partitions and re-join")
        log.info("%s Notifying assignor about the new %s", self._prefix, _fmt_assignment(assignment))
        assignor.on_assignment(assignment, self.generation.generation_id)
        # every partition not owned when the assignment is applied starts at its committed offset: the member may
        # have dropped what it owned (drop_partitions_and_rejoin) during a callback or an offset fetch above
        positions: dict[TopicPartition, int] = {}
        asked: set[TopicPartition] = set()
        while missing := assigned - self._ownership.owned() - asked:
            asked |= missing
            positions.update({tp: meta.offset for tp, meta in (await self.committed(missing)).items()})
        added = assigned - self._ownership.owned()
        self._ownership.assign(assigned, positions)
        log.info("%s Adding newly assigned partitions: %s", self._prefix, _fmt(added))
        await listener.on_partitions_assigned(added)

    # ---- heartbeats -------------------------------------------------------------------------------------

    def heartbeat_delay(self) -> float:
        """Seconds until the next heartbeat: the configured interval, shorter for a while after a rebalance."""
        interval = self.config.heartbeat_interval_ms / 1000
        return min(interval, EXPEDITED_HEARTBEAT_S) if time.monotonic() < self._expedite_until else interval

    async def _heartbeat_loop(self) -> None:
        while not self._closing:
            with contextlib.suppress(TimeoutError):  # a completed join cuts the wait short (see EXPEDITE_S)
                async with asyncio.timeout(self.heartbeat_delay()):  # not wait_for: see `_wait`
                    await self._heartbeat_soon.wait()
            self._heartbeat_soon.clear()
            if self.state not in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE):
                continue
            if self.generation.generation_id == NO_GENERATION or not self._channel.coordinator_known():
                continue
            if self._ownership.idle_seconds() * 1000 > self.config.max_poll_interval_ms:
                log.warning(
                    "%s consumer poll timeout has expired: the member's loop has not polled for more than "
                    "max_poll_interval_ms (%d); leaving the group",
                    self._prefix,
                    self.config.max_poll_interval_ms,
                )
                await self.leave_group("consumer poll timeout has expired")
                self._poll_timeout_left = True
                self.request_rejoin("consumer poll timeout has expired")
                continue
            await self._heartbeat_once()

    async def _heartbeat_once(self) -> None:
        generation = self.generation
        try:
            response = await self._channel.send(
                HeartbeatRequest(
                    self.config.group_id,
                    generation.generation_id,
                    generation.member_id,
                    self.config.group_instance_id,
                )
            )
        except Errors.KafkaError as exc:
            log.info("%s Heartbeat failed (%r); looking for the coordinator again", self._prefix, exc)
            self._check_session()
            self._wakeup.set()
            return
        code = response.error_code
        if code == NONE:
            self._last_heartbeat_ok = time.monotonic()
            return
        if generation != self.generation:  # a join completed meanwhile: this answer is about the old one
            return
        if code == REBALANCE_IN_PROGRESS:
            self._last_heartbeat_ok = time.monotonic()
            if self.state is MemberState.STABLE:
                self.request_rejoin("group is already rebalancing")
        elif code == ILLEGAL_GENERATION and self.state is not MemberState.STABLE:
            pass  # a heartbeat of the previous generation while this member is rejoining
        elif code in (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID_ERROR):
            self._reset_generation(f"Heartbeat answered {Errors.for_code(code).__name__}", code)
        elif code in _COORDINATOR_MOVED:
            self._channel.coordinator_dead()
            self._wakeup.set()
        elif code == FENCED_INSTANCE_ID:
            self._fail(FatalGroupError(self._fenced_message()))
        elif code == GROUP_AUTHORIZATION_FAILED:
            self._fail(FatalGroupError(f"not authorized to use group {self.config.group_id}"))
        else:
            log.warning("%s Heartbeat answered %s", self._prefix, Errors.for_code(code).__name__)

    def _check_session(self) -> None:
        if (time.monotonic() - self._last_heartbeat_ok) * 1000 > self.config.session_timeout_ms:
            log.info("%s session timed out without receiving a heartbeat response", self._prefix)
            self._channel.coordinator_dead()

    # ---- internals --------------------------------------------------------------------------------------

    def _reset_generation(self, reason: str, code: int) -> None:
        """The coordinator no longer knows this generation: the partitions are lost; rejoin (as new if unknown)."""
        member_id = UNKNOWN_MEMBER_ID if code == UNKNOWN_MEMBER_ID_ERROR else self.generation.member_id
        log.info("%s Resetting generation and member id due to: %s", self._prefix, reason)
        self.generation = Generation(NO_GENERATION, member_id, None)
        self.state = MemberState.UNJOINED
        self._join_prepared = False  # the next join starts by giving the partitions up as lost
        self.request_rejoin(reason)

    def _fenced_message(self) -> str:
        return (
            f"group {self.config.group_id}: another member with group.instance.id "
            f"{self.config.group_instance_id!r} joined and fenced this one (FENCED_INSTANCE_ID)"
        )

    def _fail(self, exc: BaseException) -> None:
        if self._fatal is None:
            log.error("%s %s", self._prefix, exc)
            self._fatal = exc


def validate_cooperative_assignment(
    subscriptions: Mapping[str, Subscription], assignments: Mapping[str, Assignment]
) -> None:
    """Kafka's `validateCooperativeAssignment`: a partition changing owner must be given to nobody this round."""
    owner = {tp: member for member, sub in subscriptions.items() for tp in sub.owned_partitions}
    for member, assignment in assignments.items():
        stolen = sorted(tp for tp in assignment.partitions if owner.get(tp, member) != member)
        if stolen:
            raise FatalGroupError(
                f"the assignor gave {member} partitions another member still owns: {_fmt(stolen)}; under the "
                "cooperative protocol a partition changing owner must first be revoked"
            )


def _fmt(partitions: Collection[TopicPartition]) -> str:
    return "[" + ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(partitions)) + "]"


def _fmt_assignment(assignment: Assignment) -> str:
    return f"Assignment(partitions={_fmt(assignment.partitions)})"
