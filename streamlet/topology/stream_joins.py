"""KStream-KStream joins of the DSL: names and stores (Kafka Streams' `KStreamImplJoin`).

A join of `this` and `other` is five processors: each stream feeds a `KSTREAM-WINDOWED-` node that forwards
its record and then keeps it in its side's window store; a `KSTREAM-JOINTHIS-` (or `-OUTERTHIS-`) node joins
this stream's records with the other side's store, a `KSTREAM-JOINOTHER-` (`-OUTEROTHER-`) node the other way
round, and a `KSTREAM-MERGE-` node passes both results on. A left or outer join adds a key-value store shared
by both sides (`KSTREAM-OUTERSHARED-<n>-store`) where unmatched records wait until their window closes.

Names take counter values exactly as Kafka's do: both windowed names, both generated join names (always,
even when the join is named), then the merge name; stores are named after the generated join names, or after
`StreamJoined.store_name`. The graph wiring is in `streamlet.topology.builder`; the processors in
`streamlet.runtime.stream_join`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from streamlet.serdes import BytesSerde, Serde
from streamlet.topology.branch import MERGE_NAME
from streamlet.topology.join_windows import JoinWindows
from streamlet.topology.nodes import StoreSpec, validate_name

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
