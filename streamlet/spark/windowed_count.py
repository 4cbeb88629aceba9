"""A windowed count's ground truth as a Spark batch job, and its check against an emit-final output topic.

The input topic holds JSON records; each counts once in the tumbling window of its Kafka timestamp (Kafka's
epoch-aligned `[start, start + size)`) under the value of one of its fields (`user` in
`examples/pageviews/windowed.py` and `windowed_faust.py`). The output topic holds what emit-final wrote:
`TimeWindowedSerde` keys (UTF-8 key, then the window start as an 8-byte big-endian long) and 8-byte counts.
Emit-final writes each closed window exactly once, so the check is strict: every window that closed
(`start + size <= closed_before`) must be in the output once, with the batch job's count; a window written
twice, a wrong count, or a window with no count is a mismatch. Windows that had not closed are not compared.

    python -m streamlet.spark.windowed_count --bootstrap-servers B --input-topic page-views \\
        --output-topic page-views-per-minute --size-ms 60000 --field user --closed-before MS

exits 0 when the output agrees, 1 with every mismatch printed, 2 on an error.
"""

from __future__ import annotations

import argparse
import collections
import struct
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamlet.spark.session import require_pyspark
from streamlet.spark.wordcount import decode_utf8_column, read_topic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: (key, window start in ms)
WindowKey = tuple[str, int]


def ground_truth_windowed_counts(
    spark: SparkSession, bootstrap: str, input_topic: str, size_ms: int, field: str
) -> dict[WindowKey, int]:
    """Records per (value of `field`, window start) over the whole input topic (committed records only)."""
    require_pyspark()
    from pyspark.sql import functions as F

    records = read_topic(spark, bootstrap, input_topic)
    keyed = records.where(F.col("value").isNotNull()).select(
        F.get_json_object(decode_utf8_column("value"), f"$.{field}").alias("key"),
        F.unix_millis(F.col("timestamp")).alias("ms"),
    )
    windows = keyed.where(F.col("key").isNotNull()).select(
        "key", (F.floor(F.col("ms") / size_ms) * size_ms).cast("long").alias("start")
    )
    return {
        (row["key"], int(row["start"])): int(row["count"]) for row in windows.groupBy("key", "start").count().collect()
    }


def emitted_windowed_counts(spark: SparkSession, bootstrap: str, output_topic: str) -> dict[WindowKey, list[int]]:
    """Every count the output topic holds per window, in offset order per partition."""
    require_pyspark()
    rows = read_topic(spark, bootstrap, output_topic).select("key", "value", "partition", "offset").collect()
    out: dict[WindowKey, list[int]] = collections.defaultdict(list)
    for row in sorted(rows, key=lambda r: (r["partition"], r["offset"])):
        key, value = bytes(row["key"]), bytes(row["value"])
        (start,) = struct.unpack(">q", key[-8:])
        out[(key[:-8].decode(), start)].append(struct.unpack(">q", value)[0])
    return dict(out)


@dataclass(frozen=True)
class WindowMismatch:
    window: WindowKey
    expected: int | None
    emitted: tuple[int, ...]

    def __str__(self) -> str:
        key, start = self.window
        return f"{key!r} window {start}: expected {self.expected}, emitted {list(self.emitted) or 'nothing'}"


def compare_windows(
    truth: Mapping[WindowKey, int], emitted: Mapping[WindowKey, Sequence[int]], size_ms: int, closed_before: int
) -> list[WindowMismatch]:
    """Each closed window whose output is not exactly one record with its true count, sorted."""
    closed = {w for w in truth.keys() | emitted.keys() if w[1] + size_ms <= closed_before}
    mismatches = [
        WindowMismatch(w, truth.get(w), tuple(emitted.get(w, ())))
        for w in closed
        if list(emitted.get(w, ())) != ([truth[w]] if w in truth else [])
    ]
    return sorted(mismatches, key=lambda m: m.window)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m streamlet.spark.windowed_count", description=__doc__)
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--input-topic", required=True)
    parser.add_argument("--output-topic", required=True)
    parser.add_argument("--size-ms", type=int, required=True)
    parser.add_argument("--field", required=True, help="the JSON field the input is counted by")
    parser.add_argument("--closed-before", type=int, required=True, help="windows ending by this time (ms) closed")
    args = parser.parse_args(argv)
    try:
        from streamlet.spark.session import get_spark

        spark = get_spark()
        truth = ground_truth_windowed_counts(spark, args.bootstrap_servers, args.input_topic, args.size_ms, args.field)
        emitted = emitted_windowed_counts(spark, args.bootstrap_servers, args.output_topic)
    except Exception as exc:  # Spark's, py4j's and ours: one line, no JVM stack trace
        print(f"error: {type(exc).__name__}: {str(exc).strip().splitlines()[:1]}", file=sys.stderr)
        return 2
    mismatches = compare_windows(truth, emitted, args.size_ms, args.closed_before)
    closed = sum(1 for _, start in truth if start + args.size_ms <= args.closed_before)
    for mismatch in mismatches:
        print(mismatch)
    print(f"{closed} closed windows, {sum(truth.values())} input records, {len(mismatches)} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
