"""`streamlet experiment report --from-kafka`: the same report from the run's topics as from its files.

The events are seed 000's hand-made rounds and hand-made metrics events, written to the run dir's files and to
`<application_id>-assignments` / `-metrics` on the real broker; Spark's Kafka source reads the topics.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from streamlet.experiments.cli import read_run_dir
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.unit.experiments.test_report import RECORD, SEED

pytest.importorskip("pyspark")

from streamlet.spark.experiment_report import write_html_report  # noqa: E402
from tests.integration.spark.test_experiment_events import LINES  # noqa: E402

pytestmark = pytest.mark.integration


async def test_the_topics_give_the_report_the_files_give(kafka: KafkaTestCluster, tmp_path: Path) -> None:
    app_id = unique_name("experiment-report")
    run_dir = tmp_path / "hata"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({**RECORD, "application_id": app_id}))
    (run_dir / "assignments.jsonl").write_text("\n".join(SEED) + "\n")
    (run_dir / "metrics.jsonl").write_text("\n".join(LINES) + "\n")
    for suffix, lines in (("assignments", SEED), ("metrics", LINES)):
        topic = await kafka.create_topic(name=f"{app_id}-{suffix}")
        await kafka.produce(topic, [(None, line.encode()) for line in lines])

    def report(out: Path, from_kafka: str | None) -> dict:
        write_html_report([run_dir], [read_run_dir(run_dir)], out, from_kafka=from_kafka)
        return json.loads((out / "summary.json").read_text())

    files = await asyncio.to_thread(report, tmp_path / "files", None)
    topics = await asyncio.to_thread(report, tmp_path / "topics", kafka.bootstrap_servers)
    [from_files], [from_topics] = files["runs"], topics["runs"]
    assert from_topics["notes"] == [f"events read from the topics on {kafka.bootstrap_servers}"]
    assert {**from_topics, "notes": []} == from_files
    # of the four moves, only 1_2 (A -> B in round 3) was followed by a restore of its partition on its destination
    assert len(from_files["rounds"]) == 4 and from_files["restored_records_for_moves"] == 15
    assert from_files["restored_bytes_for_moves"] == 450  # B's restored_bytes_total 750 in round 3 after 300
    assert from_files["series"]["throughput"] == [[1.0, 150.0], [2.0, 180.0], [3.0, 30.0]]
