"""Every Kafka client streamlet builds carries the cluster's security settings: checked by construction and by a
scan of the package for clients built anywhere but `streamlet.kafka.connect`."""

from __future__ import annotations

import ast
import socket
from pathlib import Path

import pytest

import streamlet
from streamlet.config import StreamsConfig
from streamlet.errors import ClusterAccessError
from streamlet.kafka import connect
from streamlet.kafka.certificates import make_tls_files
from streamlet.kafka.topics import InternalTopicManager
from streamlet.runtime.clients import AioKafkaClientSupplier

PACKAGE = Path(streamlet.__file__).parent
FACTORY = PACKAGE / "kafka" / "connect.py"
CLIENT_CLASSES = {"AIOKafkaConsumer", "AIOKafkaProducer", "AIOKafkaAdminClient", "AIOKafkaClient", "create_conn"}


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def test_no_client_is_built_outside_the_factory() -> None:
    trees = {path: ast.parse(path.read_text(), str(path)) for path in PACKAGE.rglob("*.py")}
    # streamlet's own subclasses of aiokafka's clients (GroupConsumer, BlockRestoreConsumer) count as clients
    clients = set(CLIENT_CLASSES)
    for tree in trees.values():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ClassDef)
                and {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases} & clients
            ):
                clients.add(node.name)
    assert {"GroupConsumer", "BlockRestoreConsumer"} <= clients
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {_called_name(node)}(...)"
        for path, tree in trees.items()
        if path != FACTORY
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _called_name(node) in clients
    ]
    assert not offenders, "build Kafka clients with streamlet.kafka.connect (security settings): " + ", ".join(
        offenders
    )


def test_the_factory_refuses_a_second_source_of_connection_settings() -> None:
    with pytest.raises(TypeError, match="come from the Cluster"):
        connect.producer(connect.Cluster("127.0.0.1:1"), bootstrap_servers="other:9092")


async def test_every_client_of_a_worker_gets_the_security_settings(tmp_path: Path) -> None:
    tls = make_tls_files(tmp_path)
    config = StreamsConfig(
        "app",
        security_protocol="SASL_SSL",
        ssl_cafile=str(tls.ca),
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="user",
        sasl_plain_password="pw",
    )
    supplier = AioKafkaClientSupplier()
    built = {
        "main": supplier.main_consumer(config, "c"),
        "restore": supplier.restore_consumer(config, "r"),
        "admin consumer": supplier.admin_consumer(config, "a"),
        "producer": supplier.producer(config, "p"),
        "transactional producer": supplier.producer(config, "t", transactional_id="app-1"),
        "admin": InternalTopicManager(config.cluster)._admin,
    }
    context = config.security.client_kwargs()["ssl_context"]
    for name, client in built.items():
        inner = getattr(client, "_client", None) or client.client  # the producer names it `client`
        assert inner._security_protocol == "SASL_SSL", name
        assert inner._ssl_context is context, name
        assert (inner._sasl_mechanism, inner._sasl_plain_username, inner._sasl_plain_password) == (
            "SCRAM-SHA-256",
            "user",
            "pw",
        ), name


async def test_no_broker_is_one_clear_error_and_nothing_left_open() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: nothing listens
    cluster = connect.Cluster(f"127.0.0.1:{port}")
    consumer = connect.consumer(cluster)
    with pytest.raises(ClusterAccessError) as failure:
        await connect.start(consumer, cluster, "the test consumer")
    assert str(failure.value).startswith(
        f"the test consumer cannot connect to 127.0.0.1:{port} (PLAINTEXT): no connection ("
    )
    assert consumer._closed  # stopped: no "Unclosed AIOKafkaConsumer" later
