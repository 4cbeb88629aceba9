"""The stream an agent iterates: DSL nodes while the topology is compiled, records while a task runs.

Serdes follow the data. The stream knows its keys' and values' serde and type from the topic (`key_type=`,
`value_type=`), keeps them through `filter`, and learns new ones from `map_values(value_serde=...)` or a
function's return annotation. A `group_by` writes its repartition topic with the values' serde and a key
serde from the key function's type (a Record field such as `PageView.user`, or an annotation), else the
stream's declared key serde, else str. Values whose type nothing declares (after a lambda) travel as JSON,
Faust's default. A declared serde that cannot carry a declared type is an error when the topology is built.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from typing import Any

from streamlet.errors import StreamletError, TopologyError
from streamlet.faust.agent_joins import Seconds, check_joinable, global_ktable, join_windows, pair, table_key_selector
from streamlet.faust.global_tables import GlobalTable
from streamlet.faust.topic_ref import Carried, TopicRef, declared_serde
from streamlet.models import FieldDescriptor
from streamlet.serdes import JsonSerde, SerdeLike, StringSerde
from streamlet.topology import GlobalKTable, KStream, KTable
from streamlet.topology.join_windows import JoinWindows, StreamJoined
from streamlet.typed_serdes import element_type, is_model, result_type, serde_type

__all__ = ["NEXT", "AgentStream", "NextRecord"]

Joinable = KTable | GlobalTable | GlobalKTable | TopicRef | KStream

NEXT = object()  # what an agent's coroutine yields when it waits for the next record
UNKNOWN = Carried(None)


class NextRecord:
    """What `await stream.__anext__()` awaits: it yields NEXT, and the driver sends the record back in."""

    __slots__ = ()

    def __await__(self) -> Generator[object, Any, Any]:
        item = yield NEXT
        return item


class GroupByError(StreamletError):
    """An agent's `group_by` could not compute a record's new key. It is a processing error: the
    `processing_exception_handler` stops the task (`fail`) or skips the record (`log_and_continue`,
    `dead_letter`), and the message names the agent and its `group_by`, not the generated processor."""


def group_key_selector(key_fn: Callable[[Any], Any], where: str) -> Callable[[Any], Any]:
    """`key_fn` for a `group_by`, raising `GroupByError` naming `where` (the agent and its group_by).

    A null value (a tombstone, or a record the producer sent without a value) has no field to group by. Faust
    raises on it inside the agent; Kafka Streams' `selectKey` calls the selector with it too. Dropping it
    silently would lose records unnoticed, so it is a processing error with the fix in the message.
    """
    name = key_fn.name if isinstance(key_fn, FieldDescriptor) else ""
    field = f"{key_fn.model.__name__}.{name}" if isinstance(key_fn, FieldDescriptor) else None
    label = field or getattr(key_fn, "__qualname__", repr(key_fn))

    def select(value: Any) -> Any:
        if value is None and field is not None:
            raise GroupByError(
                f"{where} ({field}): the record's value is null, so it has no field {name!r} to group by; "
                "drop null values before the group_by (stream.filter(lambda v: v is not None)), or set "
                "processing_exception_handler='log_and_continue' to skip such records"
            )
        try:
            return key_fn(value)
        except Exception as exc:
            shown = repr(value)
            shown = shown if len(shown) <= 200 else shown[:200] + "..."
            raise GroupByError(f"{where}: its key function {label} raised {exc!r} on the value {shown}") from exc

    return select


class AgentStream:
    """The stream an agent receives.

    While the topology is compiled, its operations add DSL nodes and track what the stream carries; while a
    task runs, they are no-ops (records reaching the agent have already been through those nodes) and
    iteration yields records.
    """

    def __init__(
        self,
        kstream: KStream | None,
        recorder: list[AgentStream] | None = None,
        key: Carried = UNKNOWN,
        value: Carried = UNKNOWN,
        agent: str = "",
        source: str = "",
        source_of: Callable[[TopicRef], KStream] | None = None,
    ) -> None:
        self._kstream = kstream
        self._recorder = recorder
        self._key = key
        self._value = value
        self._agent = agent
        self._source = source  # the input topic, which names a group_by's topic when none is given
        self._source_of = source_of  # a topic's source stream, shared with the agents reading it
        self.with_keys = False
        self.rekeyed = False  # a repartition topic lies between the input topic and this stream

    def _then(self, make: Callable[[KStream], KStream], key: Carried, value: Carried) -> AgentStream:
        if self._kstream is None:  # running inside a task
            return self
        nxt = AgentStream(make(self._kstream), self._recorder, key, value, self._agent, self._source, self._source_of)
        nxt.with_keys = self.with_keys
        nxt.rekeyed = self.rekeyed
        return nxt

    def filter(self, predicate: Callable[[Any], bool]) -> AgentStream:
        return self._then(lambda ks: ks.filter(lambda _k, v: predicate(v)), self._key, self._value)

    def map_values(self, fn: Callable[[Any], Any], value_serde: SerdeLike = None) -> AgentStream:
        """`value -> fn(value)`; the new values' serde is `value_serde`, else their annotated type's, else JSON."""
        if self._kstream is None:
            return self
        value = self._new_values(value_serde, result_type(fn), "map_values")
        return self._then(lambda ks: ks.map_values(fn), self._key, value)

    def flat_map_values(self, fn: Callable[[Any], Iterable[Any]], value_serde: SerdeLike = None) -> AgentStream:
        """One value per item of `fn(value)`; their serde as for `map_values` (`-> list[str]` means str)."""
        if self._kstream is None:
            return self
        value = self._new_values(value_serde, element_type(result_type(fn)), "flat_map_values")
        return self._then(lambda ks: ks.flat_map_values(fn), self._key, value)

    def _new_values(self, spec: SerdeLike, tp: Any, what: str) -> Carried:
        """What new values carry: the serde given (checked against `tp`) or `tp`'s; unknown when neither is."""
        serde = declared_serde(spec, tp, f"agent {self._agent}: {what} value_serde")
        if serde is None:
            return UNKNOWN
        return Carried(serde, tp if tp is not None else serde_type(serde))

    def group_by(
        self,
        key_fn: Callable[[Any], Any],
        *,
        name: str | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
    ) -> AgentStream:
        """Re-key by `key_fn(value)` through the repartition topic `<application_id>-<name>-repartition`.

        `name` is required with a function; grouping by a Record field (`PageView.user`) names the topic as
        Faust does, `<application_id>-<input topic>-PageView.user-repartition`. Serdes follow the data (see the
        module docstring); give `key_serde`/`value_serde` to override.
        """
        if self._kstream is None:
            return self
        if name is None:
            if not isinstance(key_fn, FieldDescriptor):
                raise TopologyError(
                    f"agent {self._agent}: group_by with a function needs name=..., which names its repartition topic"
                )
            name = f"{self._source}-{key_fn.model.__name__}.{key_fn.name}"
        where = f"agent {self._agent}: group_by {name!r}"
        if isinstance(key_fn, FieldDescriptor) and is_model(self._value.type):
            if not issubclass(self._value.type, key_fn.model):
                raise TopologyError(
                    f"{where}: {key_fn.model.__name__}.{key_fn.name} is a field of {key_fn.model.__name__}, "
                    f"but the stream carries {self._value.type.__name__} values"
                )
        key_type = result_type(key_fn)
        keys = declared_serde(key_serde, key_type, f"{where} key_serde")
        if keys is None:
            keys = self._key.serde if self._key.serde is not None else StringSerde()
        values = declared_serde(value_serde, self._value.type, f"{where} value_serde")
        if values is None:
            values = self._value.serde if self._value.serde is not None else JsonSerde()
        select = group_key_selector(key_fn, where)
        nxt = self._then(
            lambda ks: ks.select_key(lambda _k, v: select(v)).repartition(name, key_serde=keys, value_serde=values),
            Carried(keys, key_type),
            Carried(values, self._value.type),
        )
        nxt.rekeyed = True
        return nxt

    def join(
        self,
        other: Joinable,
        joiner: Callable[[Any, Any], Any] | None = None,
        *,
        key: Callable[[Any], Any] | None = None,
        within: Seconds | JoinWindows | None = None,
        grace: Seconds | None = None,
        name: str | None = None,
    ) -> AgentStream:
        """Join each record with a table or another stream (Kafka Streams' inner joins; see `agent_joins`).

        Values become `(value, other_value)`, or `joiner(value, other_value)`. A table (`app.table(topic)`)
        is looked up by the record's key; a global table (`app.GlobalTable`, `builder.global_table`) by
        `key(value)`, else the record's key; another stream (`app.topic(...)`, a `KStream`) joins the records
        of the same key at most `within` seconds apart (or `JoinWindows`), `grace` seconds late at most.
        A record without a partner is dropped. `name` names the join's processors (and a stream join's stores).
        """
        return self._join("join", other, joiner, key, within, grace, name)

    def left_join(
        self,
        other: Joinable,
        joiner: Callable[[Any, Any], Any] | None = None,
        *,
        key: Callable[[Any], Any] | None = None,
        within: Seconds | JoinWindows | None = None,
        grace: Seconds | None = None,
        name: str | None = None,
    ) -> AgentStream:
        """As `join`, but a record without a partner comes through with None: at once for a table, and for a
        stream once its window has closed (stream time past its end plus `grace`), as Kafka Streams does."""
        return self._join("left_join", other, joiner, key, within, grace, name)

    def outer_join(
        self,
        other: TopicRef | KStream,
        joiner: Callable[[Any, Any], Any] | None = None,
        *,
        within: Seconds | JoinWindows | None = None,
        grace: Seconds | None = None,
        name: str | None = None,
    ) -> AgentStream:
        """A windowed stream-stream join in which the unmatched records of both streams come through, with
        None for the missing side, once their windows close (`(None, other_value)` for the other stream's)."""
        return self._join("outer_join", other, joiner, None, within, grace, name)

    def _join(
        self,
        how: str,
        other: Any,
        joiner: Callable[[Any, Any], Any] | None,
        key: Callable[[Any], Any] | None,
        within: Seconds | JoinWindows | None,
        grace: Seconds | None,
        name: str | None,
    ) -> AgentStream:
        if self._kstream is None:
            return self
        where = f"agent {self._agent}: {how}"
        check_joinable(other, where)
        fn = pair if joiner is None else joiner
        value = UNKNOWN if joiner is None else self._new_values(None, result_type(joiner), how)
        make: Callable[[KStream], KStream]
        if isinstance(other, KTable | GlobalTable | GlobalKTable):
            if how == "outer_join":
                raise TopologyError(f"{where}: a stream joins a table with join or left_join")
            if within is not None or grace is not None:
                raise TopologyError(f"{where}: within= and grace= are for stream-stream joins")
            left = how == "left_join"
            if isinstance(other, KTable):
                if key is not None:
                    raise TopologyError(
                        f"{where}: a table is joined on the record's key: group_by(...) first to join on another"
                    )
                make = lambda ks: (ks.left_join if left else ks.join)(other, fn, name=name)  # noqa: E731
            else:
                table, selector = global_ktable(other, where), table_key_selector(key)
                make = lambda ks: (ks.left_join if left else ks.join)(table, selector, fn, name=name)  # noqa: E731
        else:
            if key is not None:
                raise TopologyError(f"{where}: streams are joined on their keys: group_by(...) first, not key=")
            windows = join_windows(within, grace, where)
            other_stream, other_values = self._other_stream(other, where)
            joined = StreamJoined.with_(
                value_serde=self._value.serde if self._value.serde is not None else JsonSerde(),
                other_value_serde=other_values,
            )
            if name is not None:
                joined = joined.with_name(name).with_store_name(name)
            make = lambda ks: getattr(ks, how)(other_stream, fn, windows, stream_joined=joined)  # noqa: E731
        return self._then(make, self._key, value)

    def _other_stream(self, other: TopicRef | KStream, where: str) -> tuple[KStream, SerdeLike]:
        """The other side of a stream-stream join, and the serde its values are kept with in the join's store."""
        if isinstance(other, KStream):
            return other, None  # the stream's own
        if self._source_of is None:
            raise TopologyError(f"{where}: topic {other.name} can only be joined in an App's agent")
        return self._source_of(other), other.value_serde

    def items(self) -> AgentStream:
        """Iterate `(key, value)` pairs instead of values."""
        if self._kstream is None:
            self.with_keys = True
            return self
        nxt = AgentStream(
            self._kstream, self._recorder, self._key, self._value, self._agent, self._source, self._source_of
        )
        nxt.with_keys = True
        nxt.rekeyed = self.rekeyed
        return nxt

    def __aiter__(self) -> AgentStream:
        if self._recorder is not None:
            self._recorder.append(self)
        return self

    def __anext__(self) -> NextRecord:
        return NextRecord()
