"""Runs the report's Spark job over run directories (or the runs' topics) and writes report.html, summary.json.

The job runs on `local[*]` by default, or on a cluster with `master` (`spark://host:7077`, `yarn`, ...). On a
cluster, the executors read the run dir's files, so the run dir must be on storage they all see (a shared
file system), or read the topics with `from_kafka`. A run whose events cannot be read is still reported,
with the problem named; only a Spark that cannot start at all is an error.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from streamlet.assignment.history import assignment_history_topic
from streamlet.experiments.html_report import RunView, build_summary, render_html
from streamlet.experiments.report import RunSummary, client_names, summarize
from streamlet.runtime.metrics_event import metrics_topic
from streamlet.spark import SparkSetupError
from streamlet.spark.experiment_events import aggregate_metrics, collect_lines, lines_from_file, lines_from_topic
from streamlet.spark.session import get_spark

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_REPORT_MASTER = "local[*]"


def _from_topics(spark: SparkSession, bootstrap: str, summary: RunSummary) -> tuple[RunSummary, DataFrame | None]:
    """The run re-read from its topics: the summary of the topic's assignment events, and the metrics lines."""
    application_id = (summary.record or {}).get("application_id")
    if not application_id:
        summary.problems.append("run.json names no application_id: read the run dir's files, not the topics")
        return summary, None
    assignments = collect_lines(lines_from_topic(spark, bootstrap, assignment_history_topic(application_id)))
    metrics = lines_from_topic(spark, bootstrap, metrics_topic(application_id))
    # the per-client totals are the report module's (pure, over the lines); Spark aggregates the same frame
    topical = summarize(summary.label, summary.record, assignments or None, collect_lines(metrics))
    topical.notes.append(f"events read from the topics on {bootstrap}")
    return topical, metrics


def analyse(
    run_dirs: Sequence[Path],
    summaries: Sequence[RunSummary],
    *,
    master: str | None = None,
    from_kafka: str | None = None,
) -> list[RunView]:
    """Spark's aggregates for each run, next to its summary (the session stays up for the caller to stop)."""
    master = master or os.environ.get("STREAMLET_SPARK_MASTER") or DEFAULT_REPORT_MASTER
    spark: SparkSession | None = None
    if from_kafka:
        try:
            spark = get_spark(master, kafka=True, app_name="streamlet-experiment-report")
        except SparkSetupError as exc:
            print(f"streamlet: Spark's Kafka source is unavailable ({exc}); reading the run dirs", file=sys.stderr)
            from_kafka = None
    if spark is None:
        spark = get_spark(master, kafka=False, app_name="streamlet-experiment-report")
    views: list[RunView] = []
    for run_dir, summary in zip(run_dirs, summaries, strict=True):
        lines: DataFrame | None = None
        if from_kafka:
            try:
                summary, lines = _from_topics(spark, from_kafka, summary)
            except Exception as exc:  # e.g. the topics are gone (retention): the run dir still has the events
                summary.problems.append(f"could not read the topics on {from_kafka} ({exc}); read the run dir")
        if lines is None and (run_dir / "metrics.jsonl").is_file():
            lines = lines_from_file(spark, (run_dir / "metrics.jsonl").resolve())
        aggregates = None
        if lines is not None:
            try:
                aggregates = aggregate_metrics(spark, lines, summary.rounds, client_names(summary.record))
            except Exception as exc:  # one run's unreadable events must not hide the others
                summary.problems.append(f"Spark could not aggregate the metrics events: {exc}")
        views.append(RunView(summary, aggregates))
    return views


def write_html_report(
    run_dirs: Sequence[Path],
    summaries: Sequence[RunSummary],
    out: Path,
    *,
    master: str | None = None,
    from_kafka: str | None = None,
) -> tuple[Path, Path]:
    """Analyse the runs and write `out/report.html` and `out/summary.json`; returns their paths."""
    views = analyse(run_dirs, summaries, master=master, from_kafka=from_kafka)
    out.mkdir(parents=True, exist_ok=True)
    html, summary = out / "report.html", out / "summary.json"
    html.write_text(render_html(views))
    summary.write_text(json.dumps(build_summary(views), indent=1) + "\n")
    return html, summary
