"""The minimal ACLs of an application, and the error a broker's "not authorized" becomes."""

from __future__ import annotations

from aiokafka import errors as kafka_errors

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.errors import NotAuthorizedError
from streamlet.kafka.acls import Acl, as_not_authorized, minimal_acls
from streamlet.kafka.connect import Cluster
from streamlet.kafka.group.membership import FatalGroupError
from streamlet.kafka.security import ClientSecurity, Password
from streamlet.runtime.kafka_streams import KafkaStreams

CLUSTER = Cluster(
    "broker:9093",
    ClientSecurity(security_protocol="SASL_PLAINTEXT", sasl_plain_username="wc", sasl_plain_password=Password("p")),
)


def test_minimal_acls_of_an_exactly_once_app() -> None:
    acls = minimal_acls("User:wc", "wordcount", sources=["lines", "lines"], sinks=["counts"], exactly_once=True)
    assert {(a.resource_type, a.name, a.operation, a.pattern) for a in acls} == {
        *(("topic", "wordcount", op, "prefixed") for op in ("CREATE", "READ", "WRITE", "DELETE")),
        ("group", "wordcount", "READ", "literal"),
        ("transactional_id", "wordcount", "WRITE", "prefixed"),
        ("topic", "lines", "READ", "literal"),
        ("topic", "counts", "WRITE", "literal"),
    }
    assert len(acls) == 8
    at_least_once = minimal_acls("User:wc", "wordcount", sources=["lines"], sinks=["counts"], exactly_once=False)
    assert not [a for a in at_least_once if a.resource_type == "transactional_id"]


def test_an_acl_as_a_kafka_acls_command() -> None:
    command = Acl("User:wc", "transactional_id", "wordcount", "WRITE", "prefixed").command("b:9093")
    assert command.endswith(
        "--add --allow-principal User:wc --operation Write --transactional-id wordcount "
        "--resource-pattern-type prefixed"
    )


def test_authorization_failures_name_the_user_the_broker_and_the_acl() -> None:
    group = FatalGroupError("not authorized to use group wordcount")
    group.__cause__ = kafka_errors.GroupAuthorizationFailedError()
    refused = as_not_authorized(group, CLUSTER, "wordcount")
    assert isinstance(refused, NotAuthorizedError)
    assert str(refused).startswith(
        "SASL_PLAINTEXT, PLAIN as user 'wc' is not authorized by broker:9093 to use the consumer group"
    )
    assert "it needs READ on the group 'wordcount'" in str(refused)
    refused = as_not_authorized(kafka_errors.TransactionalIdAuthorizationFailed("wordcount-1"), CLUSTER, "wordcount")
    assert refused is not None and "WRITE on transactional ids prefixed 'wordcount'" in str(refused)
    assert as_not_authorized(kafka_errors.NotLeaderForPartitionError(), CLUSTER, "wordcount") is None
    assert as_not_authorized(ValueError("x"), CLUSTER, "wordcount") is None


def test_an_apps_acls_come_from_its_topology_and_config() -> None:
    config = StreamsConfig(
        "wc", deserialization_exception_handler="dead_letter", dead_letter_topic="wc-dead", bootstrap_servers="b:1"
    )
    acls = KafkaStreams(build_topology("lines", "counts"), config).required_acls("User:wc")
    literal = {(a.resource_type, a.name, a.operation) for a in acls if a.pattern == "literal"}
    assert literal == {
        ("group", "wc", "READ"),
        ("topic", "lines", "READ"),
        ("topic", "counts", "WRITE"),
        ("topic", "wc-dead", "WRITE"),
    }
