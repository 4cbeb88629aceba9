"""The processors of a foreign-key KTable-KTable join (KIP-213), as Kafka Streams 4.1's
`kstream.internals.foreignkeyjoin` package runs them.

Left side, task of the primary key: `SubscriptionSendProcessorSupplier` turns each left update into
subscriptions keyed by foreign key (with the Murmur3 hash of the new left value and the task's partition);
a changed foreign key first unsubscribes from the old one. They go through the subscription topic to the
foreign side, co-partitioned with the foreign table: `SubscriptionReceiveProcessorSupplier` keeps them in
the subscription store (foreign key + primary key), `SubscriptionJoinProcessorSupplier` answers each with
the foreign table's current value, and `ForeignTableJoinProcessorSupplier` answers every subscriber of a
foreign key when its foreign row changes. Responses go back through the response topic to the primary key's
partition, where `ResponseJoinProcessorSupplier` joins them with the current left value, unless that value
changed since (its hash differs): then a newer response is on its way and this one is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

from streamlet.errors import StreamletError
from streamlet.murmur3 import hash128
from streamlet.runtime.dropped_records import STALE, DroppedRecords
from streamlet.runtime.failing_node import raised_in
from streamlet.runtime.forwarding import Forward
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.table_table_join import Getter, forward_at
from streamlet.runtime.topic_names import TopicNames
from streamlet.state import timestamped
from streamlet.task_id import TaskId
from streamlet.topology import nodes as n
from streamlet.topology.change import Change
from streamlet.topology.nodes import ForeignKeyJoinNodeSpec, ForeignKeyJoinSpec
from streamlet.topology.subscription_wrappers import (
    RESPONSE_VERSION,
    SUBSCRIPTION_VERSION,
    Instruction,
    SubscriptionResponseWrapper,
    SubscriptionWrapper,
    combined_key,
    combined_key_prefix,
    decode_subscription,
    encode_subscription,
    split_combined_key,
)


class TaskContext(Protocol):
    """What these processors need of the task: its subscription store."""

    def get_state_store(self, name: str) -> Any: ...


class TaskProcessorGraph(Protocol):
    """What they need of the task's graph: its task, the record context and the drop count."""

    task_id: TaskId
    record: RecordContext
    dropped: DroppedRecords


_DELETES = (Instruction.DELETE_KEY_AND_PROPAGATE, Instruction.DELETE_KEY_NO_PROPAGATE)


class UnsupportedVersionError(StreamletError):
    """A subscription or response written by a newer version than this one reads."""


def build(
    spec: ForeignKeyJoinNodeSpec,
    forward: Forward,
    names: TopicNames,
    context: TaskContext,
    graph: TaskProcessorGraph,
    get: Getter | None,
) -> Forward:
    """The processor of one of `nodes.FK_JOIN_OPS`; `get` reads the table of its value getter, if it has one."""
    fk = spec.foreign_key_join
    assert fk is not None
    topic = names.topic(fk.subscription_topic)  # Kafka's decorated pseudo-topics hang off it
    if spec.op == n.FK_SUBSCRIPTION_SEND:
        return _subscription_send(spec, fk, topic, forward, graph)
    if spec.op == n.FK_SUBSCRIPTION_RECEIVE:
        return _subscription_receive(spec, fk, topic, forward, context, graph)
    if spec.op == n.FK_FOREIGN_TABLE_JOIN:
        return _foreign_table_join(spec, fk, topic, forward, context, graph)
    assert get is not None
    if spec.op == n.FK_SUBSCRIPTION_JOIN:
        return _subscription_join(spec, forward, get, graph)
    return _response_join(spec, fk, topic, forward, get, graph)


