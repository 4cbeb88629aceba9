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

from streamlet.errors import TopologyError
from streamlet.models import FieldDescriptor
from streamlet.serdes import JsonSerde, SerdeLike, StringSerde
from streamlet.topic_ref import Carried, declared_serde
from streamlet.topology import KStream
from streamlet.typed_serdes import element_type, is_model, result_type, serde_type

__all__ = ["NEXT", "AgentStream", "NextRecord"]

NEXT = object()  # what an agent's coroutine yields when it waits for the next record
UNKNOWN = Carried(None)


class NextRecord:
    """What `await stream.__anext__()` awaits: it yields NEXT, and the driver sends the record back in."""

    __slots__ = ()

    def __await__(self) -> Generator[object, Any, Any]:
        item = yield NEXT
        return item


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
    ) -> None:
        self._kstream = kstream
        self._recorder = recorder
        self._key = key
        self._value = value
        self._agent = agent
        self._source = source  # the input topic, which names a group_by's topic when none is given
        self.with_keys = False
        self.rekeyed = False  # a repartition topic lies between the input topic and this stream

    def _then(self, make: Callable[[KStream], KStream], key: Carried, value: Carried) -> AgentStream:
        if self._kstream is None:  # running inside a task
            return self
        nxt = AgentStream(make(self._kstream), self._recorder, key, value, self._agent, self._source)
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
        nxt = self._then(
            lambda ks: ks.select_key(lambda _k, v: key_fn(v)).repartition(name, key_serde=keys, value_serde=values),
            Carried(keys, key_type),
            Carried(values, self._value.type),
        )
        nxt.rekeyed = True
        return nxt

    def items(self) -> AgentStream:
        """Iterate `(key, value)` pairs instead of values."""
        if self._kstream is None:
            self.with_keys = True
            return self
        nxt = AgentStream(self._kstream, self._recorder, self._key, self._value, self._agent, self._source)
        nxt.with_keys = True
        nxt.rekeyed = self.rekeyed
        return nxt

    def __aiter__(self) -> AgentStream:
        if self._recorder is not None:
            self._recorder.append(self)
        return self

    def __anext__(self) -> NextRecord:
        return NextRecord()
