"""A state store as a processor node uses it: the store, its spec, and its serdes bound to the topic they are
called with.

Kafka Streams' stores serialize keys and values with the store's changelog topic as the serdes' topic (also
when the store is not logged), so every node that reads or writes a store needs the same five things; this is
where they are looked up once, when the node is built. Nodes copy the fields they use into locals: the
per-record path then reads no attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, cast

from streamlet.runtime.topic_names import TopicNames
from streamlet.topology.nodes import StoreSpec

__all__ = ["StoreAccess", "store_access"]


class _Stores(Protocol):
    def get_state_store(self, name: str) -> Any: ...


class StoreAccess(NamedTuple):
    name: str
    spec: StoreSpec
    store: Any  # the task's outermost store (None if not asked for)
    topic: str  # the topic the serdes are called with
    # a store's keys are never null (nodes skip null keys), so a key always serializes to bytes
    key_ser: Callable[[str, Any], bytes]
    key_de: Callable[[str, bytes | None], Any]
    value_ser: Callable[[str, Any], bytes | None]
    value_de: Callable[[str, bytes | None], Any]


def store_access(
    names: TopicNames, name: str, context: _Stores | None = None, *, store: Any = None, topic: str | None = None
) -> StoreAccess:
    """The store `name`: taken from `context` (or the `store` given), with its serdes for `topic` (by default
    the store's serde topic, i.e. its changelog)."""
    spec = names.topology.stores[name]
    if context is not None:
        store = context.get_state_store(name)
    return StoreAccess(
        name,
        spec,
        store,
        names.serde_topic(name) if topic is None else topic,
        cast(Callable[[str, Any], bytes], spec.key_serde.serialize),
        spec.key_serde.deserialize,
        spec.value_serde.serialize,
        spec.value_serde.deserialize,
    )
