"""What the session and sliding-window aggregation nodes share: the three DSL aggregations as one shape,
`initial()`, `update(key, value, aggregate)` and the serde of the aggregate; plus, for sessions,
`merge(key, aggregate, other)` (Kafka's `Merger`).

Kafka Streams turns `count` and `reduce` into an aggregate the same way (`KGroupedStreamImpl`'s count
initializer and aggregator, `aggregatorForReducer`, `mergerForAggregator`), which is what lets one windowed
processor serve all three.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from streamlet.runtime.dropped_records import DroppedRecords
from streamlet.runtime.record_context import RecordContext
from streamlet.topology import nodes as n
from streamlet.topology.nodes import AggregateSpec, StoreSpec

_INT64 = struct.Struct(">q")


class Graph(Protocol):
    """What a windowed aggregation needs of its task's graph: the record context and the dropped-records sensor."""

    record: RecordContext
    dropped: DroppedRecords


@dataclass(frozen=True, slots=True)
class AggregateFunctions:
    initial: Callable[[], Any]
    update: Callable[[Any, Any, Any], Any]  # (key, value, aggregate) -> aggregate
    merge: Callable[[Any, Any, Any], Any]  # (key, aggregate, other) -> aggregate
    encode: Callable[[Any], bytes | None]
    decode: Callable[[bytes], Any]


def _unpack_long(raw: bytes) -> Any:
    return _INT64.unpack(raw)[0]


def aggregate_functions(spec: AggregateSpec, store_spec: StoreSpec, topic: str) -> AggregateFunctions:
    """The functions of a count/reduce/aggregate node, with its store's value serde (called with `topic`)."""
    if spec.op == n.COUNT:
        return AggregateFunctions(
            initial=lambda: 0,
            update=lambda key, value, aggregate: aggregate + 1,
            merge=lambda key, aggregate, other: aggregate + other,
            encode=_INT64.pack,
            decode=_unpack_long,
        )
    value_ser = store_spec.value_serde.serialize
    value_de = store_spec.value_serde.deserialize

    def encode(obj: Any) -> bytes | None:
        return value_ser(topic, obj)

    def decode(raw: bytes) -> Any:
        return value_de(topic, raw)

    fn: Any = spec.fn
    if spec.op == n.REDUCE:

        def reduce(key: Any, value: Any, aggregate: Any) -> Any:
            return value if aggregate is None else fn(aggregate, value)

        return AggregateFunctions(
            initial=lambda: None,
            update=reduce,
            merge=lambda key, aggregate, other: reduce(key, other, aggregate),
            encode=encode,
            decode=decode,
        )
    initializer: Any = spec.initializer
    merger: Any = spec.merger
    return AggregateFunctions(initial=initializer, update=fn, merge=merger, encode=encode, decode=decode)
