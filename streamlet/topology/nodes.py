"""The static node graph a `Topology` is made of (Kafka Streams' `InternalTopologyBuilder` node factories).

Specs are immutable descriptions: names, wiring, serdes and user functions. `streamlet.runtime.processor_graph`
turns the specs of one sub-topology into live processor nodes for each task.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from streamlet.errors import TopologyError
from streamlet.serdes import Serde
from streamlet.topology.join_windows import JoinWindows
from streamlet.topology.session_windows import SessionWindows
from streamlet.topology.sliding_windows import SlidingWindows
from streamlet.topology.suppressed import Suppressed
from streamlet.topology.windows import TimeWindows

MAX_NAME_LENGTH = 249
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


def validate_name(name: object, what: str = "Name") -> str:
    """Kafka Streams' `Named.validate`: non-empty, at most 249 chars of `[a-zA-Z0-9._-]`."""
    if not isinstance(name, str):
        raise TopologyError(f"{what} must be a string, got {type(name).__name__}")
    if not name:
        raise TopologyError(f"{what} is illegal, it can't be empty")
    if name in (".", ".."):
        raise TopologyError(f'{what} cannot be "." or ".."')
    if len(name) > MAX_NAME_LENGTH:
        raise TopologyError(f"{what} is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, name: {name}")
    if not _LEGAL_NAME.match(name):
        raise TopologyError(
            f"{what} \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        )
    return name


StreamPartitioner = Callable[[str, Any, Any, int], "int | None"]
"""Kafka's `StreamPartitioner#partition(topic, key, value, numPartitions)`: a partition, or None (default)."""


@dataclass(frozen=True, eq=False)
class NodeSpec:
    name: str
    predecessors: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class SourceSpec(NodeSpec):
    topics: tuple[str, ...]  # raw names: internal topics without the application id prefix
    key_serde: Serde
    value_serde: Serde
    is_global: bool = False  # a global table's source: its node group is a global store, with no tasks


@dataclass(frozen=True, eq=False)
class SinkSpec(NodeSpec):
    topic: str  # raw name
    key_serde: Serde
    value_serde: Serde
    # where a record goes, None for the default partitioner (a foreign-key join's subscription and response
    # sinks)
    partitioner: StreamPartitioner | None = None


# Processor operations: the `op` of a ProcessorSpec, within its family (the spec classes below).
FILTER = "filter"
FILTER_NOT = "filter_not"
MAP_VALUES = "map_values"
FLAT_MAP_VALUES = "flat_map_values"
MAP = "map"
FLAT_MAP = "flat_map"
SELECT_KEY = "select_key"
PEEK = "peek"
FOREACH = "foreach"
REPARTITION_FILTER = "repartition_filter"
COUNT = "count"
REDUCE = "reduce"
AGGREGATE = "aggregate"
TO_STREAM = "to_stream"
PROCESS = "process"  # a user processor: fn(context) -> (key, value) -> None, per task
PREAGGREGATE = "preaggregate"  # fn is a PreAggregation.fold (streamlet.topology.pre_aggregation)
SUPPRESS = "suppress"  # KTable.suppress(): holds updates in a suppression buffer (the node's one store)
BRANCH = "branch"  # split(): fn(key, value) names the child to forward to (streamlet.topology.branch.Splitter)
PASS_THROUGH = "pass_through"  # a split's branch, merge()
# KTable operations (streamlet.runtime.ktable_processors): they forward Change(new, old) values
TABLE_SOURCE = "table_source"
TABLE_FILTER = "table_filter"
TABLE_FILTER_NOT = "table_filter_not"
TABLE_MAP_VALUES = "table_map_values"
TABLE_TO_STREAM = "table_to_stream"
STREAM_TABLE_JOIN = "stream_table_join"
STREAM_TABLE_LEFT_JOIN = "stream_table_left_join"
# KStream-GlobalKTable joins (streamlet.runtime.global_table_join): they read a global store, no task's own
STREAM_GLOBAL_TABLE_JOIN = "stream_global_table_join"
STREAM_GLOBAL_TABLE_LEFT_JOIN = "stream_global_table_left_join"
GLOBAL_TABLE_JOIN_OPS = frozenset({STREAM_GLOBAL_TABLE_JOIN, STREAM_GLOBAL_TABLE_LEFT_JOIN})
# KStream-KStream joins (streamlet.runtime.stream_join; the DSL in streamlet.topology.stream_joins)
STREAM_JOIN_WINDOW = "stream_join_window"  # KStreamJoinWindow: forwards a record, then keeps it in its side's store
STREAM_JOIN = "stream_join"  # one side of KStreamKStreamJoin: joins a record with the other side's store
STREAM_JOIN_MERGE = "stream_join_merge"  # the join's result: both sides' outputs (a pass-through)
# KTable.group_by (streamlet.runtime.table_aggregation): the re-grouping map, and count/aggregate and reduce
TABLE_SELECT = "table_select"
TABLE_AGGREGATE = "table_aggregate"
TABLE_REDUCE = "table_reduce"
# KTable-KTable joins (streamlet.runtime.table_table_join): each side's join, and the merger of both sides
TABLE_JOIN_INNER = "table_join_inner"
TABLE_JOIN_LEFT = "table_join_left"
TABLE_JOIN_RIGHT = "table_join_right"  # the right side of a left join
TABLE_JOIN_OUTER = "table_join_outer"
TABLE_JOIN_MERGE = "table_join_merge"
TABLE_JOIN_SIDES = frozenset({TABLE_JOIN_INNER, TABLE_JOIN_LEFT, TABLE_JOIN_RIGHT, TABLE_JOIN_OUTER})
# foreign-key KTable-KTable joins (streamlet.runtime.foreign_key_join), in the order a record goes through them
FK_SUBSCRIPTION_SEND = "fk_subscription_send"  # left table -> subscriptions keyed by foreign key
FK_SUBSCRIPTION_RECEIVE = "fk_subscription_receive"  # keeps them in the subscription store
FK_SUBSCRIPTION_JOIN = "fk_subscription_join"  # answers one with the foreign table's value
FK_FOREIGN_TABLE_JOIN = "fk_foreign_table_join"  # a foreign update answers every subscriber
FK_RESPONSE_JOIN = "fk_response_join"  # left side: joins a response still matching the left value
FK_JOIN_OPS = frozenset(
    {FK_SUBSCRIPTION_SEND, FK_SUBSCRIPTION_RECEIVE, FK_SUBSCRIPTION_JOIN, FK_FOREIGN_TABLE_JOIN, FK_RESPONSE_JOIN}
)

AGGREGATING_OPS = frozenset({COUNT, REDUCE, AGGREGATE})
# KStreamKStreamSelfJoin (`single.store.self.join`): a stream joined with itself, from one window store
STREAM_SELF_JOIN = "stream_self_join"
STREAM_JOIN_OPS = frozenset({STREAM_JOIN_WINDOW, STREAM_JOIN, STREAM_JOIN_MERGE, STREAM_SELF_JOIN})


@dataclass(frozen=True)
class ValueGetterSpec:
    """How a KTable's current value for a key is read (Kafka's `KTableValueGetterSupplier` chain): its
    nearest materialized store, then the table filters / mapValues between that store and the table, as
    `(op, fn)` steps applied in order.

    The result of an unmaterialized table-table join has no store: it is read by joining its two tables'
    current values on the fly (`join`, Kafka's `KTableKTableJoinMerger#view`); a suppressed table is read from
    its suppression buffer, else from its parent (`suppressed`). `store` is then the first store read, and
    `stores` all of them (the stores a reader is connected to).
    """

    store: str
    steps: tuple[tuple[str, Callable[..., Any]], ...] = ()
    join: TableJoinGetterSpec | None = None
    suppressed: SuppressGetterSpec | None = None

    @property
    def stores(self) -> tuple[str, ...]:
        if self.join is not None:
            return tuple(dict.fromkeys(self.join.this.stores + self.join.other.stores))
        if self.suppressed is not None:
            return tuple(dict.fromkeys((self.suppressed.buffer, *self.suppressed.parent.stores)))
        return (self.store,)


@dataclass(frozen=True)
class TableJoinGetterSpec:
    """The value getter of a table-table join (`KTableKTable{Inner,Left,Outer}JoinValueGetter`): `joiner(this
    value, other value)` of both tables' current values, as `op` (TABLE_JOIN_INNER / _LEFT / _OUTER) joins
    them, at the larger of their timestamps."""

    op: str
    joiner: Callable[[Any, Any], Any]
    this: ValueGetterSpec
    other: ValueGetterSpec


@dataclass(frozen=True)
class SuppressGetterSpec:
    """The value getter of a suppressed table (`KTableSuppressProcessorSupplier#view`): a key held in the
    suppression `buffer` reads as the value it had before its first buffered update (what the suppressed table
    last emitted, with an unknown timestamp), any other key as the `parent` table reads it."""

    buffer: str
    parent: ValueGetterSpec


#: what `windowed_by` takes: a windowed aggregation's windows, and its store's
Windows = TimeWindows | SlidingWindows | SessionWindows


@dataclass(frozen=True)
class StreamJoinSpec:
    """One side of a KStream-KStream join (Kafka's `KStreamKStreamJoinLeftSide` / `RightSide`)."""

    windows: JoinWindows
    left: bool  # the side of the stream `join()` was called on (its records are the joiner's first value)
    outer: bool  # this side's unmatched records are emitted with None as the other value
    this_store: str  # this side's window store (its serdes; the windowed node writes it)
    other_store: str  # the other side's window store, searched for partners
    outer_store: str | None  # a left/outer join's shared store of records still waiting for a partner
    join: str  # the join's merge node: both sides of one join share its time tracker, per task


@dataclass(frozen=True)
class ForeignKeyJoinSpec:
    """What the processors of one foreign-key join share (Kafka's `KTableImpl#doJoinOnForeignKey`)."""

    subscription_topic: str  # raw name of the subscription topic: its pseudo-topics name the nested serdes
    left_join: bool
    foreign_key_serde: Serde  # the foreign table's key serde
    primary_key_serde: Serde  # the left table's key serde
    value_serde: Serde  # the left table's value serde: its bytes are hashed
    subscription_store: str


@dataclass(frozen=True, eq=False)
class ProcessorSpec(NodeSpec):
    """A processor node: its operation, the stores it is connected to and the user function it calls.

    Operations are typed: each family of them (the subclasses below) carries what its processors need, and
    the runtime looks its builder up by the spec's type (`streamlet.runtime.processor_builders`). `op` names
    the operation within the family (one of the family's `OPS`); a family of one operation has it as default.
    """

    OPS: ClassVar[frozenset[str]] = frozenset()

    op: str
    stores: tuple[str, ...] = ()
    fn: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        if self.op not in self.OPS:
            raise TopologyError(f"{type(self).__name__} {self.name}: {self.op!r} is not one of its operations")


@dataclass(frozen=True, eq=False)
class StreamOperationSpec(ProcessorSpec):
    """A stateless KStream operation: `fn` per record (none for a repartition filter or a pass-through)."""

    OPS: ClassVar[frozenset[str]] = frozenset(
        {
            FILTER,
            FILTER_NOT,
            MAP_VALUES,
            FLAT_MAP_VALUES,
            MAP,
            FLAT_MAP,
            SELECT_KEY,
            PEEK,
            FOREACH,
            REPARTITION_FILTER,
            TO_STREAM,
            PASS_THROUGH,
        }
    )


@dataclass(frozen=True, eq=False)
class ProcessSpec(ProcessorSpec):
    """A user processor (`KStream.process`): `fn(context)` makes one per task."""

    OPS: ClassVar[frozenset[str]] = frozenset({PROCESS})
    op: str = PROCESS


@dataclass(frozen=True, eq=False)
class BranchSpec(ProcessorSpec):
    """A split's splitter: `fn(key, value)` names the child to forward to (`streamlet.topology.branch`)."""

    OPS: ClassVar[frozenset[str]] = frozenset({BRANCH})
    op: str = BRANCH


@dataclass(frozen=True, eq=False)
class PreAggregateSpec(ProcessorSpec):
    """A pre-aggregation before a repartition: `fn` is a `PreAggregation.fold`."""

    OPS: ClassVar[frozenset[str]] = frozenset({PREAGGREGATE})
    op: str = PREAGGREGATE


@dataclass(frozen=True, eq=False)
class TableNodeSpec(ProcessorSpec):
    """A node of a KTable's graph: it forwards `Change(new, old)` (or an aggregate, with the old one in the
    record context), the old value only where a downstream table asked for it (`send_old_values`)."""

    send_old_values: bool = field(default=False, kw_only=True)


@dataclass(frozen=True, eq=False)
class SuppressSpec(ProcessorSpec):
    """`KTable.suppress()`: holds updates in its one store, a suppression buffer; `suppress` has its wait
    resolved."""

    OPS: ClassVar[frozenset[str]] = frozenset({SUPPRESS})
    op: str = SUPPRESS
    suppress: Suppressed = field(kw_only=True)


@dataclass(frozen=True, eq=False)
class AggregateSpec(TableNodeSpec):
    """count/reduce/aggregate of a grouped stream, windowed by `windows` or not: `fn` the reducer or
    aggregator, `initializer` an aggregate's, `merger` a session aggregate's."""

    OPS: ClassVar[frozenset[str]] = AGGREGATING_OPS
    initializer: Callable[[], Any] | None = field(default=None, kw_only=True)
    windows: Windows | None = field(default=None, kw_only=True)
    merger: Callable[[Any, Any, Any], Any] | None = field(default=None, kw_only=True)


@dataclass(frozen=True, eq=False)
class TableOperationSpec(TableNodeSpec):
    """A table source, a table filter / mapValues (with its own store if materialized), toStream, and the
    re-grouping map of `KTable.group_by` (`TABLE_SELECT`)."""

    OPS: ClassVar[frozenset[str]] = frozenset(
        {TABLE_SOURCE, TABLE_FILTER, TABLE_FILTER_NOT, TABLE_MAP_VALUES, TABLE_TO_STREAM, TABLE_SELECT}
    )


@dataclass(frozen=True, eq=False)
class TableAggregateSpec(TableNodeSpec):
    """aggregate/reduce of a grouped table: `fn` adds a value, `subtractor` removes the one it replaced."""

    OPS: ClassVar[frozenset[str]] = frozenset({TABLE_AGGREGATE, TABLE_REDUCE})
    initializer: Callable[[], Any] | None = field(default=None, kw_only=True)
    subtractor: Callable[..., Any] | None = field(default=None, kw_only=True)


@dataclass(frozen=True, eq=False)
class StreamTableJoinSpec(TableNodeSpec):
    """A KStream-KTable join: each stream record reads the table through `value_getter`."""

    OPS: ClassVar[frozenset[str]] = frozenset({STREAM_TABLE_JOIN, STREAM_TABLE_LEFT_JOIN})
    value_getter: ValueGetterSpec = field(kw_only=True)


@dataclass(frozen=True, eq=False)
class TableJoinSpec(TableNodeSpec):
    """A side of a KTable-KTable join, reading the other table through `value_getter`, or the join's merger
    (`TABLE_JOIN_MERGE`, none)."""

    OPS: ClassVar[frozenset[str]] = frozenset({*TABLE_JOIN_SIDES, TABLE_JOIN_MERGE})
    value_getter: ValueGetterSpec | None = field(default=None, kw_only=True)


@dataclass(frozen=True, eq=False)
class ForeignKeyJoinNodeSpec(TableNodeSpec):
    """A processor of a foreign-key join; the subscription join and the response join read a table through
    `value_getter`."""

    OPS: ClassVar[frozenset[str]] = FK_JOIN_OPS
    foreign_key_join: ForeignKeyJoinSpec = field(kw_only=True)
    value_getter: ValueGetterSpec | None = field(default=None, kw_only=True)


@dataclass(frozen=True, eq=False)
class GlobalTableJoinSpec(ProcessorSpec):
    """A KStream-GlobalKTable join: `key_mapper(key, value)` is the table key, read through `value_getter` from
    the global store (no task's own, so no `stores`)."""

    OPS: ClassVar[frozenset[str]] = GLOBAL_TABLE_JOIN_OPS
    value_getter: ValueGetterSpec = field(kw_only=True)
    key_mapper: Callable[[Any, Any], Any] = field(kw_only=True)


@dataclass(frozen=True, eq=False)
class StreamStreamJoinSpec(ProcessorSpec):
    """A node of a KStream-KStream join: a side's window (`STREAM_JOIN_WINDOW`), a side's join or a self-join
    (with their `stream_join`), or the join's merge."""

    OPS: ClassVar[frozenset[str]] = STREAM_JOIN_OPS
    stream_join: StreamJoinSpec | None = field(default=None, kw_only=True)


@dataclass(frozen=True, eq=False)
class StoreSpec:
    """A key-value store: its serdes say how keys and aggregates are stored (and changelogged).

    `timestamped` stores (what the DSL's aggregations materialize, Kafka's `TimestampedKeyValueStore`) keep
    each value as an 8-byte big-endian timestamp followed by the serialized value, as Kafka's
    `ValueAndTimestampSerializer` does; their changelog records carry the plain value with that timestamp as
    the record timestamp (see `streamlet.state.timestamped`).
    """

    name: str
    key_serde: Serde
    value_serde: Serde
    logged: bool = True
    log_config: tuple[tuple[str, str], ...] = ()  # topic configs of its changelog over the library's defaults
    timestamped: bool = False
    # a window store (WindowKeySchema keys), or with SessionWindows a session store (SessionKeySchema keys);
    # JoinWindows: a stream-stream join's window store, which keeps every record (`retain_duplicates`)
    windows: Windows | JoinWindows | None = None
    buffer: bool = False  # a suppression buffer (in memory, time-ordered): see streamlet.state.time_ordered_buffer
    cached: bool = True  # behind the record cache (stream-stream join stores never are, as in Kafka)
    retain_duplicates: bool = False  # a join window store: each put is a new entry (a sequence number in its key)
    queryable: bool = True  # False: streamlet's own bookkeeping (a windowed table's closed windows), hidden from IQ
