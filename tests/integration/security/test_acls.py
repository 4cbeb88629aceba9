"""WordCount under exactly-once as a user that may do only what `streamlet acls` (`minimal_acls`) allows it, and
the one clear error each missing ACL gives."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.errors import NotAuthorizedError
from streamlet.kafka.acls import Acl, create_acls, minimal_acls
from streamlet.kafka.broker import LIMITED_USER, BrokerStatus
from streamlet.runtime.kafka_streams import KafkaStreams
from tests.integration.security.test_secured_wordcount import client_settings, security_of
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.wordcount import expected_counts, wait_for_counts
from tests.support.workers import ROOT

pytestmark = pytest.mark.integration

LINES = ["the minimal acls", "of a streamlet app", "are the acls kafka streams needs"] * 3


@pytest.fixture
async def admin(sasl_ssl_broker: BrokerStatus):  # noqa: ANN201
    kafka = KafkaTestCluster(sasl_ssl_broker.bootstrap_servers, security_of(client_settings(sasl_ssl_broker)))
    await kafka.start()
    try:
        yield kafka
    finally:
        await kafka.close()


def _limited_config(broker: BrokerStatus, app_id: str, state_dir: Path) -> StreamsConfig:
    settings = {k.removeprefix("STREAMLET_").lower(): v for k, v in broker.client_settings(LIMITED_USER).items()}
    return StreamsConfig.from_mapping(
        {**settings, "application_id": app_id, "state_dir": str(state_dir), "processing_guarantee": "exactly_once_v2"}
    )


async def test_wordcount_runs_with_exactly_the_minimal_acls(
    sasl_ssl_broker: BrokerStatus, admin: KafkaTestCluster, tmp_path: Path
) -> None:
    source = await admin.create_topic("acl-lines", partitions=2)
    sink = await admin.create_topic("acl-counts", partitions=2)
    app_id = unique_name("acl-wordcount")
    for suffix in ("counts-store-repartition", "counts-store-changelog", "assignments", "metrics"):
        admin.track(f"{app_id}-{suffix}")
    # as an operator would: `streamlet acls APP --principal ... --create`, as a super user (the env's)
    created = subprocess.run(
        [sys.executable, "-m", "streamlet.cli", "acls", "examples.wordcount.app:app"]
        + ["--principal", f"User:{LIMITED_USER}", "--config", "processing_guarantee=exactly_once_v2", "--create"],
        cwd=ROOT,
        env={
            **os.environ,
            **sasl_ssl_broker.client_settings(),
            "PYTHONPATH": str(ROOT),
            "WORDCOUNT_INPUT_TOPIC": source,
            "WORDCOUNT_OUTPUT_TOPIC": sink,
            "WORDCOUNT_APPLICATION_ID": app_id,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0 and "created 8 ACLs for User:limited" in created.stderr, created.stderr
    client = KafkaStreams(build_topology(source, sink), _limited_config(sasl_ssl_broker, app_id, tmp_path))
    assert len(client.required_acls(f"User:{LIMITED_USER}")) == 8  # the same list, from the topology
    try:
        await client.start()
        await admin.produce(source, [(None, line.encode()) for line in LINES])
        expected = expected_counts(LINES)
        assert await wait_for_counts(admin, sink, expected, partitions=2, read_committed=True) == expected
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("dropped", "describe", "refusal", "needs"),
    [
        (("topic", "READ", "literal"), False, "to use a topic (describing topic acl-lines-", "READ on each source"),
        (("group", "READ", "literal"), False, "to use the consumer group", "READ on the group '{app}'"),
        (
            ("transactional_id", "WRITE", "prefixed"),
            False,
            "to use a transactional id",
            "WRITE on transactional ids prefixed '{app}'",
        ),
        # the sink described but not writable: the transaction fails at the first write, named as such
        (("topic", "WRITE", "literal"), True, "to use a topic (writing ", "WRITE on each sink topic"),
        # the source described but not readable: the thread's fetch is refused
        (("topic", "READ", "literal"), True, "to use a topic ([Error 29]", "READ on each source topic"),
    ],
)
async def test_a_missing_acl_stops_the_client_with_the_acl_it_needs(
    sasl_ssl_broker: BrokerStatus,
    admin: KafkaTestCluster,
    tmp_path: Path,
    dropped: tuple[str, str, str],
    describe: bool,
    refusal: str,
    needs: str,
) -> None:
    source = await admin.create_topic("acl-lines", partitions=1)
    sink = await admin.create_topic("acl-counts", partitions=1)
    app_id = unique_name("acl-missing")
    for suffix in ("counts-store-repartition", "counts-store-changelog", "assignments", "metrics"):
        admin.track(f"{app_id}-{suffix}")
    acls = minimal_acls(f"User:{LIMITED_USER}", app_id, sources=[source], sinks=[sink], exactly_once=True)
    kept = [acl for acl in acls if (acl.resource_type, acl.operation, acl.pattern) != dropped]
    assert len(kept) == len(acls) - 1
    if describe:
        kept += [Acl(a.principal, a.resource_type, a.name, "DESCRIBE") for a in acls if a not in kept]
    await create_acls(admin.admin, kept)
    client = KafkaStreams(build_topology(source, sink), _limited_config(sasl_ssl_broker, app_id, tmp_path))
    began = time.monotonic()
    try:
        with pytest.raises(NotAuthorizedError) as refused:
            await client.start()  # the group is refused once the thread looks for its coordinator, after start()
            await admin.produce(source, [(None, line.encode()) for line in LINES])
            await asyncio.wait_for(client.wait(), 60)
    finally:
        await client.close()
    assert time.monotonic() - began < 60
    message = str(refused.value)
    assert f"as user '{LIMITED_USER}' is not authorized by {sasl_ssl_broker.bootstrap_servers} {refusal}" in message
    assert needs.format(app=app_id) in message
