"""Record streams (Kafka Streams' `KStreamImpl`): the stateless operations, `to`, `process`, `repartition`,
`merge`, `split` and the joins of a stream.

`KStreamBase` returns streams of its caller's class (`Self`), so the DSL's `KStream` (`streamlet.topology.dsl`),
which adds the groupings, gets KStreams back. Join wiring is in `joins` (with tables and global tables) and
`stream_joins` (with streams); the branches of `split()` are a `BranchedKStream`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, Self, TypeVar, overload

from streamlet.errors import TopologyError
from streamlet.serdes import Serde, SerdeLike
from streamlet.topology import joins, stream_joins
from streamlet.topology import nodes as n
from streamlet.topology.branch import BRANCH_NAME, BRANCHCHILD_NAME, MERGE_NAME, Branched, Splitter
from streamlet.topology.dsl_graph import (
    FILTER_NAME,
    FLATMAP_NAME,
    FLATMAPVALUES_NAME,
    FOREACH_NAME,
    KEY_SELECT_NAME,
    MAP_NAME,
    MAPVALUES_NAME,
    PEEK_NAME,
    PROCESSOR_NAME,
    REPARTITION_NAME,
    SINK_NAME,
    GraphNode,
    InternalTopologyBuilder,
    StreamHandle,
    first_serde,
    or_default,
    processor_node,
    require_callable,
    serde_arg,
    typed_serde,
)
from streamlet.topology.global_ktable import GlobalKTable
from streamlet.topology.join_windows import JoinWindows, StreamJoined
from streamlet.topology.kgrouped_stream import KGroupedStreamBase
from streamlet.topology.ktable import KTableBase
from streamlet.topology.nodes import BranchSpec, ProcessSpec, SinkSpec, StreamOperationSpec, validate_name


class KStreamBase(StreamHandle):
    """A record stream. Every operation here returns a new stream of the caller's class."""

    __slots__ = ()

    @classmethod
    def of(cls, stream: StreamHandle) -> Self:
        """`stream` as an instance of this class (the same builder, node, serdes and repartition flag)."""
        return cls(stream._builder, stream._node, stream._key_serde, stream._value_serde, stream._repartition_required)

    def _processor(
        self,
        prefix: str,
        op: str,
        fn: Callable[..., Any],
        name: str | None,
        *,
        key_serde: Serde | None,
        value_serde: Serde | None,
        repartition_required: bool,
    ) -> Self:
        require_callable(fn, op)
        node_name = self._builder.name_or_generate(name, prefix)
        node = processor_node(self._builder, self._node, node_name, op, fn)
        return type(self)(self._builder, node, key_serde, value_serde, repartition_required)

    def filter(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> Self:
        """Keep records for which `predicate(key, value)` is true."""
        return self._processor(
            FILTER_NAME,
            n.FILTER,
            predicate,
            name,
            key_serde=self._key_serde,
            value_serde=self._value_serde,
            repartition_required=self._repartition_required,
        )

    def filter_not(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> Self:
        """Drop records for which `predicate(key, value)` is true."""
        return self._processor(
            FILTER_NAME,
            n.FILTER_NOT,
            predicate,
            name,
            key_serde=self._key_serde,
            value_serde=self._value_serde,
            repartition_required=self._repartition_required,
        )

    def map_values(self, mapper: Callable[[Any], Any], *, name: str | None = None) -> Self:
        """`value -> mapper(value)`; the key is unchanged, so no repartition is needed later."""
        return self._processor(
            MAPVALUES_NAME,
            n.MAP_VALUES,
            mapper,
            name,
            key_serde=self._key_serde,
            value_serde=typed_serde(mapper, None),
            repartition_required=self._repartition_required,
        )

    def flat_map_values(self, mapper: Callable[[Any], Iterable[Any]], *, name: str | None = None) -> Self:
        """One record per element of `mapper(value)`, each with the original key."""
        return self._processor(
            FLATMAPVALUES_NAME,
            n.FLAT_MAP_VALUES,
            mapper,
            name,
            key_serde=self._key_serde,
            value_serde=typed_serde(mapper, None, items=True),
            repartition_required=self._repartition_required,
        )

    def map(self, mapper: Callable[[Any, Any], tuple[Any, Any]], *, name: str | None = None) -> Self:
        """`(key, value) -> mapper(key, value)`, a new `(key, value)` pair (marks the stream for repartition)."""
        return self._processor(
            MAP_NAME, n.MAP, mapper, name, key_serde=None, value_serde=None, repartition_required=True
        )

    def flat_map(self, mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]], *, name: str | None = None) -> Self:
        """One record per `(key, value)` pair of `mapper(key, value)` (marks the stream for repartition)."""
        return self._processor(
            FLATMAP_NAME, n.FLAT_MAP, mapper, name, key_serde=None, value_serde=None, repartition_required=True
        )

    def select_key(self, mapper: Callable[[Any, Any], Any], *, name: str | None = None) -> Self:
        """New key `mapper(key, value)`, same value (marks the stream for repartition)."""
        return self._processor(
            KEY_SELECT_NAME,
            n.SELECT_KEY,
            mapper,
            name,
            key_serde=typed_serde(mapper, self._key_serde),
            value_serde=self._value_serde,
            repartition_required=True,
        )

    def peek(self, action: Callable[[Any, Any], Any], *, name: str | None = None) -> Self:
        """Call `action(key, value)` and pass the record on unchanged."""
        return self._processor(
            PEEK_NAME,
            n.PEEK,
            action,
            name,
            key_serde=self._key_serde,
            value_serde=self._value_serde,
            repartition_required=self._repartition_required,
        )

    def foreach(self, action: Callable[[Any, Any], Any], *, name: str | None = None) -> None:
        """Call `action(key, value)` for every record (a terminal operation)."""
        self._processor(
            FOREACH_NAME,
            n.FOREACH,
            action,
            name,
            key_serde=None,
            value_serde=None,
            repartition_required=False,
        )

    def to(
        self,
        topic: str,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        *,
        name: str | None = None,
    ) -> None:
        """Write the stream to `topic` (Kafka's `to(topic, Produced)`); serdes default to the stream's."""
        if not isinstance(topic, str) or not topic:
            raise TopologyError(f"to() needs a non-empty topic name, got {topic!r}")
        ks = first_serde(serde_arg(key_serde, "key_serde"), self._key_serde)
        vs = first_serde(serde_arg(value_serde, "value_serde"), self._value_serde)
        builder = self._builder
        sink_name = builder.name_or_generate(name, SINK_NAME)
        builder.claim(sink_name)
        key_serde_, value_serde_ = or_default(ks), or_default(vs)

        def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
            topology.add(SinkSpec(sink_name, parents, topic, key_serde_, value_serde_))

        builder.add_graph_node(self._node, GraphNode(sink_name, write))

    def repartition(
        self, name: str | None = None, *, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> Self:
        """Write through the repartition topic `<application_id>-<name>-repartition` (Kafka's `repartition`)."""
        ks = first_serde(serde_arg(key_serde, "key_serde"), self._key_serde)
        vs = first_serde(serde_arg(value_serde, "value_serde"), self._value_serde)
        if name is not None:
            validate_name(name)
        prefix = name if name is not None else self._builder.new_processor_name(REPARTITION_NAME)
        grouped = KGroupedStreamBase(self._builder, self._node, ks, vs, True, None)
        node = grouped._repartition(prefix, optimizable=False)  # Kafka's UnoptimizableRepartitionNode
        return type(self)(self._builder, node, ks, vs, repartition_required=False)

    def process(
        self,
        factory: Callable[[Any], Callable[[Any, Any], None]],
        *,
        stores: Iterable[str] = (),
        name: str | None = None,
    ) -> Self:
        """A user processor: `factory(context)` runs once per task and returns `fn(key, value)`.

        `stores` are names given to `StreamsBuilder.add_store`; the processor reads them through
        `context.get_state_store(name)`. The context (`streamlet.runtime.processor_context`) also
        `forward()`s records to what follows on the returned stream and `schedule()`s punctuators. As in
        Kafka Streams the result has no serdes and may have new keys (a later grouping repartitions).
        """
        require_callable(factory, "process factory")
        builder = self._builder
        store_names = tuple(stores)
        declared = builder.state_stores
        for store in store_names:
            if store not in declared:
                raise TopologyError(f"process() uses store {store!r}, which was not declared with add_store()")
        # a given name burns no counter value here (Kafka's process() takes `new NamedInternal(named).name()`)
        processor = validate_name(name) if name is not None else builder.new_processor_name(PROCESSOR_NAME)
        builder.claim(processor)

        def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
            topology.add(ProcessSpec(processor, parents, stores=store_names, fn=factory))
            for store in store_names:
                if store in topology.stores:
                    topology.store_users[store].append(processor)
                else:
                    topology.add_store(declared[store], processor)

        node = GraphNode(processor, write)
        builder.add_graph_node(self._node, node)
        return type(self)(builder, node, None, None, repartition_required=True)

    def split(self, *, name: str | None = None) -> BranchedKStream[Self]:
        """Route each record to the first branch whose predicate holds (Kafka's `split(Named)`); `name` is
        the splitter's name and the prefix of its branches' names."""
        return BranchedKStream(self, name)

    def merge(self, other: KStreamBase, *, name: str | None = None) -> Self:
        """The records of both streams, each as it arrives (Kafka's `merge`); the serdes are dropped."""
        if not isinstance(other, KStreamBase) or other._builder is not self._builder:
            raise TopologyError(f"merge() takes a KStream of the same StreamsBuilder, got {other!r}")
        builder = self._builder
        merge_name = builder.name_or_generate(name, MERGE_NAME)
        builder.claim(merge_name)

        def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
            topology.add(StreamOperationSpec(merge_name, parents, n.PASS_THROUGH))

        node = GraphNode(merge_name, write)
        node.merge_node = True
        builder.add_graph_node(self._node, node)
        builder.add_graph_node(other._node, node)
        required = self._repartition_required or other._repartition_required
        return type(self)(builder, node, None, None, repartition_required=required)

    @overload
    def join(
        self,
        other: KTableBase,
        joiner: Callable[[Any, Any], Any],
        /,
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
    ) -> Self: ...

    @overload
    def join(
        self,
        other: KStreamBase,
        joiner: Callable[[Any, Any], Any],
        windows: JoinWindows,
        /,
        *,
        stream_joined: StreamJoined | None = None,
    ) -> Self: ...

    @overload
    def join(
        self,
        other: GlobalKTable,
        key_selector: Callable[[Any, Any], Any],
        joiner: Callable[[Any, Any], Any],
        /,
        *,
        name: str | None = None,
    ) -> Self: ...

    def join(
        self,
        other: KTableBase | KStreamBase | GlobalKTable,
        joiner_or_key_selector: Callable[[Any, Any], Any],
        windows_or_joiner: Any = None,
        /,
        *,
        windows: JoinWindows | None = None,
        stream_joined: StreamJoined | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
    ) -> Self:
        """`joiner(value, other_value)` for each record that has a partner (Kafka's `join`).

        With a KTable: the table's current value for the record's key (Kafka's `join(KTable)`); records with a
        null key or value are dropped; the result keeps the record's key and timestamp. A re-keyed stream is
        repartitioned first, with `key_serde` / `value_serde` (Kafka's `Joined`), default the stream's. The
        stream's and the table's topics must have equal partition counts.

        With a KStream and `windows` (`JoinWindows`): every pair of records of the same key whose timestamps
        are within the windows, in both directions, at the later of the two timestamps (see
        `streamlet.topology.join_windows`); `stream_joined` gives the serdes, a name and a store name (Kafka's
        `StreamJoined`).

        With a GlobalKTable, `join(global_table, key_selector, joiner)`: the table key is
        `key_selector(key, value)` (a record mapped to None, or with a null value, is dropped); no repartition,
        no co-partitioning (Kafka's `join(GlobalKTable, KeyValueMapper, ValueJoiner)`).
        """
        return self.of(_join(
            self, other, joiner_or_key_selector, windows_or_joiner, windows, stream_joined, (key_serde, value_serde),
            name, left=False,
        ))  # fmt: skip

    @overload
    def left_join(
        self,
        other: KTableBase,
        joiner: Callable[[Any, Any], Any],
        /,
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
    ) -> Self: ...

    @overload
    def left_join(
        self,
        other: KStreamBase,
        joiner: Callable[[Any, Any], Any],
        windows: JoinWindows,
        /,
        *,
        stream_joined: StreamJoined | None = None,
    ) -> Self: ...

    @overload
    def left_join(
        self,
        other: GlobalKTable,
        key_selector: Callable[[Any, Any], Any],
        joiner: Callable[[Any, Any], Any],
        /,
        *,
        name: str | None = None,
    ) -> Self: ...

    def left_join(
        self,
        other: KTableBase | KStreamBase | GlobalKTable,
        joiner_or_key_selector: Callable[[Any, Any], Any],
        windows_or_joiner: Any = None,
        /,
        *,
        windows: JoinWindows | None = None,
        stream_joined: StreamJoined | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
    ) -> Self:
        """`joiner(value, other_value or None)` for every record with a value (Kafka's `leftJoin`).

        With a KTable, unlike `join`, a record with a null key is joined too (with None), as Kafka Streams 3.7+
        does. With a KStream and `windows`, a record of this stream that found no partner is emitted with None
        once stream time passes the end of its window plus the grace period (never early, KIP-633). With a
        GlobalKTable, `left_join(global_table, key_selector, joiner)`: a record whose key maps to None is
        joined with None too (Kafka's `leftJoin(GlobalKTable, ...)`).
        """
        return self.of(_join(
            self, other, joiner_or_key_selector, windows_or_joiner, windows, stream_joined, (key_serde, value_serde),
            name, left=True,
        ))  # fmt: skip

    def outer_join(
        self,
        other: KStreamBase,
        joiner: Callable[[Any, Any], Any],
        windows: JoinWindows,
        *,
        stream_joined: StreamJoined | None = None,
    ) -> Self:
        """A windowed join in which the unmatched records of both streams are emitted once their windows close:
        `joiner(value, None)` or `joiner(None, other_value)` (Kafka's `outerJoin`)."""
        joined = stream_joins.stream_stream_join(
            self, other, joiner, windows, stream_joined, left_outer=True, right_outer=True
        )
        return self.of(joined)

    def __repr__(self) -> str:
        return f"KStream({self._node.name})"


S = TypeVar("S", bound=KStreamBase)


class BranchedKStream(Generic[S]):
    """The branches of `KStream.split()`: add them with `branch()`, end with `default_branch()` or
    `no_default_branch()`, which return the branches by name (Kafka's `BranchedKStream`)."""

    __slots__ = ("_source", "_name", "_node", "_predicates", "_children", "_branches")

    def __init__(self, source: S, name: str | None) -> None:
        builder = source._builder
        self._source = source
        self._name = builder.name_or_generate(name, BRANCH_NAME)
        builder.claim(self._name)
        self._predicates: list[Callable[[Any, Any], Any]] = []
        self._children: list[str] = []
        self._branches: dict[str, S] = {}
        splitter_name, predicates, children = self._name, self._predicates, self._children

        def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
            splitter = Splitter(tuple(predicates), tuple(children))
            topology.add(BranchSpec(splitter_name, parents, fn=splitter))

        self._node = GraphNode(splitter_name, write)
        builder.add_graph_node(source._node, self._node)

    def branch(self, predicate: Callable[[Any, Any], Any], branched: Branched | None = None) -> BranchedKStream[S]:
        """Records for which `predicate(key, value)` holds, and no earlier branch's did."""
        require_callable(predicate, "branch predicate")
        self._predicates.append(predicate)
        self._create(branched, len(self._predicates))
        return self

    def default_branch(self, branched: Branched | None = None) -> dict[str, S]:
        """Records no branch took; returns every branch by name."""
        self._create(branched, 0)
        return dict(self._branches)

    def no_default_branch(self) -> dict[str, S]:
        """Records no branch took are dropped; returns every branch by name."""
        return dict(self._branches)

    def _create(self, branched: Branched | None, index: int) -> None:
        branched = Branched() if branched is None else branched
        if not isinstance(branched, Branched):
            raise TopologyError(f"branches are described with Branched, got {branched!r}")
        source = self._source
        builder = source._builder
        child = self._name + (str(index) if branched.name is None else branched.name)
        self._children.append(child)
        builder.new_processor_name(BRANCHCHILD_NAME)  # burnt, as Kafka does
        node = processor_node(builder, self._node, child, n.PASS_THROUGH)
        stream = type(source)(builder, node, source._key_serde, source._value_serde, source._repartition_required)
        if branched.function is not None:
            result = branched.function(stream)
            if result is not None:
                self._branches[child] = result
        elif branched.consumer is not None:
            branched.consumer(stream)
        else:
            self._branches[child] = stream

    def __repr__(self) -> str:
        return f"BranchedKStream({self._name})"


def _join(
    stream: KStreamBase,
    other: Any,
    joiner_or_key_selector: Callable[[Any, Any], Any],
    third: Any,
    windows: JoinWindows | None,
    stream_joined: StreamJoined | None,
    serdes: tuple[SerdeLike, SerdeLike],
    name: str | None,
    *,
    left: bool,
) -> StreamHandle:
    """What `join` / `left_join` do with their arguments: the third positional one is a stream-stream join's
    windows, or a global table join's joiner."""
    key_serde, value_serde = serdes
    if isinstance(other, GlobalKTable):
        _check_join_options(stream=False, windows=windows, stream_joined=stream_joined)
        return joins.stream_global_table_join(
            stream, other, joiner_or_key_selector, third, left=left, name=name, serdes=serdes
        )
    if third is not None:
        if windows is not None:
            raise TopologyError("join(): the windows are given twice (positionally and as windows=)")
        windows = third
    if isinstance(other, KStreamBase):
        _check_join_options(stream=True, key_serde=key_serde, value_serde=value_serde, name=name)
        return stream_joins.stream_stream_join(
            stream, other, joiner_or_key_selector, windows, stream_joined, left_outer=left, right_outer=False
        )
    _check_join_options(stream=False, windows=windows, stream_joined=stream_joined)
    return joins.stream_table_join(
        stream, other, joiner_or_key_selector, left=left, key_serde=key_serde, value_serde=value_serde, name=name
    )


def _check_join_options(*, stream: bool, **options: Any) -> None:
    """Each kind of join takes its own options: a stream-stream join's are in `windows` and `stream_joined`."""
    given = sorted(option for option, value in options.items() if value is not None)
    if given and stream:
        raise TopologyError(f"a stream-stream join takes JoinWindows and stream_joined=StreamJoined(...), not {given}")
    if given:
        raise TopologyError(f"{given} are for stream-stream joins; a stream-table join takes key_serde, value_serde")
