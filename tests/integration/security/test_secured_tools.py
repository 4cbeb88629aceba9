"""The `streamlet` commands (topics, produce, consume, status) and the experiment runner on the SASL_SSL broker,
configured only through the environment `streamlet broker start --security sasl_ssl` prints; and each SASL
mechanism the broker enables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streamlet.kafka import connect
from streamlet.kafka.broker import BrokerStatus
from tests.integration.security.test_secured_wordcount import client_settings, security_of
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.workers import ROOT

pytestmark = pytest.mark.integration


def _streamlet(broker: BrokerStatus, *args: str, stdin: str = "", timeout: float = 60) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **broker.client_settings()}
    done = subprocess.run(
        [sys.executable, "-m", "streamlet.cli", *args],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_topics_produce_and_consume_commands(sasl_ssl_broker: BrokerStatus) -> None:
    topic = unique_name("secured-cli")
    _streamlet(sasl_ssl_broker, "topics", "create", topic, "--partitions", "1")
    _streamlet(sasl_ssl_broker, "produce", topic, "--key-separator", ":", stdin="k1:one\nk2:two\n")
    out = _streamlet(sasl_ssl_broker, "consume", topic, "--idle-timeout", "2", "--max-records", "2")
    assert out.splitlines() == ["k1\tone", "k2\ttwo"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_each_sasl_mechanism(sasl_ssl_broker: BrokerStatus, mechanism: str) -> None:
    settings = {**client_settings(sasl_ssl_broker), "sasl_mechanism": mechanism}
    cluster = connect.Cluster(sasl_ssl_broker.bootstrap_servers, security_of(settings))
    kafka = KafkaTestCluster(cluster.bootstrap_servers, cluster.security)
    await kafka.start()
    try:
        topic = await kafka.create_topic("mechanism")
        await kafka.produce(topic, [(b"k", mechanism.encode())])
        assert [r.value for r in await kafka.drain(topic, 1)] == [mechanism.encode()]
    finally:
        await kafka.close()


def test_the_experiment_runner(sasl_ssl_broker: BrokerStatus, tmp_path: Path) -> None:
    scenario = tmp_path / "secured.toml"
    scenario.write_text(
        """[experiment]
name = "secured"

[app]
target = "examples.wordcount.app:app"
env = { WORDCOUNT_INPUT_TOPIC = "{input_topic}", WORDCOUNT_OUTPUT_TOPIC = "{output_topic}", \
WORDCOUNT_APPLICATION_ID = "{application_id}" }

[app.config]
commit_interval_ms = 500
metrics_interval_ms = 1000

[input]
generator = "words"
lines = 100
rate = 100

[[step]]
action = "start"
clients = ["A"]
threads = 1

[[step]]
action = "wait_stable"
timeout = 60
"""
    )
    run_dir = tmp_path / "run"
    began = time.monotonic()
    _streamlet(
        sasl_ssl_broker,
        "experiment",
        "run",
        str(scenario),
        "--run-dir",
        str(run_dir),
        "--bootstrap-servers",
        sasl_ssl_broker.bootstrap_servers,
        timeout=180,
    )
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "passed", record.get("error")
    assert record["verification"]["ok"], record["verification"]
    assert (run_dir / "metrics.jsonl").read_text().strip()  # the collector read the secured metrics topic
    assert time.monotonic() - began < 150
    status = _streamlet(sasl_ssl_broker, "status", "--application-id", record["application_id"])
    assert record["application_id"] in status
