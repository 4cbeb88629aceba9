"""`GroupMembership` against a scripted coordinator: Kafka's error paths of JoinGroup, SyncGroup, Heartbeat and
OffsetCommit, and the callbacks of both protocols (no broker; the broker tests are in tests/integration/kafka)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata
from aiokafka.errors import CommitFailedError, KafkaConnectionError, KafkaError, NodeNotReadyError, RequestTimedOutError
from aiokafka.protocol.group import JoinGroupRequest, SyncGroupRequest
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from streamlet.kafka.group.consumer_protocol import Assignment, RebalanceProtocol, Subscription
from streamlet.kafka.group.membership import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION,
    MEMBER_ID_REQUIRED,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID_ERROR,
    FatalGroupError,
    Generation,
    GroupMembership,
    MembershipConfig,
    MemberState,
    RebalanceInProgressCommitError,
    validate_cooperative_assignment,
)
from streamlet.kafka.group.requests import HeartbeatRequest, OffsetCommitRequest, OffsetFetchRequest
from tests.support.group import RecordingListener

TOPIC = "in"
P0, P1, P2 = (TopicPartition(TOPIC, p) for p in range(3))


class ScriptedCoordinator:
    """Answers each request type from its own queue, and records what was sent."""

    def __init__(self) -> None:
        self.known = True
        self.answers: dict[type, list[Any]] = {}
        self.sent: list[Any] = []
        self.lookups = 0

    def answer(self, request_type: type, *responses: Any) -> None:
        self.answers.setdefault(request_type, []).extend(responses)

    def coordinator_known(self) -> bool:
        return self.known

    async def find_coordinator(self) -> None:
        self.lookups += 1
        self.known = True

    def coordinator_dead(self) -> None:
        self.known = False

    async def send(self, request: Any) -> Any:
        self.sent.append(request)
        queue = self.answers.get(type(request))
        assert queue, f"no scripted answer for {type(request).__name__}"
        answer = queue.pop(0)
        if isinstance(answer, BaseException):  # as the real channel: a failed send marks the coordinator dead
            self.coordinator_dead()
            raise answer
        return answer

    async def partition_counts(self, topics: Collection[str], *, fresh: bool = True) -> dict[str, int]:
        return {TOPIC: 3}


class Owned:
    def __init__(self) -> None:
        self.partitions: frozenset[TopicPartition] = frozenset()
        self.positions: dict[TopicPartition, int | None] = {}

    def owned(self) -> frozenset[TopicPartition]:
        return self.partitions

    def assign(self, partitions: Collection[TopicPartition], positions: Mapping[TopicPartition, int]) -> None:
        new = frozenset(partitions)
        for tp in new - self.partitions:
            self.positions[tp] = positions.get(tp)
        self.partitions = new

    def idle_seconds(self) -> float:
        return 0.0


class OneMemberAssignor:
    name = "test"

    def __init__(self) -> None:
        self.received: list[tuple[Assignment, int]] = []

    async def subscription_user_data(self, topics: Collection[str]) -> bytes:
        return b"user-data"

    async def assign(
        self, partition_counts: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        return {m: Assignment(sub.owned_partitions) for m, sub in subscriptions.items()}

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        self.received.append((assignment, generation_id))


def joined(generation: int, member: str = "m-1", leader: str = "other", code: int = 0) -> Any:
    return SimpleNamespace(
        error_code=code, generation_id=generation, group_protocol="test", leader_id=leader, member_id=member, members=[]
    )


def synced(*partitions: TopicPartition, code: int = 0) -> Any:
    return SimpleNamespace(error_code=code, member_assignment=Assignment(partitions, b"info").encode())


def fetched(offsets: Mapping[TopicPartition, int]) -> Any:
    topics = [(TOPIC, [(tp.partition, o, -1, "", 0, {}) for tp, o in offsets.items()], {})]
    return SimpleNamespace(error_code=0, topics=topics)


def committed(code: int) -> Any:
    return SimpleNamespace(topics=[(TOPIC, [(0, code)])])


def membership(
    protocol: RebalanceProtocol = RebalanceProtocol.COOPERATIVE, instance_id: str | None = None
) -> tuple[GroupMembership, ScriptedCoordinator, Owned, RecordingListener, OneMemberAssignor]:
    coordinator, owned, listener, assignor = ScriptedCoordinator(), Owned(), RecordingListener(), OneMemberAssignor()
    member = GroupMembership(
        MembershipConfig("group", group_instance_id=instance_id, protocol=protocol, retry_backoff_ms=1),
        coordinator,
        owned,
    )
    # registered without starting the background tasks: the tests drive one step at a time
    member._topics, member._listener, member._assignor = (TOPIC,), listener, assignor
    return member, coordinator, owned, listener, assignor


def last_subscription(coordinator: ScriptedCoordinator) -> Subscription:
    join = [r for r in coordinator.sent if isinstance(r, JoinGroupRequest)][-1]
    return Subscription.decode(join._group_protocols[0][1])


async def join_with(
    member: GroupMembership, coordinator: ScriptedCoordinator, generation: int, *tps: TopicPartition
) -> None:
    coordinator.answer(JoinGroupRequest, joined(generation))
    coordinator.answer(SyncGroupRequest, synced(*tps))
    coordinator.answer(OffsetFetchRequest, fetched({tp: 10 * tp.partition for tp in tps}))
    await member._join_group()


async def test_first_join_retries_with_the_member_id_the_coordinator_requires() -> None:
    member, coordinator, owned, listener, assignor = membership()
    coordinator.answer(JoinGroupRequest, joined(-1, member="given-id", code=MEMBER_ID_REQUIRED))
    await member._join_group()
    assert member._need_rejoin and member.generation.member_id == "given-id"

    await join_with(member, coordinator, 1, P0, P1)

    joins = [r for r in coordinator.sent if isinstance(r, JoinGroupRequest)]
    assert [j._member_id for j in joins] == ["", "given-id"]
    assert owned.partitions == {P0, P1} and owned.positions == {P0: 0, P1: 10}  # from the committed offsets
    assert listener.events == [("assigned", frozenset({P0, P1}))]
    assert assignor.received[-1][1] == 1 and not member._need_rejoin


async def test_cooperative_keeps_what_stays_revokes_only_what_moves_and_rejoins_at_once() -> None:
    member, coordinator, owned, listener, _ = membership()
    await join_with(member, coordinator, 1, P0, P1)
    listener.events.clear()

    await join_with(member, coordinator, 2, P0)  # P1 moves to another member

    subscription = last_subscription(coordinator)
    assert subscription.owned_partitions == (P0, P1) and subscription.generation_id == 1
    assert listener.events == [("revoked", frozenset({P1})), ("assigned", frozenset())]
    assert owned.partitions == {P0} and member._need_rejoin  # the follow-up round hands P1 over


async def test_eager_gives_up_everything_before_it_joins() -> None:
    member, coordinator, owned, listener, _ = membership(RebalanceProtocol.EAGER)
    await join_with(member, coordinator, 1, P0, P1)
    listener.events.clear()

    await join_with(member, coordinator, 2, P0, P1)

    subscription = last_subscription(coordinator)
    assert subscription.owned_partitions == ()
    assert listener.events == [("revoked", frozenset({P0, P1})), ("assigned", frozenset({P0, P1}))]
    assert not member._need_rejoin


@pytest.mark.parametrize("code", [ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID_ERROR])
async def test_a_heartbeat_that_finds_the_generation_gone_loses_the_partitions(code: int) -> None:
    member, coordinator, owned, listener, _ = membership()
    await join_with(member, coordinator, 1, P0)
    coordinator.answer(HeartbeatRequest, SimpleNamespace(error_code=code))

    await member._heartbeat_once()

    assert member.generation_lost() and member._need_rejoin
    assert member.generation.member_id == ("" if code == UNKNOWN_MEMBER_ID_ERROR else "m-1")
    listener.events.clear()
    await join_with(member, coordinator, 2, P0)
    assert listener.events[0] == ("lost", frozenset({P0}))  # nothing may be committed for them: no revoke


async def test_a_heartbeat_learning_of_a_rebalance_rejoins_keeping_everything() -> None:
    member, coordinator, owned, listener, _ = membership()
    await join_with(member, coordinator, 1, P0)
    coordinator.answer(HeartbeatRequest, SimpleNamespace(error_code=REBALANCE_IN_PROGRESS))

    await member._heartbeat_once()

    assert member._need_rejoin and not member.generation_lost() and owned.partitions == {P0}


async def test_a_heartbeat_to_a_moved_coordinator_looks_it_up_again() -> None:
    member, coordinator, _, _, _ = membership()
    await join_with(member, coordinator, 1, P0)
    coordinator.answer(HeartbeatRequest, SimpleNamespace(error_code=NOT_COORDINATOR))
    await member._heartbeat_once()
    assert not coordinator.known and not member.generation_lost()


async def test_sync_group_errors() -> None:
    member, coordinator, _, _, _ = membership()
    coordinator.answer(JoinGroupRequest, joined(3))
    coordinator.answer(SyncGroupRequest, synced(code=REBALANCE_IN_PROGRESS))
    await member._join_group()
    assert member._need_rejoin and member.generation.generation_id == 3  # rejoin, still a member

    coordinator.answer(JoinGroupRequest, joined(4))
    coordinator.answer(SyncGroupRequest, synced(code=UNKNOWN_MEMBER_ID_ERROR))
    await member._join_group()
    assert member.generation_lost() and member.generation.member_id == ""


async def test_a_fenced_static_member_stops_with_a_clear_error() -> None:
    member, coordinator, _, _, _ = membership(instance_id="worker-1-1")
    coordinator.answer(JoinGroupRequest, joined(-1, code=FENCED_INSTANCE_ID))
    with pytest.raises(FatalGroupError, match="worker-1-1"):
        await member._join_group()


async def test_the_leader_checks_the_cooperative_rule() -> None:
    subscriptions = {"a": Subscription((TOPIC,), owned_partitions=(P0,)), "b": Subscription((TOPIC,))}
    validate_cooperative_assignment(subscriptions, {"a": Assignment((P0,)), "b": Assignment((P1,))})
    with pytest.raises(FatalGroupError, match="in-0"):
        validate_cooperative_assignment(subscriptions, {"a": Assignment(()), "b": Assignment((P0,))})


async def test_commit_errors() -> None:
    member, coordinator, _, _, _ = membership()
    await join_with(member, coordinator, 1, P0)
    offsets = {P0: OffsetAndMetadata(5, "meta")}

    coordinator.answer(OffsetCommitRequest, committed(0))
    await member.commit(offsets)
    sent = coordinator.sent[-1]
    assert sent._head == ("group", 1, "m-1", None) and sent._topics == [(TOPIC, [(0, 5, -1, "meta")])]

    coordinator.answer(OffsetCommitRequest, committed(REBALANCE_IN_PROGRESS))
    with pytest.raises(RebalanceInProgressCommitError):
        await member.commit(offsets)
    assert not member.generation_lost()

    coordinator.answer(OffsetCommitRequest, committed(ILLEGAL_GENERATION))
    with pytest.raises(CommitFailedError):
        await member.commit(offsets)
    assert member.generation_lost()
    with pytest.raises(CommitFailedError):  # a member without a generation does not even ask
        await member.commit(offsets)


@pytest.mark.parametrize("failure", [KafkaConnectionError("closed"), NodeNotReadyError("down"), RequestTimedOutError()])
async def test_a_commit_and_a_fetch_cut_off_by_the_coordinators_death_are_sent_again(failure: KafkaError) -> None:
    """Found by the broker failover chaos test: the group coordinator's broker was killed -9 while an OffsetCommit
    was in flight, the connection error stopped the stream thread and the worker exited. Now the request goes
    again to the coordinator found anew (Kafka's consumer does the same)."""
    member, coordinator, _, _, _ = membership()
    await join_with(member, coordinator, 1, P0)
    lookups = coordinator.lookups
    offsets = {P0: OffsetAndMetadata(5, "meta")}
    coordinator.answer(OffsetCommitRequest, failure, committed(0))
    await member.commit(offsets)
    commits = [r for r in coordinator.sent if isinstance(r, OffsetCommitRequest)]
    assert len(commits) == 2 and commits[0]._topics == commits[1]._topics  # the same offsets, once more
    assert coordinator.lookups == lookups + 1 and not member.generation_lost()

    coordinator.answer(OffsetFetchRequest, failure, fetched({P0: 5}))
    assert (await member.committed([P0]))[P0].offset == 5
    assert coordinator.lookups == lookups + 2


@pytest.mark.parametrize("meanwhile", ["joined a newer generation", "sent a JoinGroup"])
async def test_a_commit_refused_for_the_generation_the_member_is_leaving_keeps_the_new_one(meanwhile: str) -> None:
    """Kafka's rule: ILLEGAL_GENERATION for a commit sent before the member joined a newer generation (or while it
    is joining) is a rebalance in progress, not a lost generation. Seen in `experiment run` under cooperative: the
    answer came just after JoinGroup gave generation 6, the member reset it, and its thread closed its tasks as
    lost, uncommitted, so their records were counted twice."""
    member, coordinator, _, _, _ = membership()
    await join_with(member, coordinator, 1, P0)
    scripted = coordinator.send

    async def send(request: Any) -> Any:
        if isinstance(request, OffsetCommitRequest):  # the commit is in flight when the member moves on
            if meanwhile == "joined a newer generation":
                member.generation = Generation(2, "m-1", "test")
                member.state = MemberState.COMPLETING_REBALANCE
            else:
                member.state = MemberState.PREPARING_REBALANCE
        return await scripted(request)

    coordinator.send = send  # type: ignore[method-assign]
    coordinator.answer(OffsetCommitRequest, committed(ILLEGAL_GENERATION))
    before = member.generation if meanwhile == "sent a JoinGroup" else Generation(2, "m-1", "test")
    with pytest.raises(RebalanceInProgressCommitError):
        await member.commit({P0: OffsetAndMetadata(5, "")})
    assert member.generation == before and not member.generation_lost()
    assert coordinator.sent[-1]._head == ("group", 1, "m-1", None)  # sent as generation 1


async def test_a_rejoining_member_does_not_commit() -> None:
    """Kafka's generationIfStable(): from JoinGroup to the end of SyncGroup the commit is not sent (it would carry
    a generation the group is leaving); the member keeps its generation and commits after the rebalance."""
    member, coordinator, _, _, _ = membership()
    await join_with(member, coordinator, 1, P0)
    offsets = {P0: OffsetAndMetadata(5, "")}
    sent = len(coordinator.sent)
    for state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE):
        member.state = state
        with pytest.raises(RebalanceInProgressCommitError):
            await member.commit(offsets)
    assert len(coordinator.sent) == sent
    assert not member.generation_lost()


