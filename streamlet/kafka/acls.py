"""The minimal ACLs a streamlet application needs on a cluster that enforces them, as Kafka Streams documents its own.

An application's user needs:
- on every topic prefixed with `<application_id>` (its internal topics: repartition and changelog topics,
  `-assignments`, `-metrics`, reply topics): create, read, write and delete (describe comes with each; streamlet
  never reads or alters topic configs); under exactly-once, write on transactional ids with that prefix (each
  thread's transactional id is `<application_id>-<process id>-<n>`);
- read on the consumer group `<application_id>`;
- read on each source topic (global table topics too), write on each sink topic.

`minimal_acls` lists them; `create_acls` creates them through the admin client (CreateAcls v1, the first version
with prefixed patterns), and `Acl.command` gives each as a `kafka-acls.sh` command line. `not_authorized` turns
the broker's "not authorized" (on a topic, the group, a transactional id) into one error that says which ACL is
missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from aiokafka import errors as kafka_errors
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.protocol.admin import CreateAclsRequest

from streamlet.errors import NotAuthorizedError, StreamletError
from streamlet.kafka.connect import Cluster

# Kafka's wire codes (org.apache.kafka.common.resource.ResourceType, PatternType, acl.AclOperation)
_RESOURCE_TYPES = {"topic": 2, "group": 3, "transactional_id": 5}
_PATTERN_TYPES = {"literal": 3, "prefixed": 4}
_OPERATIONS = {"READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "DESCRIBE": 8}
_ALLOW = 3
#: What an application does with its own (internal) topics
INTERNAL_TOPIC_OPERATIONS = ("CREATE", "READ", "WRITE", "DELETE")


@dataclass(frozen=True)
class Acl:
    """One ALLOW rule: `principal` may do `operation` on the resource (from any host)."""

    principal: str  # "User:wordcount"
    resource_type: str  # topic, group, transactional_id
    name: str
    operation: str
    pattern: str = "literal"  # or prefixed: every resource whose name starts with `name`

    def command(self, bootstrap_servers: str) -> str:
        """The same rule as a `kafka-acls.sh` command line."""
        flag = {"topic": "--topic", "group": "--group", "transactional_id": "--transactional-id"}[self.resource_type]
        return (
            f"kafka-acls.sh --bootstrap-server {bootstrap_servers} --command-config admin.properties --add "
            f"--allow-principal {self.principal} --operation {self.operation.title().replace('_', '')} "
            f"{flag} {self.name} --resource-pattern-type {self.pattern}"
        )


def minimal_acls(
    principal: str,
    application_id: str,
    *,
    sources: Iterable[str],
    sinks: Iterable[str],
    exactly_once: bool,
    owned: Iterable[str] = (),
) -> list[Acl]:
    """The ACLs `principal` needs to run `application_id` reading `sources` and writing `sinks`; `owned`: topics
    outside the prefix the application creates and uses (a Faust-style GlobalTable's)."""
    acls = [Acl(principal, "topic", application_id, op, "prefixed") for op in INTERNAL_TOPIC_OPERATIONS]
    acls.append(Acl(principal, "group", application_id, "READ"))
    if exactly_once:
        acls.append(Acl(principal, "transactional_id", application_id, "WRITE", "prefixed"))
    acls += [Acl(principal, "topic", topic, "READ") for topic in sorted(set(sources))]
    acls += [Acl(principal, "topic", topic, "WRITE") for topic in sorted(set(sinks))]
    for topic in sorted({t for t in owned if not t.startswith(application_id)}):
        acls += [Acl(principal, "topic", topic, op) for op in ("CREATE", "READ", "WRITE")]
    return acls


async def create_acls(admin: AIOKafkaAdminClient, acls: Iterable[Acl]) -> None:
    """Create each rule (an existing one is kept); the admin's user needs ALTER on the cluster (a super user has)."""
    for acl in acls:
        request = CreateAclsRequest(
            _RESOURCE_TYPES[acl.resource_type],
            acl.name,
            _PATTERN_TYPES[acl.pattern],
            acl.principal,
            "*",
            _OPERATIONS[acl.operation],
            _ALLOW,
        )
        response = await admin._send_request(request)
        for error_code, message in response.creation_responses:
            if error_code:
                raise StreamletError(f"creating the ACL {acl} failed: error {error_code} {message or ''}".rstrip())


TOPIC_AUTHORIZATION_FAILED = 29
#: The broker's authorization error codes, and the ACL each asks for (`{app}` is the application id)
_MISSING = {
    TOPIC_AUTHORIZATION_FAILED: (
        "a topic",
        "READ on each source topic, WRITE on each sink topic, and CREATE, READ, WRITE and DELETE on topics "
        "prefixed '{app}'",
    ),
    30: ("the consumer group", "READ on the group '{app}'"),
    31: ("the cluster", "no cluster ACL: the broker's admin must check the principal"),
    53: ("a transactional id", "WRITE on transactional ids prefixed '{app}' (exactly-once)"),
}


def not_authorized(cluster: Cluster, application_id: str, what: str, code: int) -> NotAuthorizedError:
    """One error for an authorization failure: who, where, what was refused, and the ACL it needs."""
    resource, needs = _MISSING.get(code, ("a resource", "the ACLs streamlet.kafka.acls.minimal_acls lists"))
    return NotAuthorizedError(
        f"{cluster.security.describe()} is not authorized by {cluster.bootstrap_servers} to use {resource} "
        f"({what}); it needs {needs.format(app=application_id)}. streamlet.kafka.acls.minimal_acls lists every "
        "ACL an application needs (README: Secured clusters)"
    )


def as_not_authorized(exc: BaseException, cluster: Cluster, application_id: str) -> NotAuthorizedError | None:
    """The `NotAuthorizedError` for an authorization failure a client raised (aiokafka's, or one that an error of
    streamlet's has as its cause: a group member's, a failed write's), else None."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, NotAuthorizedError):
            return cause
        if isinstance(cause, kafka_errors.BrokerResponseError) and cause.errno in _MISSING:
            return not_authorized(cluster, application_id, f"{exc}", cause.errno)
        cause = cause.__cause__
    return None
