"""A real Apache Kafka broker (KRaft, one combined broker+controller) for development, tests and the demo.

There is no Docker engine on the machines this project targets, so the broker comes from Maven Central:
`mvn dependency:copy-dependencies` resolves the broker jars once into a cache outside the repository, and
`java kafka.Kafka` runs them. An existing installation is used instead when `KAFKA_HOME` is set.

The broker's state (pid, ports, data) lives in one directory, so `start`, `status` and `stop` can run
from different processes and `stop` kills only the JVM this module started (checked by pid and command
line), never another Kafka on the machine.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import fcntl
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from streamlet.errors import BrokerError
from streamlet.kafka.certificates import TlsFiles, make_tls_files, tls_files
from streamlet.kafka.class_archive import ClassArchive

#: The Kafka release the local broker runs by default, and the one the oracles and bench peers are built from.
KAFKA_VERSION = "4.4.0"
#: The oldest broker streamlet supports: the integration tier's compatibility pass runs against it
#: (`STREAMLET_KAFKA_VERSION=3.9.1`, see docs/kafka-4.4.md).
OLDEST_SUPPORTED_KAFKA_VERSION = "3.9.1"
#: Picks another Kafka release for `LocalBroker` (and so for `streamlet broker start` and the test session's broker).
KAFKA_VERSION_ENV = "STREAMLET_KAFKA_VERSION"
_MIN_JAVA = 17
#: How long resolving a release's jars may take before it is reported as stuck. A first download is 1-3 minutes; a
#: stalled connection would otherwise wait out Maven's own read timeout (30 minutes), then retry.
DOWNLOAD_TIMEOUT_S = 900.0
# a single request that long without an answer is retried (Maven 3.8's wagon, Maven 3.9's resolver)
_MAVEN_REQUEST_TIMEOUT_MS = 120_000
#: JVM options of the broker (and of its storage tool), replacing DEFAULT_BROKER_JVM_OPTIONS; the heap is set apart.
BROKER_JVM_OPTIONS_ENV = "STREAMLET_BROKER_JVM_OPTIONS"
DEFAULT_BROKER_JVM_OPTIONS = ("-XX:+UseG1GC",)
_STATE_FILE = "broker.json"
# the Kafka release that formatted a broker directory's data (KRaft storage is not forward-compatible)
_FORMATTED_BY_FILE = "formatted-by-kafka"
# --security: a plaintext listener; SASL_SSL with SCRAM users; SSL with client certificates (mutual TLS)
PLAINTEXT_MODE, SASL_SSL_MODE, SSL_MODE = "plaintext", "sasl_ssl", "ssl"
SECURITY_MODES = (PLAINTEXT_MODE, SASL_SSL_MODE, SSL_MODE)
#: The SCRAM user (SASL_SSL) and the certificate name (SSL) clients get, a super user as the broker itself
#: (ADMIN_USER) is; LIMITED_USER (SASL_SSL) may do only what ACLs allow it, as an application's user on a real cluster.
CLIENT_USER = "streamlet"
ADMIN_USER = "admin"
LIMITED_USER = "limited"
_SCRAM_USERS = (ADMIN_USER, CLIENT_USER, LIMITED_USER)
# the broker's own principal: its certificate's CN, on the controller listener and inter-broker links
_BROKER_PRINCIPAL = "localhost"
_TLS_DIR = "tls"


def cache_root() -> Path:
    """Where downloaded Kafka jars are kept (`STREAMLET_CACHE_DIR`, default `~/.cache/streamlet`)."""
    return Path(os.environ.get("STREAMLET_CACHE_DIR", Path.home() / ".cache" / "streamlet"))


def default_broker_dir() -> Path:
    """Where `streamlet broker start` keeps its pid file and data (`STREAMLET_BROKER_DIR`)."""
    return Path(os.environ.get("STREAMLET_BROKER_DIR", cache_root() / "broker"))


# --------------------------------------------------------------------------------------------------------
# Installation


def check_java() -> str:
    """Return the `java` executable, or raise with what to install."""
    java = shutil.which("java")
    if java is None:
        raise BrokerError(
            f"java not found: the local Kafka broker needs Java {_MIN_JAVA}+ "
            "(e.g. `apt-get install openjdk-17-jre-headless`), or set STREAMLET_BOOTSTRAP_SERVERS "
            "to use a running broker"
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if match is None:
        raise BrokerError(f"could not read the Java version from `java -version`: {out.strip()!r}")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8" style
        major = int(match.group(2))
    if major < _MIN_JAVA:
        raise BrokerError(f"Java {major} found at {java}; Kafka needs Java {_MIN_JAVA}+")
    return java


def selected_kafka_version() -> str:
    """The Kafka release a broker runs when none is given: `STREAMLET_KAFKA_VERSION`, else KAFKA_VERSION."""
    version = os.environ.get(KAFKA_VERSION_ENV, "").strip() or KAFKA_VERSION
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise BrokerError(f"{KAFKA_VERSION_ENV}={version!r}: expected a Kafka release such as {KAFKA_VERSION}")
    return version


def kafka_libs(version: str | None = None) -> Path:
    """The directory of broker jars: `$KAFKA_HOME/libs`, or the Maven-resolved cache (downloading once).

    `version`: a Kafka release on Maven Central (default: `selected_kafka_version()`)."""
    version = version or selected_kafka_version()
    kafka_home = os.environ.get("KAFKA_HOME")
    if kafka_home:
        libs = Path(kafka_home) / "libs"
        if not any(libs.glob("kafka_*.jar")):
            raise BrokerError(
                f"KAFKA_HOME={kafka_home} has no libs/kafka_*.jar; unset it or point it at a Kafka install"
            )
        return libs
    target = cache_root() / f"kafka-{version}"
    libs = target / "libs"
    if (target / ".complete").exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerError(
            "mvn not found: Maven resolves the Kafka broker jars from Maven Central on first use "
            "(e.g. `apt-get install maven`), or set KAFKA_HOME to an Apache Kafka installation"
        )
    target.mkdir(parents=True, exist_ok=True)
    # processes that start brokers at once (a test session's workers) download once: the others wait, then use it
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / ".complete").exists():
            _download(mvn, version, target, libs)
    return libs


def _download(mvn: str, version: str, target: Path, libs: Path) -> None:
    pom = target / "pom.xml"
    pom.write_text(resources.files("streamlet.kafka").joinpath("broker-pom.xml").read_text())
    partial = target / "libs.partial"
    shutil.rmtree(partial, ignore_errors=True)
    cmd = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(pom),
        f"-Dkafka.version={version}",
        f"-Dmaven.wagon.rto={_MAVEN_REQUEST_TIMEOUT_MS}",
        f"-Daether.connector.requestTimeout={_MAVEN_REQUEST_TIMEOUT_MS}",
        "dependency:copy-dependencies",
        f"-DoutputDirectory={partial}",
        "-DincludeScope=runtime",
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=DOWNLOAD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise BrokerError(
            f"downloading Kafka {version} from Maven Central did not finish within {DOWNLOAD_TIMEOUT_S:.0f} s; "
            "check that Maven Central is reachable and not throttled (or set KAFKA_HOME), then try again"
        ) from exc
    if proc.returncode != 0 or not any(partial.glob("kafka_*.jar")):
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise BrokerError(
            f"downloading Kafka {version} from Maven Central failed (exit {proc.returncode}). "
            f"Check that Maven Central is reachable, or set KAFKA_HOME.\n{tail}"
        )
    shutil.rmtree(libs, ignore_errors=True)
    partial.rename(libs)
    (target / ".complete").write_text(version + "\n")


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def check_storage_version(directory: Path, version: str) -> None:
    """Refuse to start Kafka `version` on data a newer release formatted: since Kafka 4.4 storage formatted by one
    release cannot be read by an older one (an older broker dies at start with UnsupportedVersionException).
    Directories formatted before streamlet recorded the release pass."""
    try:
        formatted_by = (directory / _FORMATTED_BY_FILE).read_text().strip()
    except OSError:
        return
    if _release(version) < _release(formatted_by):
        raise BrokerError(
            f"the broker data in {directory} was formatted by Kafka {formatted_by}, which Kafka {version} cannot "
            f"read; start Kafka {formatted_by} or newer there (--kafka-version), or use another --dir"
        )


# --------------------------------------------------------------------------------------------------------
# Readiness: a hand-written MetadataRequest v1, so the check needs no event loop and no client library.


def broker_answers(host: str, port: int, timeout: float = 2.0, *, tls: ssl.SSLContext | None = None) -> bool:
    """True when the broker at host:port answers a metadata request listing at least one broker.

    With `tls` (a secured listener) the probe speaks TLS and sends ApiVersions instead, the one request a
    SASL listener answers before authentication; a broker opens its listeners only once it is ready.
    """
    client_id = b"streamlet-probe"
    if tls is None:
        body = struct.pack(">i", -1)  # Metadata v1: null topic array = all topics
        header = struct.pack(">hhih", 3, 1, 7, len(client_id)) + client_id
    else:
        body = b""  # ApiVersions v0
        header = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
    request = header + body
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            sock = raw if tls is None else tls.wrap_socket(raw, server_hostname=host)
            sock.settimeout(timeout)
            sock.sendall(struct.pack(">i", len(request)) + request)
            size = struct.unpack(">i", _recv_exact(sock, 4))[0]
            payload = _recv_exact(sock, size)
    except (OSError, struct.error):
        return False
    if tls is not None:
        correlation_id, error_code = struct.unpack(">ih", payload[:6])
        return correlation_id == 7 and error_code == 0
    correlation_id, broker_count = struct.unpack(">ii", payload[:8])
    return correlation_id == 7 and broker_count > 0


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return bytes(buf)


def _port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def choose_port(host: str, requested: int | None, preferred: int | None) -> int:
    """The listener port: the one requested (taken or not: `start` reports a taken one), else `preferred`
    when it is free, else any free port. `streamlet broker start` prefers 9092, the port clients default to,
    so a fresh machine needs no STREAMLET_BOOTSTRAP_SERVERS; tests prefer none, so a developer's broker on
    9092 never meets the test session's."""
    if requested:
        return requested
    if preferred and _port_free(host, preferred):
        return preferred
    return _free_port(host)


