"""`streamlet experiment sweep`'s Spark job: scenarios simulated on the executors, aggregated by Spark.

The driver expands the sweep file into scenario specs (small JSON dicts) and parallelizes them; each executor
runs the pure simulation (`streamlet.experiments.sweep_simulation`) on its share, so a sweep spreads over a
cluster's cores. The per-scenario rows stay in Spark: percentiles, the worst scenarios and the "strictly worst"
counts are computed there, and only those aggregated rows come back to the driver, so the driver's memory
does not grow with the sweep. Executors must be able to import streamlet (same install on every worker).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streamlet.experiments.sweep_report import (
    CHURN_AT_LEAST,
    CHURN_FACTOR,
    HATA,
    METRICS,
    PERCENTILES,
    PITFALL_DIMENSIONS,
    PITFALLS,
    ROUNDS_PER_EVENT_ABOVE,
    SKEW_AT_LEAST,
    Distribution,
    PitfallFinding,
    SweepAggregates,
    WorstScenario,
)
from streamlet.experiments.sweep_simulation import run_scenario
from streamlet.experiments.sweep_space import EVENT_KINDS, Scenario, Shard, SweepSpec, expand, selected

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

DEFAULT_SWEEP_MASTER = "local[*]"
#: worst scenarios listed per assignor and metric
WORST_PER_ASSIGNOR = 3
#: specs per Spark task: small enough that a few large scenarios do not leave cores idle at the end
SCENARIOS_PER_SLICE = 8
#: worst situations listed per pitfall
PITFALL_EXAMPLES = 5


def tasks_per_thread_group(scenario: Scenario) -> str:
    """The situation's stateful tasks per thread at deployment, in decades (a pitfall-report dimension)."""
    per_thread = scenario.stateful_tasks / sum(scenario.threads)
    return "<1" if per_thread < 1 else "1-9" if per_thread < 10 else "10-99" if per_thread < 100 else ">=100"


def simulate_rows(specs: Iterable[str], max_rounds: int) -> Iterator[tuple[Any, ...]]:
    """Executor side: one result row per scenario spec (JSON text)."""
    for text in specs:
        scenario = Scenario.from_json(json.loads(text))
        m = run_scenario(scenario, max_rounds)
        yield (
            scenario.situation,
            scenario.assignor,
            scenario.describe(),
            m.rounds,
            m.converged,
            m.moves,
            m.restore_bytes,
            m.skew,
            m.cross_rack,
            m.same_rack_standbys,
            len(scenario.events),
            ",".join(sorted({e.kind for e in scenario.events})),
            scenario.max_warmup_replicas,
            tasks_per_thread_group(scenario),
        )


