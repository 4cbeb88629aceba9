"""RecordCollector: the bridge from synchronous processors to the asynchronous producer.

Processors run synchronously per record (no await per record keeps the hot path cheap), so sinks and
changelog writes are queued here and handed to aiokafka in bulk between batches. `flush()` waits for
every acknowledgement and returns, per changelog partition, the offset of the last record written:
exactly what a checkpoint may claim, since a checkpoint must never run ahead of the changelog.

A record larger than the producer may send is refused at `send()`, synchronously, while the task still
knows which input record produced it; that is what lets the production exception handler name the input
and skip it. aiokafka would otherwise fail the whole batch later, taking the records beside it along.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka import errors as aiokafka_errors
from aiokafka.producer.transaction_manager import TransactionManager, TransactionState
from aiokafka.structs import OffsetAndMetadata, RecordMetadata, TopicPartition

from streamlet.errors import MissingTopicError, StreamletError
from streamlet.kafka import produce_batches
from streamlet.kafka.aiokafka_internals import require
from streamlet.kafka.freeze_gate import refuse_batches_from_before_a_freeze
from streamlet.kafka.produce_batches import Queued as _Queued
from streamlet.kafka.txn_offset_commit import GroupMetadata, set_group_metadata
from streamlet.runtime.partitioner import CachingDefaultPartitioner, DeferredPartition

_Headers = Sequence[tuple[str, bytes]]


def _append(batch: Any, key: bytes | None, value: bytes | None, timestamp: int | None, headers: _Headers) -> Any:
    """Append one record to an aiokafka batch (None: the batch is full); headers only where there are any."""
    if headers:
        return batch.append(key=key, value=value, timestamp=timestamp, headers=list(headers))
    return batch.append(key=key, value=value, timestamp=timestamp)


#: The producer's default `max_request_size`, less room for the batch and record headers.
MAX_RECORD_BYTES = 1_048_576 - 1_024


class ProductionError(StreamletError):
    """A record could not be written to Kafka; the task stops rather than lose it."""


def _choose(choose: DeferredPartition, topic: str, num_partitions: int) -> int | None:
    """A sink's `StreamPartitioner` choice; one that fails or is out of range stops the task (as the Java
    producer refuses an invalid partition)."""
    user_function: Callable[[int], object] = choose  # it may return anything: checked here, not by mypyc's cast
    try:
        partition = user_function(num_partitions)
    except Exception as exc:
        error = ProductionError(f"the partitioner of a record for topic {topic} failed: {exc!r}")
        error.__cause__ = exc  # mypyc ignores `raise ... from exc`
        raise error  # noqa: B904 (its cause is set)
    if partition is None:
        return None
    if not isinstance(partition, int) or isinstance(partition, bool) or not 0 <= partition < num_partitions:
        raise ProductionError(
            f"the partitioner of a record for topic {topic} returned {partition!r}, not a partition in "
            f"[0, {num_partitions - 1}]"
        )
    return partition


class RetriableProductionError(ProductionError):
    """A send failed with an error Kafka calls retriable (a request or delivery timeout, too few in-sync
    replicas, a leader that moved): the broker was slower or further away than the producer retries for, e.g.
    while this process was paused. The records may be partly written; the tasks are not broken. Kafka Streams
    turns it into TaskCorruptedException: close the tasks dirty, redo their input from the last commit, and
    go on, never stop the thread."""


class TransactionFencedError(ProductionError):
    """Exactly-once: the producer's transaction is gone (it timed out, a newer producer with the same
    transactional id fenced this one, or the producer failed). Nothing of it will commit: the tasks must be
    treated as migrated, as Kafka Streams turns ProducerFencedException into TaskMigratedException."""


#: Send errors that mean the transaction was aborted under the producer (Kafka Streams' list).
_FENCED = (
    aiokafka_errors.ProducerFenced,
    aiokafka_errors.InvalidProducerEpoch,
    aiokafka_errors.InvalidProducerIdMapping,
    aiokafka_errors.OutOfOrderSequenceNumber,
)


class RecordTooLargeError(StreamletError):
    """A record is larger than the producer may send (what Kafka calls RecordTooLargeException)."""


class RecordCollector:
    """Queues records for one producer and tracks changelog acknowledgements."""

    def __init__(
        self,
        producer: AIOKafkaProducer,
        changelog_topics: Iterable[str] = (),
        max_record_bytes: int = MAX_RECORD_BYTES,
        *,
        transactional: bool = False,
        producer_factory: Callable[[], AIOKafkaProducer] | None = None,
        missing_topic_timeout_s: float = 5.0,
        froze_after: Callable[[float], bool] | None = None,
    ) -> None:
        self._missing_topic_timeout_s = missing_topic_timeout_s
        # at-least-once: nothing computed before a freeze is sent after it (kafka/freeze_gate.py); exactly-once
        # needs no gate, the broker fences the zombie's transaction
        self._froze_after = None if transactional else froze_after
        if self._froze_after is not None:
            refuse_batches_from_before_a_freeze(producer, self._froze_after)
        self._producer = producer
        self._producer_factory = producer_factory
        self._transactional = transactional
        self._in_transaction = False
        self._changelog_topics = set(changelog_topics)
        self._max_record_bytes = max_record_bytes
        self._queue: list[tuple[str, bytes | None, bytes | None, int | DeferredPartition | None, int | None, _Headers]]
        self._queue = []
        self._dead_letters: list[tuple[str, bytes | None, bytes | None, int | None, Sequence[tuple[str, bytes]]]] = []
        # Only the last batch per changelog partition is kept (with its record count): batches of a partition
        # are written in order, so it ends at the highest offset. Every batch's errors reach a done-callback.
        self._last_changelog_send: dict[tuple[str, int], tuple[asyncio.Future[RecordMetadata], int]] = {}
        self._partitions: dict[str, list[int]] = {}
        self._partitioner = CachingDefaultPartitioner()
        self._failure: BaseException | None = None

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int | None = None,
        partition: int | DeferredPartition | None = None,
        headers: Sequence[tuple[str, bytes]] | None = None,
    ) -> None:
        """Queue one record (called from processors, synchronously); refuse one that is too large to send.

        `partition` None is the default partitioner's choice; a `DeferredPartition` is called with the topic's
        partition count when the records are handed to the producer (that count needs the producer's metadata).

        `headers` are rare (a suppression buffer's changelog format version), so records without any cost
        nothing extra."""
        size = (len(key) if key else 0) + (len(value) if value else 0)
        if size > self._max_record_bytes:
            raise RecordTooLargeError(
                f"a {size:,}-byte record for topic {topic} exceeds the {self._max_record_bytes:,} bytes the "
                "producer may send"
            )
        self._queue.append((topic, key, value, partition, timestamp, headers or ()))

    def send_dead_letter(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int | None,
        headers: Sequence[tuple[str, bytes]],
    ) -> None:
        """Queue a raw input record for the dead-letter topic; if even it is too large, only its headers go
        (with an empty value: Kafka refuses a record with neither key nor value)."""
        size = (len(key) if key else 0) + (len(value) if value else 0)
        if size > self._max_record_bytes:
            key, value = None, b""
        self._dead_letters.append((topic, key, value, timestamp, headers))

    def _on_done(self, topic: str, partition: int, count: int, future: asyncio.Future[RecordMetadata]) -> None:
        exc = None if future.cancelled() else future.exception()
        if self._failure is None and exc is not None:
            where = topic if partition < 0 else f"{topic}-{partition}"
            if isinstance(exc, aiokafka_errors.InvalidTxnState):  # say what broke the transaction, not the symptom
                exc = _transaction_error(self.producer) or exc
            message = f"writing {count} record(s) to {where} failed: {exc!r}"
            if self._transactional and isinstance(exc, _FENCED):
                self._failure = TransactionFencedError(message)
                self._failure.__cause__ = exc
            else:
                self._failure = _production_error(message, exc)

    async def drain(self) -> None:
        """Hand every queued record to the producer as per-partition batches.

        One `BatchBuilder` per partition instead of one `send()` per record: aiokafka otherwise creates a
        future, a callback and a metadata lookup for every record, the largest costs of the hot path.
        Order within a partition is preserved (aiokafka keeps batches of a partition in order). Under
        exactly-once, a producer that refuses the records (its transaction was fenced or failed) raises
        `TransactionFencedError`: the records' transaction cannot commit any more.
        """
        if not self._transactional:
            await self._drain()
            return
        try:
            await self._drain()
        except (aiokafka_errors.KafkaError, aiokafka_errors.IllegalOperation) as exc:
            # IllegalOperation ("not in transaction", not a KafkaError): the sender learnt the producer was fenced
            # and left the transaction in its fatal state; the error that did it is the one to report
            cause = _transaction_error(self._producer) or exc
            fenced = TransactionFencedError(f"the producer refused this transaction's records: {cause!r}")
            fenced.__cause__ = cause  # mypyc ignores `raise ... from exc`
            raise fenced  # noqa: B904 (its cause is set)

    async def _drain(self) -> None:
        if self._transactional and (self._queue or self._dead_letters):
            await self._begin_transaction()
        if self._dead_letters:
            letters, self._dead_letters = self._dead_letters, []
            for topic, key, value, timestamp, headers in letters:
                future = await self._producer.send(
                    topic, value=value, key=key, timestamp_ms=timestamp, headers=list(headers)
                )
                future.add_done_callback(functools.partial(self._on_done, topic, -1, 1))
        if not self._queue:
            return
        began = time.monotonic()
        queue, self._queue = self._queue, []
        groups: dict[tuple[str, int], list[_Queued]] = {}
        partitioner = self._partitioner
        for topic, key, value, chosen, timestamp, headers in queue:
            if isinstance(chosen, int):
                partition = chosen
            else:
                partitions = self._partitions.get(topic) or await self._topic_partitions(topic)
                partition_or_none = None if chosen is None else _choose(chosen, topic, len(partitions))
                partition = partitioner(key, partitions, partitions) if partition_or_none is None else partition_or_none
            group = groups.get((topic, partition))
            if group is None:
                group = groups[(topic, partition)] = []
            group.append((key, value, timestamp, headers))
        for (topic, partition), records in groups.items():
            if self._froze_after is not None and self._froze_after(began):  # frozen in an await of this loop
                if self._failure is None:
                    self._failure = RetriableProductionError(
                        "this process froze for longer than the session timeout while it handed records to the "
                        "producer: the rest were not sent"
                    )
                return
            if topic not in self._partitions and topic not in self._changelog_topics:
                await self._topic_partitions(topic)  # a topic first written now: it must exist
            await self._send_records(topic, partition, records)

    async def _topic_partitions(self, topic: str) -> list[int]:
        """The topic's partitions, or `MissingTopicError` after `missing_topic_timeout_s`.

        Topics the topology names are checked at start-up; this catches the ones known only when a record is
        sent (a processor's `context.send` to a computed topic, a topic an agent reaches indirectly). Left to
        the producer, a missing topic means metadata requests until its request timeout, an error logged for
        each, then an error that a transactional thread takes for a fenced producer: it closes its tasks,
        rejoins and meets the same topic again, forever. A shorter bound makes it one clear, fatal error.
        """
        try:
            found = await asyncio.wait_for(self._producer.partitions_for(topic), self._missing_topic_timeout_s)
        except (TimeoutError, aiokafka_errors.UnknownTopicOrPartitionError):
            missing = MissingTopicError(
                f"topic {topic} does not exist, and a task writes a record to it. Create it (`streamlet topics "
                f"create {topic} --partitions N`); streamlet creates only its internal topics"
            )
            missing.__cause__ = None  # mypyc ignores `raise ... from None`
            raise missing  # noqa: B904 (its cause is set)
        partitions = self._partitions[topic] = sorted(found)
        return partitions

    async def _send_records(self, topic: str, partition: int, records: list[_Queued]) -> None:
        producer = self._producer
        native = produce_batches.native_batches_for(producer)
        if native is not None:  # the same batches, encoded in C (streamlet.kafka.produce_batches)
            batch_size, transactional = native
            for encoded in produce_batches.encode(records, batch_size, transactional):
                await self._submit(encoded, topic, partition)
            return
        batch = producer.create_batch()
        for key, value, timestamp, headers in records:
            if _append(batch, key, value, timestamp, headers) is not None:
                continue
            if batch.record_count():
                await self._submit(batch, topic, partition)
                batch = producer.create_batch()
                if _append(batch, key, value, timestamp, headers) is not None:
                    continue
            # larger than a whole batch: the producer's own send() sizes a batch for it
            future = await producer.send(
                topic, value=value, key=key, partition=partition, timestamp_ms=timestamp, headers=list(headers)
            )
            self._track(future, topic, partition, 1)
        if batch.record_count():
            await self._submit(batch, topic, partition)

    async def _submit(self, batch: Any, topic: str, partition: int) -> None:
        count = batch.record_count()
        batch.close()
        future = await self._producer.send_batch(batch, topic, partition=partition)
        self._track(future, topic, partition, count)

    def _track(self, future: asyncio.Future[RecordMetadata], topic: str, partition: int, count: int) -> None:
        future.add_done_callback(functools.partial(self._on_done, topic, partition, count))
        if topic in self._changelog_topics:
            self._last_changelog_send[(topic, partition)] = (future, count)

    def discard(self) -> None:
        """Drop records not yet handed to the producer (their tasks were lost: nothing of them may be written),
        and forget how the ones handed over fared."""
        self._queue = []
        self._dead_letters = []
        self._last_changelog_send = {}
        self._failure = None

    async def commit_transaction(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], group_id: str, group: GroupMetadata | None = None
    ) -> dict[TopicPartition, int]:
        """Exactly-once: what was sent since the last commit, plus the input `offsets`, as one transaction.

        `group` is the consumer's group metadata: the offsets commit only if the member is still current
        (KIP-447). Returns the last offset written per changelog partition, as `flush()` does.
        """
        acked = await self.flush()
        if offsets:
            await self._begin_transaction()
            set_group_metadata(self._producer, group)
            await self._producer.send_offsets_to_transaction(dict(offsets), group_id)
        if self._in_transaction:
            self._in_transaction = False  # whatever happens next, this transaction is over
            await self._producer.commit_transaction()
        return acked

    async def start(self, transactional_id: str | None = None, max_block_ms: int = 60_000) -> None:
        """Start the producer. Exactly-once (`transactional_id`): starting includes the transaction
        coordinator's InitProducerId (Java's `initTransactions()`, which fences any earlier producer with
        that id), bounded by `max_block_ms`: aiokafka retries it forever, so against a broker without a
        transaction coordinator the worker would hang instead of saying why."""
        if transactional_id is None:
            await self._producer.start()
            return
        try:
            await asyncio.wait_for(self._producer.start(), max_block_ms / 1000)
        except TimeoutError:
            await self._producer.stop()
            error = StreamletError(
                f"exactly_once_v2 needs transactions, but no transaction coordinator answered for transactional "
                f"id {transactional_id!r} within max_block_ms={max_block_ms}. Check that the brokers run the "
                "transaction state log (transaction.state.log.replication.factor and min.isr no larger than "
                "the brokers available), or use processing_guarantee=at_least_once."
            )
            error.__cause__ = None  # mypyc ignores `raise ... from None`
            raise error  # noqa: B904 (its cause is set)

    async def _begin_transaction(self) -> None:
        if not self._in_transaction:
            if self._producer_factory is not None and not _ready_for_a_transaction(self._producer):
                # the last commit failed for good (fenced, or the coordinator's fatal answer mid-failover): aiokafka
                # refuses any new transaction from that state (an AssertionError that would kill the thread), so,
                # as Kafka Streams resets its thread producer, a new one with the same transactional id takes over
                await self._replace_producer()
            await self._producer.begin_transaction()
            self._in_transaction = True

    async def _replace_producer(self) -> None:
        """A new producer with the same transactional id: it fences the old one and aborts what it left open."""
        assert self._producer_factory is not None
        await self._producer.stop()
        self._producer = self._producer_factory()
        await self._producer.start()

    async def abort_transaction(self) -> None:
        """Exactly-once: drop what is queued and abort what was sent since the last commit."""
        self.discard()
        if not self._in_transaction:
            return
        self._in_transaction = False
        try:
            await self._producer.abort_transaction()
        except Exception:
            if self._producer_factory is None:
                raise
            await self._replace_producer()  # fenced or failed for good

    @property
    def producer(self) -> AIOKafkaProducer:
        return self._producer

    async def flush(self) -> dict[TopicPartition, int]:
        """Send everything queued, wait for all acks, return the last acked offset per changelog partition."""
        await self.drain()
        await self._producer.flush()
        if self._failure is not None:
            failure, self._failure = self._failure, None
            self._last_changelog_send = {}
            raise failure
        changelog, self._last_changelog_send = self._last_changelog_send, {}
        last: dict[TopicPartition, int] = {}
        for future, count in changelog.values():
            meta = _raise_if_failed(future)  # a batch's metadata carries its base offset
            last[TopicPartition(meta.topic, meta.partition)] = meta.offset + count - 1
        return last


def _raise_if_failed(future: asyncio.Future[RecordMetadata]) -> RecordMetadata:
    if not future.done():
        raise ProductionError("a produced record was not acknowledged after the producer flush")
    exc = future.exception()
    if exc is not None:
        raise _production_error(f"producing a record failed: {exc!r}", exc)
    return future.result()


def _production_error(message: str, exc: BaseException) -> ProductionError:
    """The error a failed send stops the tasks with: retriable (Java's RetriableException, and a batch that
    expired) or not. Its cause is `exc` (mypyc ignores `raise ... from exc`)."""
    retriable = isinstance(exc, aiokafka_errors.KafkaTimeoutError) or getattr(exc, "retriable", False) is True
    error = RetriableProductionError(message) if retriable else ProductionError(message)
    error.__cause__ = exc
    return error


require(
    "naming what failed a transaction",
    [
        (AIOKafkaProducer.__init__, ("self._txn_manager",)),
        (TransactionManager.error_transaction, ("_transaction_waiter",)),
    ],
)
require("replacing a producer whose transaction failed", [(TransactionManager._transition_to, ("self.state",))])


def _ready_for_a_transaction(producer: AIOKafkaProducer) -> bool:
    """False when the producer's last transaction ended in an error state (or never ended: a commit or abort that
    raised midway), from which aiokafka begins no new one; a producer still waiting for its id is ready."""
    manager = getattr(producer, "_txn_manager", None)
    return manager is None or manager.state in (TransactionState.UNINITIALIZED, TransactionState.READY)


def _transaction_error(producer: AIOKafkaProducer) -> BaseException | None:
    """The error that moved the producer's transaction to its error state (e.g. a sink topic the user may not
    write); aiokafka reports every send that follows only as InvalidTxnState."""
    manager = getattr(producer, "_txn_manager", None)
    waiter = getattr(manager, "_transaction_waiter", None)
    if waiter is None or not waiter.done() or waiter.cancelled():
        return None
    error: BaseException | None = waiter.exception()
    return error
