"""Interactive queries (Kafka Streams' IQ v1): who owns which store partition, and read-only local store views.

Every assignment (version 2 of the user data) tells each client the `application_server` host of every other
client and the tasks it runs. A store's partition is its task's partition, and a key's partition is Kafka's
default partitioner (murmur2) on the key serialized with the store's key serde, as the producer of the
store's input topic places it. So any client can answer "which host owns this key".

`ReadOnlyKeyValueStore` reads the local active tasks of one store; under exactly-once it reads their committed
state only (Kafka's READ_COMMITTED isolation, KIP-892: `streamlet.state.read_committed`). It never answers
from state that may be stale while looking fresh: while a stream thread of this client is rebalancing, while
the task restores, or while the client is not running, a read raises `QueryUnavailableError` (retriable; HTTP
503 with the reason). A key on another client raises `KeyNotLocalError` naming the owner (the web server
forwards there).
Standbys answer only when asked for (`max_standby_lag`, KIP-535) and within that lag; a standby further
behind defers to the active task's host.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiokafka.partitioner import murmur2
from aiokafka.structs import TopicPartition

from streamlet.assignment.protocol import HostTasks
from streamlet.errors import StreamletError
from streamlet.runtime.task_state import TaskState
from streamlet.runtime.topology_metadata import TopologyMetadata
from streamlet.serdes import Serde
from streamlet.state import session_key_schema, timestamped, window_key_schema
from streamlet.task_id import TaskId
from streamlet.topology.session_windows import SessionWindows

__all__ = [
    "KeyNotLocalError",
    "KeyQueryMetadata",
    "QueryUnavailableError",
    "ReadOnlyKeyValueStore",
    "StreamsMetadata",
    "StreamsMetadataState",
    "UnknownStoreError",
    "partition_for_key",
]

# Reasons of QueryUnavailableError (the `reason` of the HTTP 503 body)
NOT_RUNNING = "not_running"
REBALANCING = "rebalancing"
RESTORING = "restoring"
NO_OWNER = "no_owner"
STANDBY_LAGGING = "standby_lagging"


class QueryUnavailableError(StreamletError):
    """The store cannot answer right now; retry later (rebalancing, restoring, not running...)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class KeyNotLocalError(StreamletError):
    """The key's partition is owned by another client, `host` (its application_server)."""

    def __init__(self, store: str, partition: int, host: str) -> None:
        super().__init__(f"store {store!r} partition {partition} is owned by {host}, not by this client")
        self.store = store
        self.partition = partition
        self.host = host


