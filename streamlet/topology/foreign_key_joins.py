"""Names of a foreign-key KTable-KTable join (Kafka Streams' `KTableImpl#doJoinOnForeignKey`).

Each name takes a counter value in Kafka's order, even when the join is named (`TableJoined.as(name)`,
`NamedInternal#suffixWithOrElseGet`): then names are `<name>-subscription-registration-processor`, ...
The graph wiring is in `streamlet.topology.builder`, the processors in `streamlet.runtime.foreign_key_join`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamlet.errors import TopologyError
from streamlet.topology.nodes import StreamPartitioner, validate_name

FK_JOIN = "KTABLE-FK-JOIN-"
SUBSCRIPTION_REGISTRATION = FK_JOIN + "SUBSCRIPTION-REGISTRATION-"
SUBSCRIPTION_RESPONSE = FK_JOIN + "SUBSCRIPTION-RESPONSE-"
SUBSCRIPTION_PROCESSOR = FK_JOIN + "SUBSCRIPTION-PROCESSOR-"
SUBSCRIPTION_STATE_STORE = FK_JOIN + "SUBSCRIPTION-STATE-STORE-"
RESPONSE_RESOLVER = FK_JOIN + "SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-"
OUTPUT = FK_JOIN + "OUTPUT-"
SINK = "KTABLE-SINK-"
SOURCE = "KTABLE-SOURCE-"
TOPIC_SUFFIX = "-topic"


@dataclass(frozen=True)
class ForeignKeyJoinNames:
    subscription_topic: str
    subscription_send: str
    subscription_sink: str
    subscription_source: str
    subscription_store: str
    subscription_receive: str
    subscription_join: str
    foreign_table_join: str
    response_topic: str
    response_sink: str
    response_source: str
    response_join: str
    result: str


def foreign_key_join_names(name: str | None, new_name: Callable[[str], str]) -> ForeignKeyJoinNames:
    """The names, in Kafka's order; `new_name(prefix)` takes the next counter value."""
    if name is not None:
        validate_name(name)

    def named(suffix: str, prefix: str) -> str:
        generated = new_name(prefix)
        return generated if name is None else validate_name(name + suffix)

    return ForeignKeyJoinNames(
        subscription_topic=named("-subscription-registration", SUBSCRIPTION_REGISTRATION) + TOPIC_SUFFIX,
        subscription_send=named("-subscription-registration-processor", SUBSCRIPTION_REGISTRATION),
        subscription_sink=named("-subscription-registration-sink", SINK),
        subscription_source=named("-subscription-registration-source", SOURCE),
        subscription_store=named("-subscription-store", SUBSCRIPTION_STATE_STORE),
        subscription_receive=named("-subscription-receive", SUBSCRIPTION_PROCESSOR),
        subscription_join=named("-subscription-join-foreign", SUBSCRIPTION_PROCESSOR),
        foreign_table_join=named("-foreign-join-subscription", SUBSCRIPTION_PROCESSOR),
        response_topic=named("-subscription-response", SUBSCRIPTION_RESPONSE) + TOPIC_SUFFIX,
        response_sink=named("-subscription-response-sink", SINK),
        response_source=named("-subscription-response-source", SOURCE),
        response_join=named("-subscription-response-resolver", RESPONSE_RESOLVER),
        result=named("-result", OUTPUT),
    )


def key_value_extractor(extractor: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    """`extractor(value)` (Kafka's `Function<V, KO>`) or `extractor(key, value)` (KIP-1104's
    `BiFunction<K, V, KO>`), told apart by how many positional arguments it takes, as `(key, value) -> fk`."""
    try:
        parameters = inspect.signature(extractor).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: a function of the value
        parameters = None
    if parameters is not None:
        positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        required = [p for p in positional if p.default is p.empty]
        if any(p.kind == p.VAR_POSITIONAL for p in parameters) or len(required) == 2:
            return extractor
        if len(required) > 2 or (not required and not positional):
            raise TopologyError(
                f"foreign_key_extractor must take (value) or (key, value), got {extractor!r} with "
                f"{len(required)} required arguments"
            )

    def of_value(key: Any, value: Any) -> Any:
        return extractor(value)

    return of_value


def key_partitioner(partitioner: StreamPartitioner | None) -> StreamPartitioner | None:
    """A `TableJoined` partitioner as a subscription / response sink calls it: with no value, as Kafka's
    `doJoinOnForeignKey` calls `partitioner.partitions(topic, key, null, numPartitions)` (a placement that
    depends on the value could not be co-partitioned with the table)."""
    if partitioner is None:
        return None

    def by_key(topic: str, key: Any, value: Any, num_partitions: int) -> int | None:
        return partitioner(topic, key, None, num_partitions)

    return by_key