def _subscription_send(
    spec: ForeignKeyJoinNodeSpec, fk: ForeignKeyJoinSpec, topic: str, forward: Forward, graph: TaskProcessorGraph
) -> Forward:
    extract = cast(Callable[[Any, Any], Any], spec.fn)
    fk_ser, value_ser = fk.foreign_key_serde.serialize, fk.value_serde.serialize
    fk_topic, value_topic = topic + "-fk", topic + "-vh"
    partition = graph.task_id.partition  # the record's, also when a cache flush forwards it
    left_join = fk.left_join

    def subscription_send(key: Any, change: Change, _node: str = spec.name) -> None:
        try:
            new, old = change.new, change.old
            hash_ = None if new is None else hash128(value_ser(value_topic, new) or b"")

            def send(foreign_key: Any, instruction: Instruction) -> None:
                forward(foreign_key, SubscriptionWrapper(hash_, instruction, key, partition))

            if old is not None:
                old_fk = extract(key, old)
                new_fk = None if new is None else extract(key, new)
                changed = fk_ser(fk_topic, new_fk) != fk_ser(fk_topic, old_fk)
                if left_join:
                    if old_fk is not None and changed:
                        send(old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
                    send(new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
                elif old_fk is None and new_fk is None:
                    graph.dropped.null_key_or_value(_node, graph.record)
                elif old_fk is None:
                    send(new_fk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
                elif new_fk is None:
                    send(old_fk, Instruction.DELETE_KEY_AND_PROPAGATE)
                elif changed:
                    send(old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
                    send(new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
                else:
                    send(new_fk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
            elif new is not None:
                new_fk = extract(key, new)
                if left_join:
                    send(new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
                elif new_fk is None:
                    graph.dropped.null_key_or_value(_node, graph.record)
                else:
                    send(new_fk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return subscription_send


def _subscription_receive(
    spec: ForeignKeyJoinNodeSpec,
    fk: ForeignKeyJoinSpec,
    topic: str,
    forward: Forward,
    context: TaskContext,
    graph: TaskProcessorGraph,
) -> Forward:
    """Forwards `(foreign key, primary key), (subscription, timestamp)` after storing (or deleting) it."""
    store = context.get_state_store(fk.subscription_store)
    fk_ser, pk_ser = fk.foreign_key_serde.serialize, fk.primary_key_serde.serialize
    fk_topic, pk_topic = topic + "-fk", topic + "-pk"
    record = graph.record

    def subscription_receive(foreign_key: Any, wrapper: SubscriptionWrapper, _node: str = spec.name) -> None:
        try:
            if foreign_key is None and wrapper.instruction != Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
                graph.dropped.null_key_or_value(_node, graph.record)
                return
            if wrapper.version > SUBSCRIPTION_VERSION:
                raise UnsupportedVersionError("SubscriptionWrapper is of an incompatible version.")
            if foreign_key is not None:
                pk = pk_ser(pk_topic, wrapper.primary_key) or b""
                key = combined_key(fk_ser(fk_topic, foreign_key) or b"", pk)
                if wrapper.instruction in _DELETES:
                    store.delete(key)
                else:
                    store.put(key, timestamped.encode(record.timestamp, encode_subscription(wrapper, pk)))
            forward((foreign_key, wrapper.primary_key), (wrapper, record.timestamp))
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return subscription_receive


def _subscription_join(
    spec: ForeignKeyJoinNodeSpec, forward: Forward, get: Getter, graph: TaskProcessorGraph
) -> Forward:
    record = graph.record

    def subscription_join(key: tuple[Any, Any], value: tuple[SubscriptionWrapper, int], _node: str = spec.name) -> None:
        try:
            foreign_key, primary_key = key
            wrapper, timestamp = value
            found = None if foreign_key is None else get(foreign_key)
            instruction = wrapper.instruction
            if instruction == Instruction.DELETE_KEY_NO_PROPAGATE:
                return
            if instruction == Instruction.DELETE_KEY_AND_PROPAGATE:
                foreign_value = None
            elif found is not None:
                foreign_value = found[0]
            elif instruction == Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
                foreign_value = None
            else:
                return
            response = SubscriptionResponseWrapper(wrapper.hash, foreign_value, wrapper.primary_partition)
            forward_at(record, forward, primary_key, response, timestamp if found is None else max(timestamp, found[1]))
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return subscription_join


def _foreign_table_join(
    spec: ForeignKeyJoinNodeSpec,
    fk: ForeignKeyJoinSpec,
    topic: str,
    forward: Forward,
    context: TaskContext,
    graph: TaskProcessorGraph,
) -> Forward:
    """A foreign update answers every subscription to its key (a prefix scan of the subscription store)."""
    store = context.get_state_store(fk.subscription_store)
    fk_ser, pk_de = fk.foreign_key_serde.serialize, fk.primary_key_serde.deserialize
    fk_topic, pk_topic = topic + "-fk", topic + "-pk"

    def foreign_table_join(foreign_key: Any, change: Change, _node: str = spec.name) -> None:
        try:
            if foreign_key is None:
                graph.dropped.null_key_or_value(_node, graph.record)
                return
            prefix = combined_key_prefix(fk_ser(fk_topic, foreign_key) or b"")
            for key, raw in store.range(prefix, _increment(prefix)):
                if not key.startswith(prefix):
                    continue
                hash_, _, _, partition, _ = decode_subscription(timestamped.value_of(raw))
                primary_key = pk_de(pk_topic, split_combined_key(key)[1])
                forward(primary_key, SubscriptionResponseWrapper(hash_, change.new, partition))
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return foreign_table_join


def _response_join(
    spec: ForeignKeyJoinNodeSpec,
    fk: ForeignKeyJoinSpec,
    topic: str,
    forward: Forward,
    get: Getter,
    graph: TaskProcessorGraph,
) -> Forward:
    joiner = cast(Callable[[Any, Any], Any], spec.fn)
    value_ser = fk.value_serde.serialize
    value_topic = topic + "-vh"
    left_join = fk.left_join

    def response_join(key: Any, response: SubscriptionResponseWrapper, _node: str = spec.name) -> None:
        try:
            if response.version != RESPONSE_VERSION:
                raise UnsupportedVersionError("SubscriptionResponseWrapper is of an incompatible version.")
            found = get(key)
            current = None if found is None else hash128(value_ser(value_topic, found[0]) or b"")
            if response.original_value_hash != current:
                graph.dropped.record(_node, STALE)  # the left value changed since: a newer response will follow
                return
            foreign_value = response.foreign_value
            if foreign_value is None and (not left_join or found is None):
                forward(key, None)
            else:
                forward(key, joiner(None if found is None else found[0], foreign_value))
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return response_join


def _increment(prefix: bytes) -> bytes | None:
    """`Bytes.increment`: the smallest key after every key starting with `prefix` (None: no bound)."""
    stripped = prefix.rstrip(b"\xff")
    return None if not stripped else stripped[:-1] + bytes((stripped[-1] + 1,))
