"""A wrong password, an untrusted broker certificate and an untrusted client certificate each end a worker's start
with one error naming the client, the broker and the reason, within seconds: no hang, no retry loop."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.errors import ClusterAccessError
from streamlet.kafka.broker import BrokerStatus
from streamlet.runtime.kafka_streams import KafkaStreams
from tests.integration.security.test_secured_wordcount import client_settings
from tests.support.kafka import unique_name
from tests.support.workers import ROOT

pytestmark = pytest.mark.integration

WRONG_PASSWORD = "not-the-password-3141"
BOUND_S = 20.0


async def _start_fails(settings: dict[str, str], tmp_path: Path) -> str:
    config = StreamsConfig.from_mapping({**settings, "application_id": unique_name("bad"), "state_dir": str(tmp_path)})
    client = KafkaStreams(build_topology("never-created-in", "never-created-out"), config)
    began = time.monotonic()
    with pytest.raises(ClusterAccessError) as failure:
        await client.start()
    assert time.monotonic() - began < BOUND_S
    await client.close()
    return str(failure.value)


async def test_a_wrong_password(sasl_ssl_broker: BrokerStatus, tmp_path: Path) -> None:
    settings = client_settings(sasl_ssl_broker)
    del settings["sasl_plain_password_file"]
    message = await _start_fails({**settings, "sasl_plain_password": WRONG_PASSWORD}, tmp_path)
    assert message.startswith(
        f"the admin client cannot connect to {sasl_ssl_broker.bootstrap_servers} "
        "(SASL_SSL, SCRAM-SHA-512 as user 'streamlet'): the broker refused the credentials"
    ), message
    assert "invalid credentials" in message
    assert WRONG_PASSWORD not in message


async def test_a_broker_certificate_signed_by_an_unknown_ca(sasl_ssl_broker: BrokerStatus, tmp_path: Path) -> None:
    settings = client_settings(sasl_ssl_broker)
    other_ca = Path(settings["ssl_cafile"]).with_name("untrusted.pem")  # a certificate of another authority
    message = await _start_fails({**settings, "ssl_cafile": str(other_ca)}, tmp_path)
    assert f"cannot connect to {sasl_ssl_broker.bootstrap_servers}" in message
    assert "the broker's certificate is not trusted" in message and "check ssl_cafile" in message


async def test_a_client_certificate_the_broker_does_not_trust(mtls_broker: BrokerStatus, tmp_path: Path) -> None:
    settings = client_settings(mtls_broker)
    tls = Path(settings["ssl_cafile"]).parent
    untrusted = {"ssl_certfile": str(tls / "untrusted.pem"), "ssl_keyfile": str(tls / "untrusted.key")}
    message = await _start_fails({**settings, **untrusted}, tmp_path)
    assert f"the admin client cannot connect to {mtls_broker.bootstrap_servers} (SSL with a client certificate)" in (
        message
    )
    assert "client certificate" in message.partition("):")[2], message


def test_a_worker_with_a_wrong_password_exits_with_one_error(sasl_ssl_broker: BrokerStatus, tmp_path: Path) -> None:
    wrong = tmp_path / "password"
    wrong.write_text(WRONG_PASSWORD + "\n")
    env = {**sasl_ssl_broker.client_settings(), "STREAMLET_SASL_PLAIN_PASSWORD_FILE": str(wrong)}
    began = time.monotonic()
    worker = subprocess.run(
        [sys.executable, "-m", "streamlet.cli", "worker", "examples.wordcount.app:app", "--state-dir", str(tmp_path)],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = worker.stdout + worker.stderr
    assert worker.returncode == 2, output
    assert time.monotonic() - began < 60
    errors = [line for line in output.splitlines() if line.startswith("streamlet: error:")]
    assert len(errors) == 1, output
    assert "cannot connect to" in errors[0] and "the broker refused the credentials" in errors[0]
    assert len(output.splitlines()) < 40, output  # no log flood
    assert WRONG_PASSWORD not in output
