"""GlobalKTables of the DSL (Kafka Streams' `StreamsBuilder#globalTable`, `GlobalKTableImpl`).

A global table is a full copy of its topic on every client: its source and store form a node group of their
own that takes a sub-topology id but generates no tasks (`describe()` prints it "for global store"). The
store is not change-logged: the source topic is its changelog, restored before processing starts and then
followed by the client's global thread (`streamlet.runtime.global_stream_thread`). Streams join it through a
key selector, with no repartition and no co-partitioning (`KStreamGlobalKTableJoin`). `StreamsBuilder.global_table`
(`streamlet.topology.builder`) makes them; `streamlet.topology.joins` joins streams with them.
"""

from __future__ import annotations

from typing import Any

from streamlet.serdes import Serde

#: Kafka names a global join KSTREAM-LEFTJOIN- whether it is a join or a left join (`doGlobalTableJoin`).
GLOBAL_JOIN_NAME = "KSTREAM-LEFTJOIN-"


class GlobalKTable:
    """A table of the latest value per key of a whole topic, on every client: join streams with it
    (`KStream.join(global_table, key_selector, joiner)`); its store is `store_name`."""

    __slots__ = ("_builder", "_store_name", "_topic", "_key_serde", "_value_serde")

    def __init__(self, builder: Any, store_name: str, topic: str, key_serde: Serde, value_serde: Serde) -> None:
        self._builder = builder  # the _InternalBuilder it belongs to
        self._store_name = store_name
        self._topic = topic
        self._key_serde = key_serde
        self._value_serde = value_serde

    @property
    def store_name(self) -> str:
        """The global store's name (Kafka's `queryableStoreName`)."""
        return self._store_name

    @property
    def topic(self) -> str:
        return self._topic

    def __repr__(self) -> str:
        return f"GlobalKTable({self._topic}, store={self._store_name})"
