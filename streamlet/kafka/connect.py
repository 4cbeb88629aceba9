"""The one place streamlet builds Kafka clients, so none of them can miss the cluster's security settings.

Every consumer, producer and admin client streamlet creates (a worker's, the CLI's, the experiment runner's) is
built by `build` from a `Cluster`: its address and its `ClientSecurity`. The raw requests streamlet sends itself
(TxnOffsetCommit, OffsetFetch, group membership) go through the connections of these clients, so they carry
the same TLS and SASL. tests/unit/kafka/test_connect.py fails when code outside this module constructs a client.

`start` turns aiokafka's "Unable to bootstrap" (whose reason only reaches a log line) into one error that names
the client, the broker and the reason: an untrusted certificate, a wrong password, a refused connection.
"""

from __future__ import annotations

import asyncio
import ssl
import struct
from dataclasses import dataclass
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.conn import create_conn
from aiokafka.errors import (
    AuthenticationFailedError,
    KafkaConnectionError,
    KafkaError,
    SaslAuthenticationFailed,
    UnsupportedSaslMechanismError,
)

from streamlet.errors import ClusterAccessError
from streamlet.kafka.security import PLAINTEXT, ClientSecurity, ssl_context

T = TypeVar("T")
_DIAGNOSE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Cluster:
    """Where the brokers are and how to reach them."""

    bootstrap_servers: str
    security: ClientSecurity = PLAINTEXT

    def client_kwargs(self) -> dict[str, Any]:
        return {"bootstrap_servers": self.bootstrap_servers, **self.security.client_kwargs()}


def build(cls: type[T], cluster: Cluster, *args: Any, **kwargs: Any) -> T:
    """`cls(*args, bootstrap_servers=..., <security>, **kwargs)`: any aiokafka client class or subclass."""
    clashing = set(kwargs) & set(cluster.client_kwargs())
    if clashing:
        raise TypeError(f"{sorted(clashing)} come from the Cluster, not from the caller")
    return cls(*args, **cluster.client_kwargs(), **kwargs)


def consumer(cluster: Cluster, *topics: str, **kwargs: Any) -> AIOKafkaConsumer:
    return build(AIOKafkaConsumer, cluster, *topics, **kwargs)


def producer(cluster: Cluster, **kwargs: Any) -> AIOKafkaProducer:
    return build(AIOKafkaProducer, cluster, **kwargs)


def admin(cluster: Cluster, **kwargs: Any) -> AIOKafkaAdminClient:
    return build(AIOKafkaAdminClient, cluster, **kwargs)


async def start(client: AIOKafkaConsumer | AIOKafkaProducer | AIOKafkaAdminClient, cluster: Cluster, name: str) -> None:
    """`client.start()`, or one `ClusterAccessError` naming `name`, the broker and why it could not connect
    (the client is closed first: a failed start leaves nothing open)."""
    try:
        await client.start()
    except KafkaConnectionError as exc:
        await (client.close() if isinstance(client, AIOKafkaAdminClient) else client.stop())
        reason = await diagnose(cluster)
        raise ClusterAccessError(
            f"{name} cannot connect to {cluster.bootstrap_servers} ({cluster.security.describe()}): {reason or exc}"
        ) from None


async def diagnose(cluster: Cluster) -> str:
    """Why a connection to the first bootstrap server fails (empty if it does not): one attempt, bounded in time."""
    host, _, port = cluster.bootstrap_servers.split(",")[0].strip().rpartition(":")
    host = host.strip("[]")  # an IPv6 address: [::1]:9092
    try:
        conn = await asyncio.wait_for(
            create_conn(host, int(port), client_id="streamlet-diagnose", **cluster.security.client_kwargs()),
            _DIAGNOSE_TIMEOUT_S,
        )
    except ssl.SSLCertVerificationError as exc:
        return f"the broker's certificate is not trusted ({exc.verify_message}); check ssl_cafile"
    except ssl.SSLError as exc:
        return (
            f"the TLS handshake failed ({exc.reason or exc}); a broker that requires a client certificate "
            "rejects a missing or untrusted one (ssl_certfile, ssl_keyfile)"
        )
    except (SaslAuthenticationFailed, AuthenticationFailedError) as exc:
        return f"the broker refused the credentials: {exc}"
    except UnsupportedSaslMechanismError as exc:
        return f"the broker does not enable sasl_mechanism={cluster.security.sasl_mechanism}: {exc}"
    except KafkaConnectionError as exc:
        alert = await _tls_alert(host, int(port), cluster) if cluster.security.uses_tls else ""
        if alert:
            return (
                f"the broker rejected the TLS session ({alert}): it requires a client certificate signed by a CA it "
                "trusts (ssl_certfile, ssl_keyfile)"
            )
        return (
            f"the broker closed the connection ({exc}); is security_protocol={cluster.security.security_protocol} "
            "what this listener speaks?"
        )
    except KafkaError as exc:
        return f"the broker refused the connection: {exc}"
    except (TimeoutError, OSError) as exc:
        return f"no connection ({exc or type(exc).__name__})"
    conn.close()
    return ""


# ApiVersions v0, correlation id 1, client id "streamlet-diagnose": a request any listener answers first
_API_VERSIONS = struct.pack(">hhih", 18, 0, 1, 18) + b"streamlet-diagnose"


async def _tls_alert(host: str, port: int, cluster: Cluster) -> str:
    """The TLS alert a broker sends when it rejects the client's certificate, or "".

    Under TLS 1.3 the client's handshake succeeds before the broker checks the client's certificate; the
    rejection arrives as an alert on the first read, which aiokafka reports only as "connection closed".
    """
    writer = None
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=ssl_context(cluster.security)), _DIAGNOSE_TIMEOUT_S
        )
        writer.write(struct.pack(">i", len(_API_VERSIONS)) + _API_VERSIONS)
        await asyncio.wait_for(reader.read(4), _DIAGNOSE_TIMEOUT_S)
    except ssl.SSLError as exc:
        return str(exc.reason or exc)
    except (TimeoutError, OSError):
        return ""
    finally:
        if writer is not None:
            writer.close()
    return ""
