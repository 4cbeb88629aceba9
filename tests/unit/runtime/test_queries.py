"""Interactive queries without Kafka: key -> owner routing, the read-only view, and its retriable errors."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka.partitioner import murmur2
from aiokafka.structs import TopicPartition

from examples.wordcount.dsl import build_topology
from streamlet.assignment.protocol import HostTasks
from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.partitioner import CachingDefaultPartitioner
from streamlet.runtime.queries import (
    KeyNotLocalError,
    QueryUnavailableError,
    ReadOnlyKeyValueStore,
    StreamsMetadataState,
    UnknownStoreError,
    partition_for_key,
)
from streamlet.runtime.task_state import TaskState
from streamlet.runtime.topology_metadata import TopologyMetadata
from streamlet.task_id import TaskId
from tests.support.local_tasks import (
    STORE,
    SUB,
    Active,
    Standby,
    StandbyStateManager,
    Tasks,
    count_store,
    word_on,
)

LOCAL, REMOTE = "127.0.0.1:7001", "127.0.0.1:7002"


def _state(partitions: int = 6) -> StreamsMetadataState:
    metadata = TopologyMetadata(build_topology(), "app")
    metadata.task_partitions({"streams-plaintext-input": partitions, "app-counts-store-repartition": partitions})
    return StreamsMetadataState(metadata, LOCAL)


def _key(word: str) -> bytes:
    return word.encode()


def _view(state: StreamsMetadataState, *managers: Tasks, running: bool = True, **kwargs: Any):
    return ReadOnlyKeyValueStore(STORE, state, lambda: running, lambda: managers, **kwargs)


def _ready(state: StreamsMetadataState, by_host: dict[str, HostTasks]) -> None:
    state.register_thread("t1")
    state.assignment_applied("t1", by_host)


# ---- routing ---------------------------------------------------------------------------------------------------


def test_key_partition_is_the_producers_murmur2_placement() -> None:
    partitioner = CachingDefaultPartitioner()
    for word in ("the", "a", "", "zebra", "caf", "w17"):
        key = _key(word)
        assert partition_for_key(key, 6) == partitioner(key, list(range(6)), list(range(6)))
        assert partition_for_key(key, 6) == (murmur2(key) & 0x7FFFFFFF) % 6


def test_query_metadata_names_the_active_host_and_the_standby_hosts() -> None:
    state = _state()
    p0, p1 = word_on(0), word_on(1)
    _ready(
        state,
        {
            LOCAL: HostTasks(frozenset({TaskId(SUB, 0), TaskId(0, 1)}), frozenset({TaskId(SUB, 1)})),
            REMOTE: HostTasks(frozenset({TaskId(SUB, 1), TaskId(0, 0)}), frozenset({TaskId(SUB, 0)})),
        },
    )
    meta = state.key_query_metadata(STORE, _key(p0))
    assert (meta.active_host, meta.standby_hosts, meta.partition) == (LOCAL, frozenset({REMOTE}), 0)
    meta = state.key_query_metadata(STORE, _key(p1))
    assert (meta.active_host, meta.standby_hosts, meta.partition) == (REMOTE, frozenset({LOCAL}), 1)
    # no host owns partition 2 yet
    assert state.key_query_metadata(STORE, _key(word_on(2))).active_host is None


def test_metadata_for_store_lists_the_clients_with_its_tasks() -> None:
    state = _state()
    _ready(
        state,
        {
            LOCAL: HostTasks(frozenset({TaskId(SUB, 0)}), frozenset()),
            REMOTE: HostTasks(frozenset({TaskId(0, 0)}), frozenset()),  # stateless tasks only
        },
    )
    [local] = state.metadata_for_store(STORE)
    assert local.host == LOCAL and local.store_names == {STORE} and local.active_tasks == {TaskId(SUB, 0)}
    assert [m.host for m in state.all_metadata()] == [LOCAL, REMOTE]
    assert state.all_metadata()[1].store_names == frozenset()
    with pytest.raises(UnknownStoreError, match="no queryable store 'nope'"):
        state.metadata_for_store("nope")


# ---- the read-only view ----------------------------------------------------------------------------------------


def test_local_get_reads_the_running_active_task_and_routes_the_rest() -> None:
    state = _state()
    here, there = word_on(0), word_on(1)
    _ready(state, {LOCAL: HostTasks(frozenset({TaskId(SUB, 0)})), REMOTE: HostTasks(frozenset({TaskId(SUB, 1)}))})
    manager = Tasks(active={TaskId(SUB, 0): Active(TaskState.RUNNING, {STORE: count_store({here: 7})})})
    view = _view(state, manager)
    assert view.get(here) == 7
    with pytest.raises(KeyNotLocalError) as err:
        view.get(there)
    assert (err.value.host, err.value.partition) == (REMOTE, 1)
    assert list(view.all()) == [(here, 7)]
    assert view.approximate_num_entries() == 1


def test_missing_key_on_a_local_partition_is_none() -> None:
    state = _state()
    _ready(state, {LOCAL: HostTasks(frozenset(TaskId(SUB, p) for p in range(6)))})
    managers = Tasks(active={TaskId(SUB, p): Active(TaskState.RUNNING, {STORE: count_store({})}) for p in range(6)})
    assert _view(state, managers).get("absent") is None


def test_range_spans_local_partitions_in_partition_order() -> None:
    state = _state()
    a, b = word_on(0), word_on(3)
    _ready(state, {LOCAL: HostTasks(frozenset({TaskId(SUB, 0), TaskId(SUB, 3)}))})
    t1 = Tasks(active={TaskId(SUB, 3): Active(TaskState.RUNNING, {STORE: count_store({b: 2, "zz": 1})})})
    t2 = Tasks(active={TaskId(SUB, 0): Active(TaskState.RUNNING, {STORE: count_store({a: 5})})})
    view = _view(state, t1, t2)
    assert list(view.all()) == [(a, 5), (b, 2), ("zz", 1)]
    assert list(view.range(b, b)) == [(b, 2)]


async def test_scan_yields_bounded_chunks() -> None:
    state = _state()
    _ready(state, {LOCAL: HostTasks(frozenset({TaskId(SUB, 0)}))})
    words = {f"k{i:03}": i for i in range(25)}
    manager = Tasks(active={TaskId(SUB, 0): Active(TaskState.RUNNING, {STORE: count_store(words)})})
    chunks = [chunk async for chunk in _view(state, manager).scan(chunk=10)]
    assert [len(c) for c in chunks] == [10, 10, 5]
    assert dict(kv for c in chunks for kv in c) == words


def test_the_view_is_read_only() -> None:
    view = _view(_state())
    for method in ("put", "delete", "put_all"):
        assert not hasattr(view, method)


# ---- retriable errors (HTTP 503) ---------------------------------------------------------------------------------


def test_not_running_client_is_unavailable() -> None:
    state = _state()
    _ready(state, {LOCAL: HostTasks(frozenset({TaskId(SUB, 0)}))})
    with pytest.raises(QueryUnavailableError) as err:
        _view(state, Tasks(), running=False).get("x")
    assert err.value.reason == "not_running"


def test_before_the_first_assignment_and_during_a_rebalance_nothing_answers() -> None:
    state = _state()
    word = word_on(0)
    manager = Tasks(active={TaskId(SUB, 0): Active(TaskState.RUNNING, {STORE: count_store({word: 1})})})
    state.register_thread("t1")
    state.register_thread("t2")
    view = _view(state, manager)
    with pytest.raises(QueryUnavailableError, match="rebalance") as err:
        view.get(word)  # no thread assigned yet
    assert err.value.reason == "rebalancing"
    by_host = {LOCAL: HostTasks(frozenset({TaskId(SUB, 0)}))}
    state.assignment_applied("t1", by_host)
    with pytest.raises(QueryUnavailableError):
        view.get(word)  # t2 has not got its assignment
    state.assignment_applied("t2", by_host)
    assert view.get(word) == 1
    state.rebalance_started("t2")  # one thread rebalancing is enough: partitions may be moving
    with pytest.raises(QueryUnavailableError) as err:
        view.get(word)
    assert err.value.reason == "rebalancing"
    with pytest.raises(QueryUnavailableError):
        list(view.all())
    state.assignment_applied("t2", by_host)
    assert view.get(word) == 1


@pytest.mark.parametrize(
    ("task_state", "reason"),
    [(TaskState.RESTORING, "restoring"), (TaskState.SUSPENDED, "rebalancing"), (TaskState.CLOSED, "rebalancing")],
)
def test_a_task_that_is_not_running_is_unavailable(task_state: TaskState, reason: str) -> None:
    state = _state()
    word = word_on(0)
    _ready(state, {LOCAL: HostTasks(frozenset({TaskId(SUB, 0)}))})
    manager = Tasks(active={TaskId(SUB, 0): Active(task_state, {STORE: count_store({word: 1})})})
    view = _view(state, manager)
    with pytest.raises(QueryUnavailableError) as err:
        view.get(word)
    assert err.value.reason == reason
    with pytest.raises(QueryUnavailableError):
        list(view.all())  # a restoring partition would make the local listing look complete when it is not


def test_assigned_here_but_not_open_yet_is_restoring_and_unowned_is_no_owner() -> None:
    state = _state()
    _ready(state, {LOCAL: HostTasks(frozenset({TaskId(SUB, 0)}))})
    view = _view(state, Tasks())
    with pytest.raises(QueryUnavailableError) as err:
        view.get(word_on(0))
    assert err.value.reason == "restoring"
    with pytest.raises(QueryUnavailableError) as err:
        view.get(word_on(1))
    assert err.value.reason == "no_owner"
    with pytest.raises(QueryUnavailableError, match="tasks 1_0 are being opened") as err:
        list(view.all())  # without partition 0 the listing would look complete
    assert err.value.reason == "restoring"


def test_standbys_answer_only_when_asked_and_within_the_lag_bound() -> None:
    state = _state()
    word = word_on(1)
    _ready(
        state,
        {LOCAL: HostTasks(frozenset(), frozenset({TaskId(SUB, 1)})), REMOTE: HostTasks(frozenset({TaskId(SUB, 1)}))},
    )
    sm = StandbyStateManager(count_store({word: 3}), 1, position=90)
    manager = Tasks(standby={TaskId(SUB, 1): Standby(sm)})
    with pytest.raises(KeyNotLocalError):
        _view(state, manager).get(word)  # by default only active tasks answer
    ends: dict[TopicPartition, int] = {}
    view = _view(state, manager, max_standby_lag=10, standby_end_offset=ends.get)
    with pytest.raises(KeyNotLocalError):
        view.get(word)  # end offset never fetched: the lag is unknown, so the active host answers
    ends[TopicPartition("app-counts-store-changelog", 1)] = 100
    assert view.get(word) == 3  # 10 behind
    ends[TopicPartition("app-counts-store-changelog", 1)] = 101
    with pytest.raises(KeyNotLocalError):
        view.get(word)  # 11 behind
    # with no active owner (e.g. it is moving), a lagging standby says so
    state.assignment_applied("t1", {LOCAL: HostTasks(frozenset(), frozenset({TaskId(SUB, 1)}))})
    with pytest.raises(QueryUnavailableError, match="11 records behind") as err:
        view.get(word)
    assert err.value.reason == "standby_lagging"
    ends.clear()
    with pytest.raises(QueryUnavailableError, match="unknown records behind"):
        view.get(word)


def test_kafka_streams_query_api_before_and_after_an_assignment() -> None:
    """`KafkaStreams.query_metadata_for_key` serializes with the store's key serde; `store()` of a client that has
    not started is a retriable error."""
    streams = KafkaStreams(build_topology(), StreamsConfig(application_id="app", application_server=LOCAL))
    streams.topology_metadata.task_partitions(
        {"streams-plaintext-input": 6, "app-counts-store-repartition": 6}
    )  # what start() does once it knows the partition counts
    word = word_on(2)
    assert streams.query_metadata_for_key(STORE, word).active_host is None
    streams.metadata_state.assignment_applied("t1", {REMOTE: HostTasks(frozenset({TaskId(SUB, 2)}))})
    meta = streams.query_metadata_for_key(STORE, word)
    assert (meta.active_host, meta.partition) == (REMOTE, 2)
    assert [m.host for m in streams.metadata_for_store(STORE)] == [REMOTE]
    assert [m.host for m in streams.all_metadata()] == [REMOTE]
    with pytest.raises(QueryUnavailableError) as err:
        streams.store(STORE).get(word)
    assert err.value.reason == "not_running"
    with pytest.raises(UnknownStoreError):
        streams.store("nope")