# --------------------------------------------------------------------------------------------------------
# The broker


@dataclass
class BrokerStatus:
    """What `broker.json` records about a started broker."""

    pid: int
    host: str
    port: int
    controller_port: int
    kafka_version: str
    data_dir: str
    log_file: str
    started_at: float
    security: str = PLAINTEXT_MODE
    tls_dir: str = ""  # where a secured broker's CA, certificates and passwords are ("": beside its data)

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def client_settings(self, user: str = CLIENT_USER) -> dict[str, str]:
        """The environment a client needs to reach this broker: `STREAMLET_*` variable -> value, no secret inside
        (the password is in a file only the owner reads). `user`: the SCRAM user of a SASL_SSL broker."""
        settings = {"STREAMLET_BOOTSTRAP_SERVERS": self.bootstrap_servers}
        if self.security == PLAINTEXT_MODE:
            return settings
        tls = Path(self.tls_dir) if self.tls_dir else Path(self.data_dir).parent / _TLS_DIR
        settings["STREAMLET_SSL_CAFILE"] = str(tls / "ca.pem")
        if self.security == SSL_MODE:
            settings["STREAMLET_SECURITY_PROTOCOL"] = "SSL"
            settings["STREAMLET_SSL_CERTFILE"] = str(tls / "client.pem")
            settings["STREAMLET_SSL_KEYFILE"] = str(tls / "client.key")
        else:
            settings["STREAMLET_SECURITY_PROTOCOL"] = "SASL_SSL"
            settings["STREAMLET_SASL_MECHANISM"] = "SCRAM-SHA-512"
            settings["STREAMLET_SASL_PLAIN_USERNAME"] = user
            settings["STREAMLET_SASL_PLAIN_PASSWORD_FILE"] = str(tls / _password_file(user))
        return settings