async def test_a_commit_answered_after_the_member_joined_a_newer_generation_keeps_it() -> None:
    """ILLEGAL_GENERATION for a commit sent in generation 1, answered once the member has joined generation 2:
    generation 2 stays (resetting it would throw away a good membership), and the commit is retried later."""
    member, coordinator, _, _, _ = membership()
    await join_with(member, coordinator, 1, P0)

    async def answer_after_a_join(request: Any) -> Any:
        coordinator.sent.append(request)
        member.generation = Generation(2, "m-1", "test")  # the join completed while the commit was in flight
        return committed(ILLEGAL_GENERATION)

    coordinator.send = answer_after_a_join  # type: ignore[method-assign]
    with pytest.raises(RebalanceInProgressCommitError):
        await member.commit({P0: OffsetAndMetadata(5, "")})
    assert member.generation == Generation(2, "m-1", "test") and not member.generation_lost()


def test_subscriptions_of_every_version_decode() -> None:
    """v3 round trip, and the v0 bytes of a member that predates KIP-429 (today's eager streamlet on aiokafka)."""
    sub = Subscription(("a", "b"), b"\x01\x02", (TopicPartition("a", 1), TopicPartition("a", 0)), 7, "rack-1")
    back = Subscription.decode(sub.encode(), "inst")
    assert back == Subscription(
        ("a", "b"), b"\x01\x02", (TopicPartition("a", 0), TopicPartition("a", 1)), 7, "rack-1", "inst"
    )
    v0 = ConsumerProtocolMemberMetadata(0, ["a"], b"ud").encode()
    assert Subscription.decode(v0) == Subscription(("a",), b"ud")
    with pytest.raises(ValueError, match="truncated"):
        Subscription.decode(sub.encode()[:-3])
    assert Assignment.decode(Assignment((P1, P0), b"x").encode()) == Assignment((P0, P1), b"x")
    assert Assignment.decode(b"") == Assignment(())