class UnknownStoreError(StreamletError):
    """No (logged) store of that name in the topology."""


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """Kafka's default partitioner, as `CachingDefaultPartitioner` and the Java producer place a keyed record."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


@dataclass(frozen=True)
class StreamsMetadata:
    """One client as seen by interactive queries (Kafka Streams' StreamsMetadata)."""

    host: str
    store_names: frozenset[str]
    active_tasks: frozenset[TaskId]
    standby_store_names: frozenset[str]
    standby_tasks: frozenset[TaskId]


@dataclass(frozen=True)
class KeyQueryMetadata:
    """Where a key lives (Kafka Streams' KeyQueryMetadata): None as active host when no client owns it yet."""

    active_host: str | None
    standby_hosts: frozenset[str]
    partition: int


class StreamsMetadataState:
    """The client's view of the group for queries: every host's tasks (from the latest assignment) and whether
    any of its stream threads is between the start of a rebalance and its assignment."""

    def __init__(self, metadata: TopologyMetadata, local_host: str = "") -> None:
        self._metadata = metadata
        self.local_host = local_host
        self._tasks_by_host: dict[str, HostTasks] = {}
        self._threads: set[str] = set()
        self._assigned: set[str] = set()  # threads that got at least one assignment
        self._rebalancing: set[str] = set()
        self._store_subtopology: dict[str, int] = {}
        stores = metadata.topology.stores
        for sub in metadata.topology.subtopologies:
            for store in sub.store_names:
                spec = stores[store]
                # not a store of streamlet's own bookkeeping, a suppression buffer or a stream-stream join's
                # window store (whose keys hold a sequence number): Kafka Streams queries none of these
                if spec.queryable and not spec.buffer and not spec.retain_duplicates:
                    self._store_subtopology[store] = sub.id
        # every client holds these whole: any key is local (streamlet.runtime.global_queries)
        self._global_stores = frozenset(g.store for g in metadata.topology.global_stores)

    # ---- the stream threads' hooks ---------------------------------------------------------------------------

    def register_thread(self, name: str) -> None:
        self._threads.add(name)

    def rebalance_started(self, thread: str) -> None:
        self._rebalancing.add(thread)

    def assignment_applied(self, thread: str, tasks_by_host: Mapping[str, HostTasks]) -> None:
        self._tasks_by_host = dict(tasks_by_host)
        self._rebalancing.discard(thread)
        self._assigned.add(thread)

    # ---- queries ---------------------------------------------------------------------------------------------

    def rebalancing(self) -> bool:
        """True while a thread of this client rebalances, or has not got its first assignment."""
        return bool(self._rebalancing) or not self._threads <= self._assigned

    def store_names(self) -> list[str]:
        return sorted(self._store_subtopology.keys() | self._global_stores)

    def is_global(self, store: str) -> bool:
        return store in self._global_stores

    def global_store_names(self) -> list[str]:
        return sorted(self._global_stores)

    def subtopology_of(self, store: str) -> int:
        try:
            return self._store_subtopology[store]
        except KeyError:
            raise UnknownStoreError(f"no queryable store {store!r}; stores: {self.store_names()}") from None

    def store_serdes(self, store: str) -> tuple[Serde, Serde]:
        if store not in self._global_stores:
            self.subtopology_of(store)  # a known store
        spec = self._metadata.topology.stores[store]
        return spec.key_serde, spec.value_serde

    def routing_key(self, store: str) -> Callable[[bytes], bytes]:
        """What a store key is partitioned by: itself, or for a window or session store the record key in it
        (a windowed table read in a page finds the key's partition)."""
        windows = self._metadata.topology.stores[store].windows
        if windows is None:
            return _same
        return session_key_schema.key_of if isinstance(windows, SessionWindows) else window_key_schema.key_of

    def known_store(self, store: str) -> bool:
        return store in self._store_subtopology or store in self._global_stores

    def store_windows(self, store: str) -> Any:
        """The store's windows (TimeWindows, SlidingWindows or SessionWindows), None for a key-value store."""
        return self._metadata.topology.stores[store].windows

    def is_timestamped(self, store: str) -> bool:
        """A DSL aggregation's store keeps timestamp + value (Kafka's TimestampedKeyValueStore); queries read values."""
        return bool(self._metadata.topology.stores[store].timestamped)

    def num_partitions(self, store: str) -> int:
        sub = self.subtopology_of(store)
        count = self._metadata.num_tasks(sub)
        if count == 0:
            raise QueryUnavailableError(NOT_RUNNING, f"store {store!r}: partition counts are not known yet")
        return count

    def partition_for(self, store: str, key: bytes) -> int:
        """The key's partition of `store`; -1 for a global store, which has none (Kafka's KeyQueryMetadata)."""
        if store in self._global_stores:
            return -1
        return partition_for_key(key, self.num_partitions(store))

    def all_metadata(self) -> list[StreamsMetadata]:
        """Every client that set application_server (Kafka Streams' metadataForAllStreamsClients)."""
        return [self._client_metadata(host, tasks) for host, tasks in sorted(self._tasks_by_host.items())]

    def metadata_for_store(self, store: str) -> list[StreamsMetadata]:
        """The clients that run an active or standby task of `store` (Kafka Streams' streamsMetadataForStore);
        every client for a global store."""
        if store in self._global_stores:
            return self.all_metadata()
        sub = self.subtopology_of(store)
        return [m for m in self.all_metadata() if any(t.subtopology == sub for t in m.active_tasks | m.standby_tasks)]

    def key_query_metadata(self, store: str, key: bytes) -> KeyQueryMetadata:
        """Which host owns the (serialized) key's partition of `store` (Kafka Streams' queryMetadataForKey).

        A global store's key is on every client: this one answers it (partition -1, no standbys)."""
        if store in self._global_stores:
            return KeyQueryMetadata(self.local_host or None, frozenset(), -1)
        partition = self.partition_for(store, key)
        task = TaskId(self.subtopology_of(store), partition)
        active = [h for h, t in self._tasks_by_host.items() if task in t.active]
        standbys = frozenset(h for h, t in self._tasks_by_host.items() if task in t.standby)
        return KeyQueryMetadata(active[0] if active else None, standbys, partition)

    def local_active_tasks(self, subtopology: int) -> frozenset[TaskId]:
        """The sub-topology's tasks the latest assignment gave this client (by its application_server)."""
        tasks = self._tasks_by_host.get(self.local_host)
        return frozenset() if tasks is None else frozenset(t for t in tasks.active if t.subtopology == subtopology)

    def _client_metadata(self, host: str, tasks: HostTasks) -> StreamsMetadata:
        def stores(of: Iterable[TaskId]) -> frozenset[str]:
            subs = {t.subtopology for t in of}
            return frozenset(s for s, sub in self._store_subtopology.items() if sub in subs)

        # every client holds the global stores (Kafka adds them to each host's store names)
        active = stores(tasks.active) | self._global_stores
        return StreamsMetadata(host, active, tasks.active, stores(tasks.standby), tasks.standby)


class _Task(Protocol):
    state: TaskState

    @property
    def queryable_stores(self) -> Mapping[str, Any]: ...


class _Standby(Protocol):
    state_manager: Any


class LocalTasksSource(Protocol):
    """What the store view needs of each stream thread's task manager."""

    @property
    def active(self) -> Mapping[TaskId, Any]: ...

    @property
    def standby(self) -> Mapping[TaskId, Any]: ...


class ReadOnlyKeyValueStore:
    """A read-only view of store `name` over this client's local tasks (Kafka Streams' ReadOnlyKeyValueStore).

    Keys and values are typed: the store's serdes convert them. Every call re-checks where the key lives, so a
    view stays valid across rebalances (it raises while one is in progress). Iterations concatenate the local
    partitions in partition order; each partition is in key order.
    """

    def __init__(
        self,
        name: str,
        state: StreamsMetadataState,
        running: Callable[[], bool],
        tasks: Callable[[], Iterable[LocalTasksSource]],
        *,
        max_standby_lag: int | None = None,
        standby_end_offset: Callable[[TopicPartition], int | None] | None = None,
    ) -> None:
        self.name = name
        self._state = state
        self._running = running
        self._tasks = tasks
        self._sub = state.subtopology_of(name)
        self._key_serde, self._value_serde = state.store_serdes(name)
        self._timestamped = state.is_timestamped(name)
        self._routing_key = state.routing_key(name)
        self._max_standby_lag = max_standby_lag
        self._standby_end_offset = standby_end_offset

    def __repr__(self) -> str:
        return f"ReadOnlyKeyValueStore({self.name!r})"

    # ---- typed API -----------------------------------------------------------------------------------------

    def serialize_key(self, key: Any) -> bytes:
        data = self._key_serde.serialize(self.name, key)
        if data is None:
            raise KeyError(f"store {self.name}: None is not a valid key")
        return data

    def get(self, key: Any) -> Any:
        """The key's value, None if absent; raises QueryUnavailableError or KeyNotLocalError."""
        raw = self.get_raw(self.serialize_key(key))
        return None if raw is None else self._value_serde.deserialize(self.name, raw)

    def range(self, from_key: Any, to_key: Any) -> Iterator[tuple[Any, Any]]:
        """`(key, value)` of the local partitions with `from_key <= key <= to_key` (None = unbounded)."""
        lo = None if from_key is None else self.serialize_key(from_key)
        hi = None if to_key is None else self.serialize_key(to_key)
        return self._typed(store.range(lo, hi) for store in self._local_stores())

    def all(self) -> Iterator[tuple[Any, Any]]:
        return self._typed(store.all() for store in self._local_stores())

    def approximate_num_entries(self) -> int:
        return sum(store.approximate_num_entries() for store in self._local_stores())

    async def scan(
        self, from_key: Any = None, to_key: Any = None, *, chunk: int = 1000
    ) -> AsyncIterator[list[tuple[Any, Any]]]:
        """Like `range`, in lists of at most `chunk` entries, yielding to the event loop between them."""
        batch: list[tuple[Any, Any]] = []
        for entry in self.range(from_key, to_key):
            batch.append(entry)
            if len(batch) >= chunk:
                yield batch
                batch = []
                await asyncio.sleep(0)
        if batch:
            yield batch

    def _typed(self, iterators: Iterable[Iterator[tuple[bytes, bytes]]]) -> Iterator[tuple[Any, Any]]:
        kd, vd, name = self._key_serde.deserialize, self._value_serde.deserialize, self.name
        for iterator in iterators:
            for key, value in self._plain(iterator):
                yield kd(name, key), vd(name, value)

    def _plain(self, entries: Iterator[tuple[bytes, bytes]]) -> Iterator[tuple[bytes, bytes]]:
        """The stored entries with the values a query returns (a timestamped store's without their timestamp)."""
        if not self._timestamped:
            return entries
        return ((key, timestamped.value_of(value)) for key, value in entries)

    # ---- raw (bytes) API, also what tables read through outside agents -------------------------------------------

    def get_raw(self, key: bytes) -> bytes | None:
        result: bytes | None = self._store_for(key).get(key)
        if result is not None and self._timestamped:
            return timestamped.value_of(result)
        return result

    def raw_all(self) -> Iterator[tuple[bytes, bytes]]:
        """Every local `(key, value)` as bytes, partition after partition (what a table's items() reads in a page)."""
        for store in self._local_stores():
            yield from self._plain(store.all())

    def _store_for(self, store_key: bytes) -> Any:
        """The local store of the partition `store_key` routes to (raises when it is not here or not ready)."""
        self._check_available()
        routing = self._routing_key(store_key)
        partition = self._state.partition_for(self.name, routing)
        return self._local_store(TaskId(self._sub, partition), partition, routing)

    def _local_stores(self) -> list[Any]:
        """The store of every local RUNNING active task (in partition order); raises while any is not ready.

        Private: these are the tasks' own (writable) stores; the view only ever reads them.
        """
        self._check_available()
        found: dict[TaskId, Any] = {}
        for manager in self._tasks():
            for task_id, task in manager.active.items():
                if task_id.subtopology != self._sub:
                    continue
                self._check_task(task_id, task)
                found[task_id] = task.queryable_stores[self.name]
        missing = sorted(t for t in self._state.local_active_tasks(self._sub) if t not in found)
        if missing:  # assigned here but not open yet: a listing without them would look complete
            raise QueryUnavailableError(
                RESTORING, f"store {self.name!r}: tasks {', '.join(map(str, missing))} are being opened here"
            )
        return [found[t] for t in sorted(found)]

    def _check_available(self) -> None:
        if not self._running():
            raise QueryUnavailableError(NOT_RUNNING, "this client is not running (starting or shutting down)")
        if self._state.rebalancing():
            raise QueryUnavailableError(REBALANCING, "a rebalance is in progress; store partitions may be moving")

    def _check_task(self, task_id: TaskId, task: _Task) -> None:
        if task.state is TaskState.RESTORING:
            raise QueryUnavailableError(RESTORING, f"store {self.name!r}: task {task_id} is restoring its state")
        if task.state is not TaskState.RUNNING:
            raise QueryUnavailableError(
                REBALANCING, f"store {self.name!r}: task {task_id} is {task.state.value}, not RUNNING"
            )

    def _local_store(self, task_id: TaskId, partition: int, key: bytes) -> Any:
        standby = None
        for manager in self._tasks():
            task = manager.active.get(task_id)
            if task is not None:
                self._check_task(task_id, task)
                return task.queryable_stores[self.name]
            standby = standby or manager.standby.get(task_id)
        lagging = None
        if standby is not None and self._max_standby_lag is not None:
            try:
                return self._standby_store(task_id, standby)
            except QueryUnavailableError as exc:  # too far behind: the active task answers, if there is one
                lagging = exc
        owner = self._state.key_query_metadata(self.name, key).active_host
        if owner is None:
            if lagging is not None:
                raise lagging
            raise QueryUnavailableError(NO_OWNER, f"store {self.name!r}: no client owns partition {partition} yet")
        if owner == self._state.local_host:
            # assigned here but not open yet (another thread still holds its directory, or it is being created)
            raise QueryUnavailableError(RESTORING, f"store {self.name!r}: task {task_id} is being opened here")
        raise KeyNotLocalError(self.name, partition, owner)

    def _standby_store(self, task_id: TaskId, standby: _Standby) -> Any:
        manager = standby.state_manager
        tp = manager.changelog_partitions()[self.name]
        position = manager.changelog_offsets().get(tp, 0)
        end = None if self._standby_end_offset is None else self._standby_end_offset(tp)
        if end is None or end - position > (self._max_standby_lag or 0):
            lag = "unknown" if end is None else str(end - position)
            raise QueryUnavailableError(
                STANDBY_LAGGING,
                f"store {self.name!r}: standby {task_id} is {lag} records behind (max_standby_lag "
                f"{self._max_standby_lag})",
            )
        return manager.stores()[self.name]


def _same(key: bytes) -> bytes:
    return key