class LocalBroker:
    """One KRaft broker+controller on 127.0.0.1, owned through its directory.

    Settings are those of a single-node test cluster: replication factor 1 for internal topics,
    `group.initial.rebalance.delay.ms=0` (so consumer groups form at once), no topic auto-creation
    (a missing topic is an error, as in production), and a heap fit for a 2-core machine.
    """

    def __init__(
        self,
        directory: Path | str | None = None,
        *,
        port: int | None = None,
        preferred_port: int | None = None,
        host: str = "127.0.0.1",
        kafka_version: str | None = None,
        heap: str = "512m",
        die_with_parent: bool = False,
        overrides: Mapping[str, str] | None = None,
        security: str = PLAINTEXT_MODE,
        controller_port: int | None = None,
        cluster_id: str | None = None,
        tls_dir: Path | None = None,
    ) -> None:
        """`controller_port` and `cluster_id`: fixed by a `LocalCluster`, whose nodes must know each other's
        controller ports and share one cluster id before any of them starts; a single broker picks its own.
        `die_with_parent`: the JVM gets SIGTERM when the starting process dies, even by SIGKILL (Linux),
        so a killed test run leaves no broker behind; `streamlet broker start` leaves it off on purpose.
        `security`: one of SECURITY_MODES; a secured broker makes its CA, certificates and users at first start,
        in `tls_dir` (default: `<directory>/tls`; the nodes of a `LocalCluster` share one, so they trust each other
        and know the same users)."""
        if security not in SECURITY_MODES:
            raise BrokerError(f"security={security!r}: expected one of {', '.join(SECURITY_MODES)}")
        self.security = security
        self.directory = Path(directory) if directory is not None else default_broker_dir()
        self.die_with_parent = die_with_parent
        self.host = host
        self.requested_port = port
        self.preferred_port = preferred_port  # used when free and no port is requested (see `choose_port`)
        self.kafka_version = kafka_version or selected_kafka_version()
        self.heap = heap
        self.overrides = dict(overrides or {})  # server.properties entries that replace the defaults
        self.requested_controller_port = controller_port
        self.cluster_id = cluster_id
        self._tls_dir = tls_dir
        self._proc: subprocess.Popen[bytes] | None = None  # the JVM this object launched
        self.exit_code: int | None = None  # that JVM's, once `stop` saw it exit
        self._archive_writer: list[str] | None = None  # the options of a broker that writes the class archive

    @property
    def _state_file(self) -> Path:
        return self.directory / _STATE_FILE

    def status(self) -> BrokerStatus | None:
        """The running broker started from this directory, or None (a stale pid file is removed)."""
        try:
            state = BrokerStatus(**json.loads(self._state_file.read_text()))
        except (OSError, ValueError, TypeError):
            return None
        if not _is_our_broker(state.pid, state.data_dir):
            self._state_file.unlink(missing_ok=True)
            return None
        return state

    @property
    def bootstrap_servers(self) -> str:
        status = self.status()
        if status is None:
            raise BrokerError(f"no broker running from {self.directory}")
        return status.bootstrap_servers

    def start(self, timeout: float = 120.0) -> BrokerStatus:
        """Start the broker (or return the running one) and wait until it answers metadata requests."""
        running = self.status()
        if running is not None:
            return running
        return self.wait_ready(self.launch(), timeout)

    def launch(self) -> BrokerStatus:
        """Start the JVM without waiting for it: a node of a cluster answers only once a majority of the
        controller quorum runs, so `LocalCluster` launches every node before it waits for any."""
        java = check_java()
        libs = kafka_libs(self.kafka_version)
        port = choose_port(self.host, self.requested_port, self.preferred_port)
        if not _port_free(self.host, port):
            raise BrokerError(f"port {port} on {self.host} is taken; choose another with --port or stop its owner")
        controller_port = self.requested_controller_port or _free_port(self.host)
        while controller_port == port:
            controller_port = _free_port(self.host)

        self.directory.mkdir(parents=True, exist_ok=True)
        data_dir = self.directory / "data"
        log_file = self.directory / "broker.log"
        properties = self.directory / "server.properties"
        # a secured broker's listeners replace the plaintext ones (in a properties file the last key wins)
        secured = self._security_properties(port, controller_port) if self.security != PLAINTEXT_MODE else {}
        properties.touch(mode=0o600)  # holds the broker's own password when secured
        properties.write_text(
            _server_properties(self.host, port, controller_port, data_dir)
            + "".join(f"{key}={value}\n" for key, value in {**secured, **self.overrides}.items())
        )
        log4j = self.directory / "log4j2.properties"
        log4j.write_text(_LOG4J2)
        jvm_options = [f"-Xmx{self.heap}", f"-Xms{self.heap}", *broker_jvm_options()]
        archive = ClassArchive(cache_root() / "class-archives", libs, java, jvm_options)
        if self._archive_writer is None and archive.missing():
            archive.write(self._write_class_archive)
        jvm = [
            java,
            *jvm_options,
            *archive.options(),
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            str(libs / "*"),
        ]

        if (data_dir / "meta.properties").exists():
            check_storage_version(self.directory, self.kafka_version)
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
            cluster_id = self.cluster_id or _new_cluster_id()
            fmt = subprocess.run(
                [*jvm, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(properties), *self._scram()],
                capture_output=True,
                text=True,
                check=False,
            )
            if fmt.returncode != 0:
                raise BrokerError(f"formatting KRaft storage in {data_dir} failed:\n{fmt.stdout}{fmt.stderr}")
            (self.directory / _FORMATTED_BY_FILE).write_text(self.kafka_version + "\n")

        with open(log_file, "ab") as log:
            proc = subprocess.Popen(
                [*jvm, *(self._archive_writer or []), "kafka.Kafka", str(properties)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent if self.die_with_parent else None,
            )
        state = BrokerStatus(
            pid=proc.pid,
            host=self.host,
            port=port,
            controller_port=controller_port,
            kafka_version=self.kafka_version,
            data_dir=str(data_dir),
            log_file=str(log_file),
            started_at=time.time(),
            security=self.security,
            tls_dir=str(self.tls_dir) if self.security != PLAINTEXT_MODE else "",
        )
        self._state_file.write_text(json.dumps(asdict(state), indent=2) + "\n")
        self._proc = proc
        return state

    def wait_ready(self, state: BrokerStatus, timeout: float) -> BrokerStatus:
        """Wait until the launched broker answers; stop it and raise if it exits or stays silent."""
        proc, log_file, port = self._proc, Path(state.log_file), state.port
        if proc is None:
            raise BrokerError("wait_ready() before launch()")
        probe_tls = None if self.security == PLAINTEXT_MODE else self._probe_context()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self._state_file.unlink(missing_ok=True)
                raise BrokerError(f"the broker exited with code {proc.returncode}; see {log_file}:\n{_tail(log_file)}")
            if broker_answers(self.host, port, tls=probe_tls):
                return state
            time.sleep(0.25)
        self.stop()
        raise BrokerError(f"the broker did not answer within {timeout:.0f}s; see {log_file}:\n{_tail(log_file)}")

    # ---- a secured broker ------------------------------------------------------------------------------

    @property
    def tls_dir(self) -> Path:
        return self._tls_dir if self._tls_dir is not None else self.directory / _TLS_DIR

    def _tls_files(self) -> TlsFiles:
        """The CA and certificates, made at the first start and kept with the data (the clients' files stay valid
        across restarts); passwords for the SCRAM users likewise."""
        if not (self.tls_dir / "ca.pem").exists():
            make_tls_files(self.tls_dir, client_name=CLIENT_USER)
            for user in _SCRAM_USERS:
                path = self.tls_dir / _password_file(user)
                path.touch(mode=0o600)
                path.write_text(secrets.token_urlsafe(18) + "\n")
        return tls_files(self.tls_dir)

    def _password(self, user: str) -> str:
        return (self.tls_dir / _password_file(user)).read_text().strip()

    def _security_properties(self, port: int, controller_port: int) -> dict[str, str]:
        """Listener, TLS, SASL and ACL settings. The clients' listener (also the inter-broker one) is SASL_SSL or
        SSL; the controller's is mutual TLS, where only the broker's certificate gets in. ACLs are enforced
        (StandardAuthorizer): the broker, `admin` and `streamlet` are super users, `limited` has what ACLs give it."""
        files = self._tls_files()
        name = "SSL" if self.security == SSL_MODE else "SASL_SSL"
        props = {
            "listeners": f"{name}://{self.host}:{port},CONTROLLER://{self.host}:{controller_port}",
            "advertised.listeners": f"{name}://{self.host}:{port}",
            "inter.broker.listener.name": name,
            "listener.security.protocol.map": f"{name}:{name},CONTROLLER:SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(files.broker),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(files.ca),
            "listener.name.controller.ssl.client.auth": "required",
            # a certificate's principal is its CN ("User:streamlet"), as ACLs name it
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]*).*$/$1/,DEFAULT",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": ";".join(f"User:{user}" for user in (_BROKER_PRINCIPAL, ADMIN_USER, CLIENT_USER)),
        }
        if self.security == SSL_MODE:
            props["ssl.client.auth"] = "required"
            return props
        admin = self._password(ADMIN_USER)
        scram = f'{_SCRAM_MODULE} required username="{ADMIN_USER}" password="{admin}";'
        plain_users = "".join(f' user_{user}="{self._password(user)}"' for user in _SCRAM_USERS)
        props.update(
            {
                "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
                "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": scram,
                "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": scram,
                "listener.name.sasl_ssl.plain.sasl.jaas.config": (
                    f'{_PLAIN_MODULE} required username="{ADMIN_USER}" password="{admin}"{plain_users};'
                ),
            }
        )
        return props

    def _scram(self) -> list[str]:
        """StorageTool arguments that create the SCRAM users (both hashes) with the cluster's first metadata.

        The passwords are on the storage tool's command line for the second it runs: this is a development
        broker on the developer's machine. A directory formatted without users keeps none: change `--security`
        with a fresh `--dir`."""
        if self.security != SASL_SSL_MODE:
            return []
        args: list[str] = []
        for user in _SCRAM_USERS:
            for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
                args += ["--add-scram", f"{mechanism}=[name={user},password={self._password(user)}]"]
        return args

    def _probe_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.tls_dir / "ca.pem"))
        if self.security == SSL_MODE:
            context.load_cert_chain(self.tls_dir / "client.pem", self.tls_dir / "client.key")
        return context

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the broker this directory started; True if one was running."""
        state = self.status()
        if state is None:
            return False
        own = self._proc if self._proc is not None and self._proc.pid == state.pid else None

        def alive() -> bool:
            if own is not None:
                return own.poll() is None
            _reap(state.pid)
            return _pid_alive(state.pid)

        with contextlib.suppress(ProcessLookupError):
            os.kill(state.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and alive():
            time.sleep(0.1)
        if alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(state.pid, signal.SIGKILL)
            if own is not None:
                own.wait()
            _reap(state.pid)
        self.exit_code = None if own is None else own.returncode
        self._state_file.unlink(missing_ok=True)
        return True

    def _write_class_archive(self, writer_options: list[str]) -> int | None:
        """Start and stop a throwaway broker whose JVM writes the class archive at its exit (see `ClassArchive`);
        its exit code, or None when it did not start."""
        directory = Path(tempfile.mkdtemp(prefix="streamlet-class-archive-"))
        writer = LocalBroker(directory, kafka_version=self.kafka_version, heap=self.heap, die_with_parent=True)
        writer._archive_writer = writer_options
        try:
            writer.start()
            writer.stop()
            return writer.exit_code
        except BrokerError:
            writer.stop()
            return None
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def wipe(self) -> None:
        """Stop the broker and delete its data: the next start is a fresh, empty cluster."""
        self.stop()
        shutil.rmtree(self.directory / "data", ignore_errors=True)


def broker_jvm_options() -> list[str]:
    """`$STREAMLET_BROKER_JVM_OPTIONS` (split as a shell would), else DEFAULT_BROKER_JVM_OPTIONS.

    The tests set `-XX:+UseSerialGC -XX:TieredStopAtLevel=1` (tests/conftest.py): their brokers live for seconds to
    minutes under light load, where C2's compilations and G1's threads cost more CPU than they save (on a 2-core
    machine a start took 6.9 s of CPU, now 3.2 s; an idle broker 4.2 % of a core, now 2.6 %). The demo and the
    benchmarks keep the defaults."""
    configured = os.environ.get(BROKER_JVM_OPTIONS_ENV)
    if configured is None:
        return list(DEFAULT_BROKER_JVM_OPTIONS)
    return shlex.split(configured)


def _new_cluster_id() -> str:
    """A Kafka cluster id (URL-safe base64 of a UUID); never one starting with '-', which the storage
    tool's argument parser would take for an option."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def _server_properties(host: str, port: int, controller_port: int, data_dir: Path) -> str:
    return f"""# written by streamlet.kafka.broker
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@{host}:{controller_port}
listeners=PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}
advertised.listeners=PLAINTEXT://{host}:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs={data_dir}
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
log.cleaner.dedupe.buffer.size=33554432
"""


def _password_file(user: str) -> str:
    return f"{user}.password"


_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"

_LOG4J2 = """status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


def _die_with_parent() -> None:
    """In the child before exec: ask Linux to SIGTERM it when its parent dies (prctl PR_SET_PDEATHSIG)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the fixture's own stop() still runs on a normal exit
        pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _is_our_broker(pid: int, data_dir: str) -> bool:
    """The pid is alive and is a kafka.Kafka JVM for our directory (pids get reused)."""
    if not _pid_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return True  # no /proc: trust the pid file
    return "kafka.Kafka" in cmdline and str(Path(data_dir).parent) in cmdline


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