async def test_dropped_partitions_restart_from_their_committed_offsets() -> None:
    """After a migrated path (tasks closed without committing) the member owns nothing when it rejoins, so a
    partition it gets back is positioned at its committed offset, not where the closed task had read to."""
    member, coordinator, owned, listener, _ = membership()
    await join_with(member, coordinator, 1, P0)
    owned.positions[P0] = 99  # read past what was committed

    member.drop_partitions_and_rejoin("its tasks were closed without committing")
    listener.events.clear()
    await join_with(member, coordinator, 2, P0)

    assert last_subscription(coordinator).owned_partitions == ()
    assert owned.positions[P0] == 0 and listener.events == [("assigned", frozenset({P0}))]


@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        (COORDINATOR_LOAD_IN_PROGRESS, "retry"),
        (COORDINATOR_NOT_AVAILABLE, "find coordinator"),
        (NOT_COORDINATOR, "find coordinator"),
        (REBALANCE_IN_PROGRESS, "retry"),
        (UNKNOWN_MEMBER_ID_ERROR, "new member"),
        (FENCED_INSTANCE_ID, "fatal"),
        (23, "fatal"),  # INCONSISTENT_GROUP_PROTOCOL
        (26, "fatal"),  # INVALID_SESSION_TIMEOUT
        (30, "fatal"),  # GROUP_AUTHORIZATION_FAILED
        (81, "fatal"),  # GROUP_MAX_SIZE_REACHED
    ],
)
async def test_join_group_errors(code: int, outcome: str) -> None:
    """Kafka's JoinGroupResponseHandler, error by error."""
    member, coordinator, _, _, _ = membership()
    member.generation = Generation(4, "m-1", "test")
    coordinator.answer(JoinGroupRequest, joined(-1, code=code))
    if outcome == "fatal":
        with pytest.raises(FatalGroupError):
            await member._join_group()
        return
    if outcome == "new member":
        await member._join_group()
        assert member.generation == Generation() and member._need_rejoin
        return
    with pytest.raises(KafkaError) as raised:  # retriable: the join loop backs off and joins again
        await member._join_group()
    assert raised.value.retriable and member._need_rejoin and member.generation.member_id == "m-1"
    assert coordinator.known is (outcome == "retry")