def scenario_frame(
    spark: SparkSession, spec: SweepSpec, max_size: int | None = None, shard: Shard | None = None
) -> DataFrame:
    """The per-scenario rows as a DataFrame (computed lazily on the executors); with `max_size` or `shard`, only
    the situations `selected` keeps (a subset, for a sweep too big for the machine)."""
    specs = [json.dumps(s.to_json()) for s in expand(spec) if selected(s, max_size, shard)]
    slices = max(1, min(len(specs), -(-len(specs) // SCENARIOS_PER_SLICE)))
    max_rounds = spec.max_rounds
    rdd = spark.sparkContext.parallelize(specs, slices).mapPartitions(lambda it: simulate_rows(it, max_rounds))
    return spark.createDataFrame(rdd, row_schema())


def write_rows(frame: DataFrame, path: Path) -> DataFrame:
    """Save the per-scenario rows as Parquet at `path` (replacing an earlier run of the same shard) and return
    them read back, so the report of this run aggregates what was saved, simulated once. One file per shard (a
    few hundred rows; small enough to keep in git): a shuffle to one partition, after the simulation, which still
    runs on every executor (`coalesce(1)` would pull the simulation into one task)."""
    frame.repartition(1).write.mode("overwrite").parquet(str(path))
    return read_rows(frame.sparkSession, [path])


def read_rows(spark: SparkSession, paths: Sequence[Path]) -> DataFrame:
    """The rows that shard runs saved (`write_rows`), as one DataFrame."""
    return spark.read.schema(row_schema()).parquet(*(str(p) for p in paths))


def saved_rows_problem(frame: DataFrame, spec: SweepSpec) -> str | None:
    """Why saved rows cannot make `spec`'s report, or None: scenarios of another sweep, or a scenario twice
    (shards of two different N overlap)."""
    from pyspark.sql import functions as F

    foreign = frame.where((F.col("situation") >= spec.situations) | ~F.col("assignor").isin(*spec.assignors)).count()
    if foreign:
        return f"{foreign} scenarios are not of this sweep file (another sweep's rows in the same directory?)"
    duplicates = frame.count() - frame.select("situation", "assignor").distinct().count()
    if duplicates:
        return f"{duplicates} scenarios appear in more than one shard (shards of different counts overlap)"
    return None


def row_schema() -> StructType:
    from pyspark.sql.types import (
        BooleanType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    return StructType(
        [
            StructField("situation", IntegerType(), False),
            StructField("assignor", StringType(), False),
            StructField("scenario", StringType(), False),
            StructField("rounds", IntegerType(), False),
            StructField("converged", BooleanType(), False),
            StructField("moves", IntegerType(), False),
            StructField("restore_bytes", LongType(), False),
            StructField("skew", IntegerType(), False),
            StructField("cross_rack", IntegerType(), False),
            StructField("same_rack_standbys", IntegerType(), False),
            StructField("events", IntegerType(), False),
            StructField("kinds", StringType(), False),
            StructField("max_warmup_replicas", IntegerType(), False),
            StructField("tasks_per_thread", StringType(), False),
        ]
    )


def aggregate(frame: DataFrame) -> SweepAggregates:
    """Percentiles, worst scenarios and strictly-worst counts per assignor and metric, computed by Spark."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    frame = frame.cache()
    try:
        percentiles = ", ".join(str(p) for p in PERCENTILES)
        columns = [F.count(F.lit(1)).alias("n"), F.sum(F.when(F.col("converged"), 0).otherwise(1)).alias("nc")]
        for m in METRICS:
            columns.append(F.expr(f"percentile({m}, array({percentiles}))").alias(f"{m}_p"))
            columns.append(F.max(m).alias(f"{m}_max"))
        totals = frame.groupBy("assignor").agg(*columns).collect()
        situations = frame.select(F.countDistinct("situation")).first()
        agg = SweepAggregates(scenarios=sum(r["n"] for r in totals), situations=int(situations[0] if situations else 0))
        for r in totals:
            agg.not_converged[r["assignor"]] = int(r["nc"])
            for m in METRICS:
                p50, p90, p99 = r[f"{m}_p"]
                agg.distributions[(r["assignor"], m)] = Distribution(p50, p90, p99, float(r[f"{m}_max"]))
        by_situation = Window.partitionBy("situation")
        for m in METRICS:
            ranked = frame.withColumn(
                "rank", F.row_number().over(Window.partitionBy("assignor").orderBy(F.desc(m), "situation"))
            ).where(F.col("rank") <= WORST_PER_ASSIGNOR)
            for r in ranked.orderBy("assignor", "rank").collect():
                agg.worst.setdefault((r["assignor"], m), []).append(
                    WorstScenario(r["situation"], r["scenario"], float(r[m]))
                )
            top = frame.withColumn("top", F.max(m).over(by_situation)).where(F.col(m) == F.col("top"))
            strictly = top.withColumn("ties", F.count(F.lit(1)).over(by_situation)).where(F.col("ties") == 1)
            for r in strictly.groupBy("assignor").count().collect():
                agg.worst_counts[(r["assignor"], m)] = int(r["count"])
        agg.pitfalls = pitfalls(frame)
        return agg
    finally:
        frame.unpersist()


def run_sweep(
    spark: SparkSession,
    spec: SweepSpec,
    max_size: int | None = None,
    shard: Shard | None = None,
    rows: Path | None = None,
) -> SweepAggregates:
    """Simulate and aggregate; with `rows`, the per-scenario rows are saved there too (Parquet)."""
    frame = scenario_frame(spark, spec, max_size, shard)
    return aggregate(frame if rows is None else write_rows(frame, rows))


def pitfalls(frame: DataFrame) -> dict[str, PitfallFinding]:
    """Seed 000's pitfalls (`streamlet.experiments.sweep_report.PITFALL_RULES`): HATA's row of each situation
    against the best row on the same situation, counted per group of the space by Spark; {} without HATA."""
    from pyspark.sql import functions as F

    best = frame.groupBy("situation").agg(F.min("skew").alias("best_skew"), F.min("moves").alias("best_moves"))
    hata = frame.where(F.col("assignor") == HATA).join(best, "situation")
    conditions = {
        "skew": (F.col("skew") >= SKEW_AT_LEAST) & (F.col("skew") > F.col("best_skew")),
        "churn": (F.col("moves") >= CHURN_FACTOR * F.col("best_moves"))
        & (F.col("moves") >= F.col("best_moves") + CHURN_AT_LEAST),
        "rounds": (F.col("rounds") > ROUNDS_PER_EVENT_ABOVE * F.col("events")) | ~F.col("converged"),
    }
    severity = {"skew": "skew", "churn": "moves", "rounds": "rounds"}
    flags = hata.select(
        "situation",
        "scenario",
        "kinds",
        *PITFALL_DIMENSIONS[1:],
        *severity.values(),
        *(F.when(c, 1).otherwise(0).alias(f"p_{name}") for name, c in conditions.items()),
    ).cache()
    try:
        sums = [F.count(F.lit(1)).alias("n"), *(F.sum(f"p_{name}").alias(name) for name in PITFALLS)]
        total = flags.agg(*sums).first()
        if total is None or not total["n"]:
            return {}
        groups: list[tuple[str, str, Any]] = []
        for kind in EVENT_KINDS:
            row = flags.where(F.array_contains(F.split("kinds", ","), kind)).agg(*sums).first()
            if row is not None and row["n"]:
                groups.append(("events", kind, row))
        for dimension in PITFALL_DIMENSIONS[1:]:
            groups += [(dimension, str(r[dimension]), r) for r in flags.groupBy(dimension).agg(*sums).collect()]
        found = {}
        for name in PITFALLS:
            worst = (
                flags.where(F.col(f"p_{name}") == 1)
                .orderBy(F.desc(severity[name]), "situation")
                .limit(PITFALL_EXAMPLES)
                .collect()
            )
            found[name] = PitfallFinding(
                hits=int(total[name] or 0),
                situations=int(total["n"]),
                by_group={(dim, group): (int(r[name] or 0), int(r["n"])) for dim, group, r in groups},
                examples=[WorstScenario(r["situation"], r["scenario"], float(r[severity[name]])) for r in worst],
            )
        return found
    finally:
        flags.unpersist()
