"""KStream-KStream joins of the DSL: names, stores and wiring (Kafka Streams' `KStreamImplJoin`).

A join of `this` and `other` is five processors: each stream feeds a `KSTREAM-WINDOWED-` node that forwards
its record and then keeps it in its side's window store; a `KSTREAM-JOINTHIS-` (or `-OUTERTHIS-`) node joins
this stream's records with the other side's store, a `KSTREAM-JOINOTHER-` (`-OUTEROTHER-`) node the other way
round, and a `KSTREAM-MERGE-` node passes both results on. A left or outer join adds a key-value store shared
by both sides (`KSTREAM-OUTERSHARED-<n>-store`) where unmatched records wait until their window closes.

Names take counter values exactly as Kafka's do: both windowed names, both generated join names (always,
even when the join is named), then the merge name; stores are named after the generated join names, or after
`StreamJoined.store_name`. The graph wiring is `stream_stream_join` below; the processors are
in `streamlet.runtime.stream_join`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamlet.errors import TopologyError
from streamlet.serdes import BytesSerde, Serde
from streamlet.topology import nodes as n
from streamlet.topology import optimizer
from streamlet.topology.branch import MERGE_NAME
from streamlet.topology.dsl_graph import (
    GraphNode,
    InternalTopologyBuilder,
    StreamHandle,
    first_serde,
    or_default,
    require_callable,
)
from streamlet.topology.join_windows import JoinWindows, StreamJoined
from streamlet.topology.kgrouped_stream import repartition_for_join
from streamlet.topology.nodes import StoreSpec, StreamStreamJoinSpec, validate_name

WINDOWED_NAME = "KSTREAM-WINDOWED-"
JOINTHIS_NAME = "KSTREAM-JOINTHIS-"
JOINOTHER_NAME = "KSTREAM-JOINOTHER-"
OUTERTHIS_NAME = "KSTREAM-OUTERTHIS-"
OUTEROTHER_NAME = "KSTREAM-OUTEROTHER-"
OUTERSHARED_NAME = "KSTREAM-OUTERSHARED-"
STORE_SUFFIX = "-store"


@dataclass(frozen=True)
class JoinNames:
    """The processors and stores of one stream-stream join."""

    this_windowed: str
    other_windowed: str
    join_this: str
    join_other: str
    merge: str
    this_store: str
    other_store: str
    outer_store: str | None  # left and outer joins only

    @property
    def processors(self) -> tuple[str, ...]:
        return (self.this_windowed, self.other_windowed, self.join_this, self.join_other, self.merge)

    @property
    def stores(self) -> tuple[str, ...]:
        outer = () if self.outer_store is None else (self.outer_store,)
        return (self.this_store, self.other_store, *outer)


def join_names(
    new_processor_name: Callable[[str], str],
    name: str | None,
    store_name: str | None,
    *,
    left_outer: bool,
    right_outer: bool,
) -> JoinNames:
    """`KStreamImplJoin#join`'s names; `new_processor_name(prefix)` takes the builder's next counter value."""

    def suffixed(suffix: str, prefix: str) -> str:  # NamedInternal#suffixWithOrElseGet(suffix, builder, prefix)
        generated = new_processor_name(prefix)
        return generated if name is None else validate_name(name + suffix)

    this_windowed = suffixed("-this-windowed", WINDOWED_NAME)
    other_windowed = suffixed("-other-windowed", WINDOWED_NAME)
    this_prefix = OUTERTHIS_NAME if right_outer else JOINTHIS_NAME
    this_generated = new_processor_name(this_prefix)
    other_generated = new_processor_name(OUTEROTHER_NAME if left_outer else JOINOTHER_NAME)
    this_suffix = "-outer-this-join" if right_outer else "-this-join"
    other_suffix = "-outer-other-join" if left_outer else "-other-join"
    merge = suffixed("-merge", MERGE_NAME)
    outer_store = None
    if left_outer:  # OuterStreamJoinStoreFactory#buildOuterJoinWindowStoreName
        outer_suffix = "-outer-shared-join" if right_outer else "-left-shared-join"
        if store_name is not None:
            outer_store = store_name + outer_suffix + STORE_SUFFIX
        else:
            outer_store = OUTERSHARED_NAME + this_generated[len(this_prefix) :] + STORE_SUFFIX
    return JoinNames(
        this_windowed=this_windowed,
        other_windowed=other_windowed,
        join_this=this_generated if name is None else name + this_suffix,
        join_other=other_generated if name is None else name + other_suffix,
        merge=merge,
        this_store=(this_generated if store_name is None else store_name + this_suffix) + STORE_SUFFIX,
        other_store=(other_generated if store_name is None else store_name + other_suffix) + STORE_SUFFIX,
        outer_store=outer_store,
    )


def window_store(name: str, key_serde: Serde, value_serde: Serde, windows: JoinWindows) -> StoreSpec:
    """A side's window store: every record kept (duplicates too) for `size + grace`, never cached, logged to a
    changelog that is deleted by time, not compacted (Kafka's `StreamJoinedStoreFactory`)."""
    return StoreSpec(name, key_serde, value_serde, windows=windows, cached=False, retain_duplicates=True)


def outer_store(name: str) -> StoreSpec:
    """The shared store of unmatched records: keys `timestamp + side + key`, values lists of `side + value`
    (Kafka's `TimestampedKeyAndJoinSide` and `ListValueStore` of `LeftOrRightValue`), written by the join's
    processors, which hold the serdes; never cached, compacted changelog."""
    raw = BytesSerde()
    return StoreSpec(name, raw, raw, cached=False)


def stream_stream_join(
    stream: StreamHandle,
    other: StreamHandle,
    joiner: Callable[[Any, Any], Any],
    windows: JoinWindows | None,
    stream_joined: StreamJoined | None,
    *,
    left_outer: bool,
    right_outer: bool,
) -> StreamHandle:
    """`KStreamImpl#doJoin` and `KStreamImplJoin#join`: repartition a re-keyed side (`<name>-left` /
    `<name>-right`, or after the stream's node), then a windowed node per side and the join's three nodes."""
    if other._builder is not stream._builder:
        raise TopologyError("join(): the two streams come from different StreamsBuilders")
    require_callable(joiner, "joiner")
    if not isinstance(windows, JoinWindows):
        raise TopologyError(f"a stream-stream join takes JoinWindows, got {windows!r}")
    joined = StreamJoined() if stream_joined is None else stream_joined
    if not isinstance(joined, StreamJoined):
        raise TopologyError(f"stream_joined must be a StreamJoined, got {joined!r}")
    name = joined.name
    if name is not None:
        validate_name(name)
    if joined.store_name is not None:
        validate_name(joined.store_name, "Store name")
    internal = stream._builder
    this_node, other_node = stream._node, other._node
    if stream._repartition_required:
        prefix = stream.node_name if name is None else name + "-left"
        this_node = repartition_for_join(stream, prefix, joined.key_serde, joined.value_serde)
    if other._repartition_required:
        prefix = other.node_name if name is None else name + "-right"
        other_node = repartition_for_join(other, prefix, joined.key_serde, joined.other_value_serde)
    names = join_names(
        internal.new_processor_name, name, joined.store_name, left_outer=left_outer, right_outer=right_outer
    )
    internal.claim(*names.processors)
    for store in names.stores:
        internal.claim_store(store)
    key_serde = or_default(first_serde(joined.key_serde, stream._key_serde))
    this_store = window_store(
        names.this_store, key_serde, or_default(first_serde(joined.value_serde, stream._value_serde)), windows
    )
    other_store = window_store(
        names.other_store, key_serde, or_default(first_serde(joined.other_value_serde, other._value_serde)), windows
    )
    outer = names.outer_store

    def windowed(processor: str, store: n.StoreSpec) -> Callable[[tuple[str, ...], InternalTopologyBuilder], None]:
        def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
            topology.add(StreamStreamJoinSpec(processor, parents, n.STREAM_JOIN_WINDOW, stores=(store.name,)))
            topology.add_store(store, processor)

        return write

    def side(left: bool) -> StreamStreamJoinSpec:
        mine, theirs = (this_store, other_store) if left else (other_store, this_store)
        spec = n.StreamJoinSpec(
            windows, left, left_outer if left else right_outer, mine.name, theirs.name, outer, names.merge
        )
        processor = names.join_this if left else names.join_other
        parent = names.this_windowed if left else names.other_windowed
        stores = (theirs.name,) if outer is None else (theirs.name, outer)
        fn = joiner if left else reversed(joiner)
        return StreamStreamJoinSpec(processor, (parent,), n.STREAM_JOIN, stores=stores, fn=fn, stream_join=spec)

    def write_join(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        for left in (True, False):
            spec = side(left)
            topology.add(spec)
            topology.store_users[spec.stores[0]].append(spec.name)
            if outer is not None and outer in topology.stores:
                topology.store_users[outer].append(spec.name)
            elif outer is not None:
                topology.add_store(outer_store(outer), spec.name)
        topology.add(StreamStreamJoinSpec(names.merge, (names.join_this, names.join_other), n.STREAM_JOIN_MERGE))

    def write_self_join(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        """Kafka's self-join processor, named as the merge, under this side's windowed node and its store."""
        spec = n.StreamJoinSpec(windows, True, left_outer, this_store.name, this_store.name, None, names.merge)
        stores = (this_store.name,)
        topology.add(
            StreamStreamJoinSpec(
                names.merge, (names.this_windowed,), n.STREAM_SELF_JOIN, stores, fn=joiner, stream_join=spec
            )
        )
        topology.store_users[this_store.name].append(names.merge)

    this_windowed = GraphNode(names.this_windowed, windowed(names.this_windowed, this_store))
    other_windowed = GraphNode(names.other_windowed, windowed(names.other_windowed, other_store))
    internal.add_graph_node(this_node, this_windowed)
    internal.add_graph_node(other_node, other_windowed)
    node = GraphNode(names.merge, write_join)
    node.self_join = optimizer.SelfJoin(this_windowed, other_windowed, write_self_join)
    internal.add_graph_node(this_node, node)
    internal.add_graph_node(other_node, node)
    if left_outer:
        internal.null_key_relaxed.add(node)  # Kafka's GraphNode.Label.NULL_KEY_RELAXED_JOIN
    # no serde for the joined values; the key serde is StreamJoined's (or this stream's)
    return StreamHandle(
        internal, node, first_serde(joined.key_serde, stream._key_serde), None, repartition_required=False
    )


def reversed(joiner: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """The other side's joiner takes its own value first (Kafka's `reverseJoinerWithKey`)."""

    def reversed_joiner(other_value: Any, value: Any) -> Any:
        return joiner(value, other_value)

    return reversed_joiner