@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        (REBALANCE_IN_PROGRESS, "rejoin"),
        (ILLEGAL_GENERATION, "generation reset"),
        (UNKNOWN_MEMBER_ID_ERROR, "member reset"),
        (NOT_COORDINATOR, "find coordinator"),
        (COORDINATOR_NOT_AVAILABLE, "find coordinator"),
        (FENCED_INSTANCE_ID, "fatal"),
        (30, "fatal"),
    ],
)
async def test_sync_group_errors_one_by_one(code: int, outcome: str) -> None:
    member, coordinator, owned, listener, _ = membership()
    coordinator.answer(JoinGroupRequest, joined(5))
    coordinator.answer(SyncGroupRequest, synced(code=code))
    if outcome == "fatal":
        with pytest.raises(FatalGroupError):
            await member._join_group()
        return
    if outcome == "find coordinator":
        with pytest.raises(KafkaError):
            await member._join_group()
        assert not coordinator.known and member._need_rejoin
        return
    await member._join_group()
    assert member._need_rejoin and listener.events == [] and owned.partitions == frozenset()
    assert member.generation.generation_id == (5 if outcome == "rejoin" else -1)
    assert member.generation.member_id == ("" if outcome == "member reset" else "m-1")


@pytest.mark.parametrize("code", [FENCED_INSTANCE_ID, 30])
async def test_a_fatal_heartbeat_answer_stops_the_member(code: int) -> None:
    member, coordinator, _, _, _ = membership(instance_id="worker-2-1")
    await join_with(member, coordinator, 1, P0)
    coordinator.answer(HeartbeatRequest, SimpleNamespace(error_code=code))
    await member._heartbeat_once()
    with pytest.raises(FatalGroupError):
        member.check_errors()


