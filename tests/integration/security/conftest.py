"""Secured brokers, started by the project's own script: one per security mode per test session.

`sasl_ssl`: TLS and SCRAM users; `ssl`: mutual TLS (a client is known by its certificate). Each fixture yields
the broker's status, whose `client_settings()` are the STREAMLET_* variables a client needs.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from streamlet.kafka.broker import SASL_SSL_MODE, SSL_MODE, BrokerStatus, LocalBroker
from tests.support.broker import TEST_BROKER_SETTINGS


def _secured_broker(tmp_path_factory: pytest.TempPathFactory, security: str) -> Iterator[BrokerStatus]:
    # no preferred port: a free one, never a developer's 9092
    broker = LocalBroker(
        tmp_path_factory.mktemp(f"kafka-{security}"),
        die_with_parent=True,
        security=security,
        overrides=TEST_BROKER_SETTINGS,
    )
    status = broker.start()
    try:
        yield status
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def sasl_ssl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerStatus]:
    yield from _secured_broker(tmp_path_factory, SASL_SSL_MODE)


@pytest.fixture(scope="session")
def mtls_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerStatus]:
    yield from _secured_broker(tmp_path_factory, SSL_MODE)
