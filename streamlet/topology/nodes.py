"""The static node graph a `Topology` is made of (Kafka Streams' `InternalTopologyBuilder` node factories).

Specs are immutable descriptions: names, wiring, serdes and user functions. `processors.py` turns the specs
of one sub-topology into live processor nodes for each task.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamlet.errors import TopologyError
from streamlet.serdes import Serde
from streamlet.session_windows import SessionWindows
from streamlet.sliding_windows import SlidingWindows
from streamlet.windows import TimeWindows

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


@dataclass(frozen=True, eq=False)
class NodeSpec:
    name: str
    predecessors: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class SourceSpec(NodeSpec):
    topics: tuple[str, ...]  # raw names: internal topics without the application id prefix
    key_serde: Serde
    value_serde: Serde


@dataclass(frozen=True, eq=False)
class SinkSpec(NodeSpec):
    topic: str  # raw name
    key_serde: Serde
    value_serde: Serde


# Processor operations (the `op` of a ProcessorSpec).
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

AGGREGATING_OPS = frozenset({COUNT, REDUCE, AGGREGATE})

#: what `windowed_by` takes: a windowed aggregation's windows, and its store's
Windows = TimeWindows | SlidingWindows | SessionWindows


@dataclass(frozen=True, eq=False)
class ProcessorSpec(NodeSpec):
    op: str
    stores: tuple[str, ...] = ()
    fn: Callable[..., Any] | None = None
    initializer: Callable[[], Any] | None = None  # aggregate only
    windows: Windows | None = None  # a windowed count/reduce/aggregate
    merger: Callable[[Any, Any, Any], Any] | None = None  # a session aggregate only


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
    timestamped: bool = False
    # a window store (WindowKeySchema keys), or with SessionWindows a session store (SessionKeySchema keys)
    windows: Windows | None = None