async def test_a_stale_heartbeat_while_rejoining_is_ignored() -> None:
    member, coordinator, owned, _, _ = membership()
    await join_with(member, coordinator, 1, P0)
    member.state = MemberState.COMPLETING_REBALANCE  # joined the next generation, SyncGroup pending
    coordinator.answer(HeartbeatRequest, SimpleNamespace(error_code=ILLEGAL_GENERATION))
    await member._heartbeat_once()
    assert not member.generation_lost() and owned.partitions == {P0}


async def test_kept_partitions_keep_their_fetch_state_in_aiokafka() -> None:
    """The in-place assignment on aiokafka's own objects: a kept partition keeps its position and pause, an added
    one starts at its committed offset, a removed one is detached (an in-flight fetch for it is discarded)."""
    from aiokafka.consumer.fetcher import OffsetResetStrategy
    from aiokafka.consumer.subscription_state import SubscriptionState

    from streamlet.kafka.group.consumer import _InPlaceOwnership

    state = SubscriptionState()
    state.assign_from_user([])
    fetcher = SimpleNamespace(
        _records={},
        _wait_consume_future=None,
        _notify=lambda future: None,
        _default_reset_strategy=OffsetResetStrategy.EARLIEST,
    )
    consumer = SimpleNamespace(_subscription=state, _fetcher=fetcher)
    ownership = _InPlaceOwnership(consumer)  # type: ignore[arg-type]
    ownership.assign([P0, P1], {P0: 5, P1: 7})
    assignment = state.subscription.assignment
    assignment.state_value(P0).consumed_to(42)
    state.pause(P0)
    kept = assignment.state_value(P0)
    fetcher._records.update({P0: "fetched for p0", P1: "fetched for p1"})

    ownership.assign([P0, P2], {P2: 3})

    assert state.subscription.assignment is assignment and assignment.active  # the fetcher goes on
    assert assignment.tps == {P0, P2} and assignment.state_value(P0) is kept
    assert kept.position == 42 and kept.paused
    assert assignment.state_value(P2).position == 3
    assert not assignment.state_value(P1).has_valid_position  # detached
    assert fetcher._records == {P0: "fetched for p0"}  # a removed partition's fetched records go with it

    ownership.assign([P0, P1, P2], {})  # P1 back, with no committed offset: its old records must not be read
    assert assignment.state_value(P1).awaiting_reset and P1 not in fetcher._records


