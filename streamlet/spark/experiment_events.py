"""The Spark job of `streamlet experiment report`: aggregations over a run's metrics events.

The rounds (assignment events) are few and their numbers (seed 000's table, convergence, moves, skew) are
computed by the pure `report` module, the single source of truth for them; Spark only reads those lines. The
metrics events are many (one per client per interval, for hours on a real cluster), so Spark aggregates them:

* throughput: records processed per second by all clients, per time bucket (one metrics interval);
* load: the same per client (per-client load over time);
* lag: the consumer lag of all input and repartition partitions, per bucket (each client's latest);
* pauses: per task and rebalance round, the seconds the task spent assigned but not RUNNING, as reported
  by the metrics events that followed that rebalance and preceded the next one;
* restored: per round, client and changelog partition, the records restored (`restored_total` deltas) and
  their key + value bytes (`restored_bytes_total` deltas; version 2 events, absent from version 1 ones).

Counts in an event are since its process started; a process that started over (its sequence went back)
contributes its whole count again, as `client_metrics` treats it. Lines come from the run dir's files or
straight from the topics with Spark's Kafka source; both give a DataFrame of JSON strings named `value`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from streamlet.experiments.aggregates import RunAggregates
from streamlet.experiments.report import Round
from streamlet.runtime.metrics_event import EVENT_TYPE, KNOWN_VERSIONS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

#: What the job reads of a metrics event (from_json ignores the rest, and a damaged line gives nulls).
METRICS_SCHEMA = (
    "type STRING, version INT, process_id STRING, timestamp_ms BIGINT, sequence BIGINT, interval_ms BIGINT, "
    "records_processed BIGINT, "
    "tasks MAP<STRING, STRUCT<state: STRING, records_processed: BIGINT, not_running_ms: DOUBLE>>, "
    "consumer_lag ARRAY<STRUCT<topic: STRING, partition: INT, lag: BIGINT>>, "
    "restored_total ARRAY<STRUCT<store: STRING, topic: STRING, partition: INT, records: BIGINT>>, "
    "restored_bytes_total ARRAY<STRUCT<store: STRING, topic: STRING, partition: INT, bytes: BIGINT>>"
)
_FAR_FUTURE_MS = 2**62


def lines_from_file(spark: SparkSession, path: Path) -> DataFrame:
    """A JSON-lines file as a DataFrame of its lines (`value`)."""
    return spark.read.text(str(path))


def lines_from_topic(spark: SparkSession, bootstrap_servers: str, topic: str) -> DataFrame:
    """A topic's record values as strings (`value`), read whole with Spark's Kafka source."""
    return (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .orderBy("partition", "offset")
        .selectExpr("CAST(value AS STRING) AS value")
    )


def collect_lines(frame: DataFrame) -> list[str]:
    """The lines in order (one file or one partition: Spark keeps their order)."""
    return [row.value for row in frame.collect() if row.value is not None]


def _rounds_frame(spark: SparkSession, rounds: Sequence[Round]) -> DataFrame:
    """Each timed round's window: from its event to the next one's (the last one is open-ended)."""
    timed = [r for r in rounds if r.timestamp_ms is not None]
    rows = [
        (r.number, r.timestamp_ms, nxt.timestamp_ms if nxt is not None else _FAR_FUTURE_MS)
        for r, nxt in zip(timed, [*timed[1:], None], strict=True)
    ]
    return spark.createDataFrame(rows, "round INT, start_ms BIGINT, end_ms BIGINT")


def aggregate_metrics(
    spark: SparkSession,
    lines: DataFrame,
    rounds: Sequence[Round],
    names: Mapping[str, str],
    origin_ms: int | None = None,
) -> RunAggregates | None:
    """The time series and per-round numbers of one run (see the module docstring); None without events."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    parsed = lines.select(F.from_json("value", METRICS_SCHEMA).alias("e")).select("e.*")
    events = parsed.where(
        (F.col("type") == EVENT_TYPE)
        & F.col("version").isin(*KNOWN_VERSIONS)
        & F.col("process_id").isNotNull()
        & F.col("timestamp_ms").isNotNull()
    ).cache()
    try:
        bounds = events.agg(
            F.count("*").alias("n"),
            F.min("timestamp_ms").alias("first"),
            F.max("interval_ms").alias("interval"),
            F.count("restored_total").alias("with_restored"),
            F.count("restored_bytes_total").alias("with_restored_bytes"),
        ).first()
        if bounds is None or not bounds.n:
            return None
        first_round = min((r.timestamp_ms for r in rounds if r.timestamp_ms is not None), default=None)
        origin = origin_ms if origin_ms is not None else min(x for x in (bounds.first, first_round) if x is not None)
        bucket_ms = int(bounds.interval or 5000)
        out = RunAggregates(
            origin,
            bucket_ms / 1000.0,
            int(bounds.n),
            restored_recorded=bool(bounds.with_restored),
            restored_bytes_recorded=bool(bounds.with_restored_bytes),
        )

        by_process = Window.partitionBy("process_id").orderBy("timestamp_ms", "sequence")
        restarted = F.lag("sequence").over(by_process).isNull() | (
            F.col("sequence") <= F.lag("sequence").over(by_process)
        )
        steps = events.withColumn("restarted", restarted).withColumn(
            "bucket", F.floor((F.col("timestamp_ms") - F.lit(origin)) / F.lit(bucket_ms))
        )
        processed = steps.withColumn(
            "delta",
            F.when(F.col("restarted"), F.col("records_processed")).otherwise(
                F.col("records_processed") - F.lag("records_processed").over(by_process)
            ),
        ).withColumn(
            "lag_total",
            F.aggregate(F.coalesce("consumer_lag", F.array()), F.lit(0).cast("bigint"), lambda acc, p: acc + p.lag),
        )
        per_client = processed.groupBy("bucket", "process_id").agg(
            F.sum("delta").alias("records"), F.max_by("lag_total", "timestamp_ms").alias("lag")
        )
        rows = per_client.collect()
        seconds = out.bucket_s
        totals: dict[int, list[float]] = {}
        for row in rows:
            t = (row.bucket + 1) * seconds  # a bucket's records were processed up to its end
            name = names.get(row.process_id, row.process_id[:8])
            out.load.setdefault(name, []).append((t, row.records / seconds))
            total = totals.setdefault(row.bucket, [0.0, 0.0])
            total[0] += row.records
            total[1] += row.lag or 0
        for series in out.load.values():
            series.sort()
        out.throughput = [((b + 1) * seconds, v[0] / seconds) for b, v in sorted(totals.items())]
        out.lag = [((b + 1) * seconds, int(v[1])) for b, v in sorted(totals.items())]

        windows = F.broadcast(_rounds_frame(spark, rounds))
        in_round = (F.col("timestamp_ms") >= F.col("start_ms")) & (F.col("timestamp_ms") < F.col("end_ms"))

        tasks = steps.select(
            "process_id", "timestamp_ms", "sequence", "restarted", F.explode("tasks").alias("task", "t")
        ).select("process_id", "timestamp_ms", "sequence", "restarted", "task", F.col("t.not_running_ms").alias("nr"))
        by_task = Window.partitionBy("process_id", "task").orderBy("timestamp_ms", "sequence")
        task_restart = F.col("restarted") | F.lag("nr").over(by_task).isNull()
        paused = tasks.withColumn(
            "delta", F.when(task_restart, F.col("nr")).otherwise(F.col("nr") - F.lag("nr").over(by_task))
        )
        pauses = paused.join(windows, in_round).groupBy("round", "task").agg((F.sum("delta") / 1000.0).alias("s"))
        out.pauses = sorted((r.round, r.task, float(r.s)) for r in pauses.where(F.col("s") > 0).collect())

        if out.restored_recorded:
            out.restored = _restored_per_round(steps, windows, in_round, names, "restored_total", "records")
        if out.restored_bytes_recorded:
            out.restored_bytes = _restored_per_round(steps, windows, in_round, names, "restored_bytes_total", "bytes")
        return out
    finally:
        events.unpersist()


def _restored_per_round(
    steps: DataFrame, windows: DataFrame, in_round: Column, names: Mapping[str, str], column: str, unit: str
) -> dict[tuple[int, str, int], int]:
    """Per (round, client, changelog partition), the deltas of the since-start counts in `column`'s `unit`."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    restores = steps.select("process_id", "timestamp_ms", "sequence", "restarted", F.explode(column).alias("r")).select(
        "process_id",
        "timestamp_ms",
        "sequence",
        "restarted",
        "r.store",
        "r.topic",
        "r.partition",
        F.col(f"r.{unit}").alias("n"),
    )
    by_store = Window.partitionBy("process_id", "store", "topic", "partition").orderBy("timestamp_ms", "sequence")
    first = F.col("restarted") | F.lag("n").over(by_store).isNull()
    restored = restores.withColumn("delta", F.when(first, F.col("n")).otherwise(F.col("n") - F.lag("n").over(by_store)))
    per_round = (
        restored.join(windows, in_round)
        .groupBy("round", "process_id", "partition")
        .agg(F.sum("delta").alias("n"))
        .where(F.col("n") > 0)
    )
    return {
        (row.round, names.get(row.process_id, row.process_id[:8]), row.partition): int(row.n)
        for row in per_round.collect()
    }
