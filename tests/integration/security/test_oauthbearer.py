"""OAUTHBEARER through the token hook, on a SASL_SSL broker of this module's own that accepts Kafka's unsecured
(unsigned) development tokens: the principal is the token's `sub`."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from streamlet.config import StreamsConfig
from streamlet.kafka.broker import CLIENT_USER, SASL_SSL_MODE, BrokerStatus, LocalBroker
from tests.support.broker import TEST_BROKER_SETTINGS
from tests.support.kafka import KafkaTestCluster

pytestmark = pytest.mark.integration

_OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


@pytest.fixture(scope="module")
def oauth_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerStatus]:
    broker = LocalBroker(
        tmp_path_factory.mktemp("kafka-oauth"),
        die_with_parent=True,
        security=SASL_SSL_MODE,
        overrides={
            **TEST_BROKER_SETTINGS,
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,OAUTHBEARER",
            # the broker validates tokens with Kafka's default, unsecured validator: for tests only
            "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config": (
                f'{_OAUTH_MODULE} required unsecuredLoginStringClaim_sub="admin";'
            ),
        },
    )
    status = broker.start()
    try:
        yield status
    finally:
        broker.stop()


def _b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def unsecured_token() -> str:
    """An unsigned JWT (alg none) for the user the local broker's clients are: what the hook returns."""
    now = int(time.time())
    return f"{_b64({'alg': 'none'})}.{_b64({'sub': CLIENT_USER, 'iat': now, 'exp': now + 3600})}."


@pytest.fixture
async def oauth_kafka(oauth_broker: BrokerStatus, tmp_path: Path) -> AsyncIterator[KafkaTestCluster]:
    calls: list[float] = []

    def token() -> str:
        calls.append(time.time())
        return unsecured_token()

    config = StreamsConfig(
        "oauth",
        bootstrap_servers=oauth_broker.bootstrap_servers,
        security_protocol="SASL_SSL",
        ssl_cafile=oauth_broker.client_settings()["STREAMLET_SSL_CAFILE"],
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=token,
    )
    kafka = KafkaTestCluster(config.bootstrap_servers, config.security)
    await kafka.start()
    try:
        yield kafka
    finally:
        await kafka.close()
    assert calls  # the hook gave the token


async def test_clients_authenticate_with_the_token_hook(oauth_kafka: KafkaTestCluster) -> None:
    topic = await oauth_kafka.create_topic("oauth")
    await oauth_kafka.produce(topic, [(b"k", b"token")])
    assert [r.value for r in await oauth_kafka.drain(topic, 1)] == [b"token"]
