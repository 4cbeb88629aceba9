"""The report's Spark job on hand-made metrics events: throughput, load, lag, pauses and restores (no Kafka).

Expected numbers are worked out by hand below from the events (origin 1000 ms, one-second buckets; rounds
at 1000, 2000, 3000 and 4000 ms from the seed's events).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from streamlet.experiments.report import summarize
from tests.unit.experiments.test_report import RECORD, SEED

pytest.importorskip("pyspark")
pytestmark = pytest.mark.integration  # a Spark JVM in local mode

from streamlet.experiments.cli import read_run_dir  # noqa: E402
from streamlet.spark.experiment_events import aggregate_metrics  # noqa: E402
from streamlet.spark.experiment_report import write_html_report  # noqa: E402
from streamlet.spark.session import cached_connector_jars, get_spark  # noqa: E402

A, B = RECORD["clients"]["A"]["process_id"], RECORD["clients"]["B"]["process_id"]
NAMES = {A: "A", B: "B"}


def _metrics(
    pid: str, seq: int, ts: int, records: int, paused_ms: float, lags=(), restored=(), restored_bytes=None
) -> str:
    event: dict[str, Any] = {
        "type": "streamlet.metrics",
        "version": 1 if restored_bytes is None else 2,
        "process_id": pid,
        "timestamp_ms": ts,
        "sequence": seq,
        "interval_ms": 1000,
        "records_processed": records,
        "tasks": {
            ("1_0" if pid == A else "1_2"): {"state": "RUNNING", "records_processed": 0, "not_running_ms": paused_ms}
        },
        "consumer_lag": [{"topic": "in", "partition": p, "lag": lag} for p, lag in enumerate(lags)],
        "restored_total": [{"store": "counts", "topic": "cl", "partition": p, "records": n} for p, n in restored],
    }
    if restored_bytes is not None:  # version 2
        event["restored_bytes_total"] = [
            {"store": "counts", "topic": "cl", "partition": p, "bytes": n} for p, n in restored_bytes
        ]
    return json.dumps(event)


LINES = [
    _metrics(A, 1, 1500, 100, 0.0, lags=(5, 2)),
    _metrics(B, 1, 1600, 50, 0.0, lags=(4,)),
    "{not json",
    json.dumps({"type": "streamlet.metrics", "version": 99, "process_id": A, "timestamp_ms": 1700}),
    _metrics(A, 2, 2500, 250, 300.0, lags=(1,)),
    _metrics(B, 2, 2600, 80, 200.0, restored=[(2, 10)], restored_bytes=[(2, 300)]),
    # A started over (and was upgraded: version 2 events from here on): its counts begin again
    _metrics(A, 1, 3500, 30, 100.0, restored=[(0, 70)], restored_bytes=[(0, 2100)]),
    _metrics(B, 3, 3600, 80, 700.0, restored=[(2, 25)], restored_bytes=[(2, 750)]),
]


@pytest.fixture(scope="module")
def spark():
    return get_spark(kafka=cached_connector_jars() is not None)


def test_series_pauses_and_restores_per_round(spark) -> None:
    rounds = summarize("hata", RECORD, SEED).rounds
    frame = spark.createDataFrame([(line,) for line in LINES], "value string")
    agg = aggregate_metrics(spark, frame, rounds, NAMES)
    assert agg is not None
    assert (agg.origin_ms, agg.bucket_s, agg.events) == (1000, 1.0, 6)  # two lines are not events
    # deltas: A 100, 150, then 30 (a restart counts whole); B 50, 30, 0
    assert agg.throughput == [(1.0, 150.0), (2.0, 180.0), (3.0, 30.0)]
    assert agg.load == {"A": [(1.0, 100.0), (2.0, 150.0), (3.0, 30.0)], "B": [(1.0, 50.0), (2.0, 30.0), (3.0, 0.0)]}
    assert agg.lag == [(1.0, 11), (2.0, 1), (3.0, 0)]  # A 5+2 and B 4; then A's 1; then none
    # not-RUNNING deltas in the round whose window holds the event: [2000, 3000) is round 2, [3000, 4000) round 3
    assert agg.pauses == [(2, "1_0", 0.3), (2, "1_2", 0.2), (3, "1_0", 0.1), (3, "1_2", 0.5)]
    assert agg.restored_recorded and agg.restored == {(3, "A", 0): 70, (2, "B", 2): 10, (3, "B", 2): 15}
    # bytes: B 300 then 750 - 300; A's first count after its restart whole
    assert agg.restored_bytes_recorded and agg.restored_bytes == {(3, "A", 0): 2100, (2, "B", 2): 300, (3, "B", 2): 450}


def test_no_event_no_aggregates_and_old_events_say_restores_are_unknown(spark) -> None:
    rounds = summarize("hata", RECORD, SEED).rounds
    empty = spark.createDataFrame([("{not json",)], "value string")
    assert aggregate_metrics(spark, empty, rounds, NAMES) is None
    old = json.loads(LINES[0])
    del old["restored_total"]
    agg = aggregate_metrics(spark, spark.createDataFrame([(json.dumps(old),)], "value string"), rounds, NAMES)
    assert agg is not None and not agg.restored_recorded and agg.restored == {}
    assert not agg.restored_bytes_recorded and agg.restored_bytes == {}
    assert agg.throughput == [(1.0, 100.0)]


def test_a_partial_run_dir_reports_what_is_missing_and_the_rest(spark, tmp_path) -> None:
    run_dir = tmp_path / "crashed"
    run_dir.mkdir()  # no run.json, no metrics.jsonl, a truncated last event
    (run_dir / "assignments.jsonl").write_text("\n".join(SEED[:3]) + "\n" + SEED[3][:40] + "\n")
    html, summary = write_html_report([run_dir], [read_run_dir(run_dir)], tmp_path / "out")
    [run] = json.loads(summary.read_text())["runs"]
    assert [r["round"] for r in run["rounds"]] == [1, 2, 3] and run["series"] is None
    problems = " ".join(run["problems"])
    assert "run.json is missing" in problems and "metrics.jsonl is missing" in problems
    assert "event line 4: not JSON" in problems
    page = html.read_text()
    assert page.count('<table class="round" data-round=') == 3 and "no readable metrics event" in page