async def test_heartbeats_come_faster_for_a_while_after_each_rebalance() -> None:
    """The other members learn of a cooperative rebalance's second round from a heartbeat: right after a
    rebalance they heartbeat every 0.1 s, then at the configured interval again."""
    member, coordinator, _, _, _ = membership()
    assert member.heartbeat_delay() == 3.0
    await join_with(member, coordinator, 1, P0)
    assert member.heartbeat_delay() == 0.1
    member._expedite_until = 0.0  # the window (two heartbeat intervals) has passed
    assert member.heartbeat_delay() == 3.0


async def test_partitions_dropped_while_a_join_is_in_flight_restart_from_their_committed_offsets() -> None:
    """The member's tasks are closed dirty (a refused transaction) while its JoinGroup or SyncGroup is in flight:
    the join then completes with partitions the member no longer owns, so they start at their committed offsets
    (not where the closed tasks had read to), are reported as assigned (their tasks must be reopened), and the
    member rejoins afterwards."""
    member, coordinator, owned, listener, _ = membership()
    await join_with(member, coordinator, 1, P0, P1)
    owned.positions.update({P0: 99, P1: 99})  # read past what was committed
    listener.events.clear()
    scripted_send = coordinator.send

    async def drop_during_sync(request: Any) -> Any:
        if isinstance(request, SyncGroupRequest):
            member.drop_partitions_and_rejoin("its tasks were closed without committing")
        return await scripted_send(request)

    coordinator.send = drop_during_sync  # type: ignore[method-assign]
    await join_with(member, coordinator, 2, P0, P1)

    assert last_subscription(coordinator).owned_partitions == (P0, P1)  # it still owned them when it joined
    assert owned.partitions == {P0, P1} and owned.positions == {P0: 0, P1: 10}
    assert listener.events == [("assigned", frozenset({P0, P1}))]
    assert member._need_rejoin
