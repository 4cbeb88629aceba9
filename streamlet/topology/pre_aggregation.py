"""Pre-aggregation before a repartition topic (streamlet's own optimisation; Spark calls it partial aggregation).

Without it, a grouped aggregation behind a repartition writes one repartition record per input record: WordCount
sends every word through Kafka and counts it on the other side. With `pre_aggregate=True` (count, reduce) or a
`combiner` (aggregate), the upstream task folds records into one partial aggregate per key, and sends the
partials when the task commits (or when it holds `MAX_PARTIAL_KEYS` keys); the downstream aggregation then
merges partials instead of single values. Final aggregates are the same; intermediate updates are coarser, as
they are with the record cache. A partial carries the largest timestamp of the records it folds, so the
aggregate's timestamp (the largest of its records') is unchanged too.

The `PreAggregation` spec is pure: how to fold a record into a key's partial (`fold`, the processor node's
function), and which downstream operation merges partials (`merge_op`, `merge_fn`, `initializer`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamlet.topology import nodes as n

#: a task sends its partials early once it holds this many keys, bounding its memory between commits
MAX_PARTIAL_KEYS = 10_000

PREAGGREGATE_NAME = "KSTREAM-PREAGGREGATE-"


class _NoPartial:
    """The partial of a key with no record folded in yet (None may be a real partial)."""

    def __repr__(self) -> str:
        return "NO_PARTIAL"


NO_PARTIAL: Any = _NoPartial()


@dataclass(frozen=True, eq=False)
class PreAggregation:
    """`fold(key, partial, value)` folds a record into a key's partial (`NO_PARTIAL` for its first record).

    Downstream, the aggregation becomes `merge_op` with `merge_fn` (and `initializer`, for an aggregate), fed
    with partials.
    """

    fold: Callable[[Any, Any, Any], Any]
    merge_op: str
    merge_fn: Callable[..., Any]
    initializer: Callable[[], Any] | None = None


def _count(key: Any, partial: Any, value: Any) -> int:
    return 1 if partial is NO_PARTIAL else partial + 1


def for_count() -> PreAggregation:
    """Partials are counts; downstream they are summed (a reduce by `+` on int64 values)."""
    return PreAggregation(fold=_count, merge_op=n.REDUCE, merge_fn=operator.add)


def for_reduce(reducer: Callable[[Any, Any], Any]) -> PreAggregation:
    """Partials are reduced values; downstream the same reducer merges them (it must be associative)."""

    def fold(key: Any, partial: Any, value: Any) -> Any:
        return value if partial is NO_PARTIAL else reducer(partial, value)

    return PreAggregation(fold=fold, merge_op=n.REDUCE, merge_fn=reducer)


def for_aggregate(
    initializer: Callable[[], Any],
    aggregator: Callable[[Any, Any, Any], Any],
    combiner: Callable[[Any, Any], Any],
) -> PreAggregation:
    """Partials are aggregates of part of a key's records; downstream `combiner(aggregate, partial)` merges
    them into the stored aggregate, starting from `initializer()` (which must be the combiner's identity)."""

    def fold(key: Any, partial: Any, value: Any) -> Any:
        return aggregator(key, value, initializer() if partial is NO_PARTIAL else partial)

    def merge(key: Any, partial: Any, aggregate: Any) -> Any:
        return combiner(aggregate, partial)

    return PreAggregation(fold=fold, merge_op=n.AGGREGATE, merge_fn=merge, initializer=initializer)


def preaggregate_name(aggregate_processor: str) -> str:
    """`KSTREAM-PREAGGREGATE-<n>` beside a generated `KSTREAM-AGGREGATE-<n>` (no counter value is taken, so
    every other name stays what Kafka Streams would give), else `<name>-preaggregate`."""
    prefix, _, index = aggregate_processor.rpartition("-")
    if prefix.startswith("KSTREAM-") and len(index) == 10 and index.isdigit():
        return PREAGGREGATE_NAME + index
    return aggregate_processor + "-preaggregate"
