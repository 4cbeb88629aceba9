"""StreamsConfig: every knob of a streamlet application, named after Kafka Streams' configs.

One typed object, validated when it is built, so a typo or an out-of-range value stops the app at
start-up with a message that names the setting, instead of surfacing as odd behaviour hours later.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from streamlet.errors import ConfigError
from streamlet.kafka.connect import Cluster
from streamlet.kafka.security import (
    SECRET_SETTINGS,
    SECURITY_DEFAULTS,
    ClientSecurity,
    Password,
    as_password,
    read_secret_file,
)
from streamlet.topology.optimizer import verify_topology_optimization
from streamlet.topology.timestamps import TimestampExtractor, resolve_extractor
from streamlet.web_security import WEB_SECURITY_DEFAULTS, WebSecurity

AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE_V2 = "exactly_once_v2"
PROCESSING_GUARANTEES = (AT_LEAST_ONCE, EXACTLY_ONCE_V2)
#: Kafka Streams' commit.interval.ms defaults: 30 s at-least-once, 100 ms exactly-once (a commit ends a
#: transaction, and read_committed consumers downstream see nothing before it).
DEFAULT_COMMIT_INTERVAL_MS = {AT_LEAST_ONCE: 30_000, EXACTLY_ONCE_V2: 100}
_LEGAL_ID = re.compile(r"[a-zA-Z0-9._-]{1,240}")
DESERIALIZATION_HANDLERS = ("fail", "log_and_continue", "dead_letter")
PROCESSING_HANDLERS = ("fail", "log_and_continue", "dead_letter")
PRODUCTION_HANDLERS = ("fail", "continue", "dead_letter")
REBALANCE_PROTOCOLS = ("cooperative", "eager")


DEFAULT_BOOTSTRAP_SERVERS = "127.0.0.1:9092"
# Settings the environment may supply, and the variable for each. The environment sits below an App's own
# config and above the built-in default (see `streamlet.app_commands.resolve_worker_config` for the whole order).
# Security settings (and the secrets: `sasl_plain_password`, `ssl_password`) come from the environment
# too, as STREAMLET_<SETTING>, e.g. $STREAMLET_SASL_PLAIN_PASSWORD; never from the command line.
_ENVIRONMENT_DEFAULTS: Mapping[str, Any] = {**SECURITY_DEFAULTS, **WEB_SECURITY_DEFAULTS}
ENVIRONMENT_VARIABLES: Mapping[str, str] = {
    "bootstrap_servers": "STREAMLET_BOOTSTRAP_SERVERS",
    **{name: f"STREAMLET_{name.upper()}" for name in _ENVIRONMENT_DEFAULTS},
}
#: Settings holding a secret: a Password (shown as [hidden]), never taken from the command line
SECRETS = (*SECRET_SETTINGS, "web_token")


def default_bootstrap_servers(environ: Mapping[str, str] | None = None) -> str:
    """`$STREAMLET_BOOTSTRAP_SERVERS` if set and non-empty, else the local broker's address."""
    env = os.environ if environ is None else environ
    return env.get(ENVIRONMENT_VARIABLES["bootstrap_servers"]) or DEFAULT_BOOTSTRAP_SERVERS


def _from_environment(name: str) -> Any:
    """A StreamsConfig field's default: `$STREAMLET_<NAME>` if set and non-empty, else the built-in default."""

    def default() -> Any:
        value = os.environ.get(ENVIRONMENT_VARIABLES[name])
        return value if value else _ENVIRONMENT_DEFAULTS[name]

    return field(default_factory=default)


def security_from_environment(environ: Mapping[str, str] | None = None) -> ClientSecurity:
    """The security settings `$STREAMLET_SECURITY_PROTOCOL` and its siblings give (for commands without an App)."""
    env = os.environ if environ is None else environ
    return ClientSecurity.from_settings(
        {name: env[ENVIRONMENT_VARIABLES[name]] for name in SECURITY_DEFAULTS if env.get(ENVIRONMENT_VARIABLES[name])}
    )


def cluster_from_environment(bootstrap_servers: str | None = None, environ: Mapping[str, str] | None = None) -> Cluster:
    """For commands without an App: the servers given (else the environment's), security from the environment."""
    env = os.environ if environ is None else environ
    return Cluster(bootstrap_servers or default_bootstrap_servers(env), security_from_environment(env))


def default_state_dir() -> str:
    return os.path.join(tempfile.gettempdir(), "streamlet")


#: StreamsConfig.MAX_RACK_AWARE_ASSIGNMENT_TAG_LIST_SIZE / _KEY_LENGTH / _VALUE_LENGTH
MAX_RACK_AWARE_ASSIGNMENT_TAGS = 5
CLIENT_TAG_PREFIX = "client.tag."
MAX_TAG_KEY_LENGTH = 20
MAX_TAG_VALUE_LENGTH = 30


def _validate_rack_awareness(client_tags: Mapping[str, str], rack_aware_assignment_tags: Sequence[str]) -> None:
    """`StreamsConfig.validateRackAwarenessConfiguration`: at most 5 tags, each configured tag key set on this
    client, keys <= 20 and values <= 30 characters (the subscription carries them to every leader)."""
    if isinstance(rack_aware_assignment_tags, str) or not all(isinstance(t, str) for t in rack_aware_assignment_tags):
        raise ConfigError(f"rack_aware_assignment_tags must be a list of tag keys, got {rack_aware_assignment_tags!r}")
    if len(rack_aware_assignment_tags) > MAX_RACK_AWARE_ASSIGNMENT_TAGS:
        raise ConfigError(f"rack_aware_assignment_tags: at most {MAX_RACK_AWARE_ASSIGNMENT_TAGS} tag keys")
    if not isinstance(client_tags, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in client_tags.items()
    ):
        raise ConfigError(f"client_tags must map tag keys to values (strings), got {client_tags!r}")
    if len(client_tags) > MAX_RACK_AWARE_ASSIGNMENT_TAGS:
        raise ConfigError(f"client_tags: at most {MAX_RACK_AWARE_ASSIGNMENT_TAGS} client tags")
    for tag in rack_aware_assignment_tags:
        if tag not in client_tags:
            raise ConfigError(f"rack_aware_assignment_tags contains {tag!r}, which is not a key of client_tags")
    for key, value in client_tags.items():
        if len(key) > MAX_TAG_KEY_LENGTH:
            raise ConfigError(f"client_tags: tag key {key!r} exceeds {MAX_TAG_KEY_LENGTH} characters")
        if len(value) > MAX_TAG_VALUE_LENGTH:
            raise ConfigError(f"client_tags: tag value {value!r} exceeds {MAX_TAG_VALUE_LENGTH} characters")


@dataclass(frozen=True)
class StreamsConfig:
    """Application configuration. Field names are Kafka Streams' config names in snake_case."""

    application_id: str
    bootstrap_servers: str = field(default_factory=default_bootstrap_servers)
    state_dir: str = field(default_factory=default_state_dir)
    num_stream_threads: int = 1
    # `streamlet worker` only: run each stream thread in a process of its own (streamlet.runtime.thread_processes),
    # so that N threads use N cores; each process is a client with one thread
    process_per_thread: bool = False
    num_standby_replicas: int = 0
    max_warmup_replicas: int = 2
    acceptable_recovery_lag: int = 10_000
    # Kafka Streams enforces >= 60000; streamlet allows shorter intervals for tests and experiments.
    probing_rebalance_interval_ms: int = 600_000
    commit_interval_ms: int = -1  # -1: the guarantee's default (DEFAULT_COMMIT_INTERVAL_MS)
    processing_guarantee: str = AT_LEAST_ONCE
    # Kafka Streams' exactly-once default: a crashed worker's open transaction blocks read_committed readers
    # (and restores) of its partitions until it times out, unless the same transactional id comes back first.
    transaction_timeout_ms: int = 10_000
    # The producer's max.block.ms: how long starting a transactional producer waits for its coordinator
    max_block_ms: int = 60_000
    task_assignor: str = "high_availability"
    # KIP-708 rack-aware standbys: this client's tags (Kafka's `client.tag.<key>`), sent in its subscription,
    # and the tag keys HATA spreads each task's standbys over (`rack.aware.assignment.tags`).
    client_tags: Mapping[str, str] = field(default_factory=dict, hash=False)
    rack_aware_assignment_tags: tuple[str, ...] = ()
    # KIP-925 rack-aware task assignment (HATA): this client's rack (Kafka's `client.rack`), the strategy
    # ("none", "min_traffic", "balance_subtopology") and its costs (None: HATA's defaults 10 and 1).
    client_rack: str | None = None
    rack_aware_assignment_strategy: str = "none"
    rack_aware_assignment_traffic_cost: int | None = None
    rack_aware_assignment_non_overlap_cost: int | None = None
    statestore_cache_max_bytes: int = 10 * 1024 * 1024
    # KIP-892 (exactly_once_v2): uncommitted state-store writes this client may buffer, divided across its stream
    # threads, before a thread commits early whatever commit_interval_ms says (Kafka's default 64 MiB; -1: no bound)
    statestore_uncommitted_max_bytes: int = 64 * 1024 * 1024
    # RocksDB memory (streamlet.state.rocksdb_memory): per store, Kafka Streams' defaults; with
    # rocksdb_bounded_memory_bytes > 0, one cache of that size for every store of the process, memtables included
    rocksdb_block_cache_bytes: int = 50 * 1024 * 1024
    rocksdb_write_buffer_bytes: int = 16 * 1024 * 1024
    rocksdb_max_write_buffers: int = 3
    rocksdb_bounded_memory_bytes: int = 0
    state_cleanup_delay_ms: int = 600_000
    replication_factor: int = -1
    # Topic configs for every topic the application creates for itself (changelogs, repartition topics, the
    # assignment-history and metrics topics), e.g. {"min.insync.replicas": "2"}: Kafka Streams' `topic.` prefix,
    # which `from_mapping` also accepts (`topic.min.insync.replicas=2`). A string "k=v,k=v" is parsed. A topic's
    # own settings (a changelog's cleanup.policy, a reply topic's retention) win over these.
    internal_topic_configs: Mapping[str, str] | str = field(default_factory=dict, hash=False)
    application_server: str = ""
    # The worker's web server (interactive queries, @app.page): 0 = none. Not a Kafka Streams setting (Faust's
    # web_port/web_bind). With a port and no application_server, application_server is web_host:web_port.
    web_port: int = 0
    web_host: str = "127.0.0.1"
    # Kafka's group.instance.id (static membership, KIP-345): thread n joins as "<group_instance_id>-<n>"
    group_instance_id: str = ""
    # A static member keeps its place in the group when it stops (so a restart moves nothing); this makes it
    # leave instead, so its tasks move at once (Kafka Streams' CloseOptions.leaveGroup; `streamlet worker --leave`)
    leave_group_on_close: bool = False
    # The group leader appends one JSON event per rebalance to `<application_id>-assignments` (who got which
    # tasks, lags, warmups, follow-ups); `streamlet experiment` reads it. Off: no topic, no extra producer.
    assignment_history: bool = True
    # Every this many ms each client appends one JSON event of its metrics (records processed, lags, restore
    # progress, commit latency, rebalances, time not RUNNING) to `<application_id>-metrics`; 0: none.
    metrics_interval_ms: int = 5_000
    deserialization_exception_handler: str = "fail"
    processing_exception_handler: str = "fail"
    production_exception_handler: str = "fail"
    dead_letter_topic: str = ""
    restore_chunk_records: int = 10_000
    max_poll_records: int = 1_000
    # A task with several input partitions takes the record with the smallest timestamp among their heads; an
    # empty one caught up with the broker is waited for this long (ms) before processing goes on without it
    # (Kafka's max.task.idle.ms; -1: never wait, not even for records known to be on the broker)
    max_task_idle_ms: int = 0
    # a partition with more fetched, unprocessed records than this is paused until its task catches up
    buffered_records_per_partition: int = 1_000
    # A stream thread takes the fetched records of its single-partition tasks of a sub-topology that writes a
    # repartition topic in event-time order across them: from the partition with the earliest head, up to this
    # many ms past the next earliest (and its threads advance together), so a replayed backlog reaches repartition
    # topics close to time order (README "Replaying a backlog"). -1: each task processes its fetched batch at once
    event_time_slice_ms: int = 1_000
    # The processes of a group share their positions through `<application_id>-event-time` every this many ms, and
    # a process goes at most `event_time_drift_ms` past the slowest other one still catching up. Keep the drift
    # under the windows' grace: records of the process behind arrive up to that much late. 0: no sharing
    event_time_exchange_interval_ms: int = 200
    event_time_drift_ms: int = 30_000
    session_timeout_ms: int = 45_000  # Kafka 3.0+ default; a busy 2-core box must not lose members
    heartbeat_interval_ms: int = 3_000
    rebalance_timeout_ms: int = 60_000
    max_poll_interval_ms: int = 300_000
    # How the group rebalances (seed 003). "cooperative" (KIP-429, Kafka Streams' default since 2.4): members keep
    # their partitions while the group rebalances, and only partitions changing owner stop, handed over in a second
    # round. "eager": every member gives up everything first; for experiments, and the first bounce of a rolling
    # upgrade from a streamlet that only spoke eager (Kafka Streams' upgrade.from two-bounce procedure).
    rebalance_protocol: str = "cooperative"
    # Kafka's topology.optimization: "none", "all" or a comma list of rules (see streamlet.topology.optimizer);
    # the App builds its topology with it
    topology_optimization: str = "none"
    # None: each record's own timestamp; else `fn(record, partition_time) -> int` (see streamlet.topology.timestamps)
    timestamp_extractor: TimestampExtractor | str | None = None
    # Security: Kafka's client settings in snake_case, each defaulting to $STREAMLET_<NAME> (see
    # streamlet.kafka.security). A secret may instead be read from the file `<name>_file` names.
    security_protocol: str = _from_environment("security_protocol")
    ssl_cafile: str = _from_environment("ssl_cafile")
    ssl_certfile: str = _from_environment("ssl_certfile")
    ssl_keyfile: str = _from_environment("ssl_keyfile")
    ssl_password: Password | str = _from_environment("ssl_password")
    ssl_password_file: str = _from_environment("ssl_password_file")
    ssl_endpoint_identification_algorithm: str = _from_environment("ssl_endpoint_identification_algorithm")
    sasl_mechanism: str = _from_environment("sasl_mechanism")
    sasl_plain_username: str = _from_environment("sasl_plain_username")
    sasl_plain_password: Password | str = _from_environment("sasl_plain_password")
    sasl_plain_password_file: str = _from_environment("sasl_plain_password_file")
    # OAUTHBEARER's token hook: an aiokafka AbstractTokenProvider, a function returning the token, or "module:attr"
    sasl_oauth_token_provider: Any = _from_environment("sasl_oauth_token_provider")
    # The web server beyond 127.0.0.1 (streamlet.web_security): HTTPS with this certificate and key, the CA of
    # the other workers' certificates (forwarded queries), and a token every request must carry (else 401)
    web_ssl_certfile: str = _from_environment("web_ssl_certfile")
    web_ssl_keyfile: str = _from_environment("web_ssl_keyfile")
    web_ssl_cafile: str = _from_environment("web_ssl_cafile")
    web_token: Password | str = _from_environment("web_token")
    web_token_file: str = _from_environment("web_token_file")
    # built from the fields above when the config is built
    security: ClientSecurity = field(init=False, repr=False, compare=False)
    web_security: WebSecurity = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "timestamp_extractor", resolve_extractor(self.timestamp_extractor))
        for name in SECRETS:  # wrapped, so a printed config shows [hidden]
            object.__setattr__(self, name, as_password(getattr(self, name)))
        security = ClientSecurity.from_settings({name: getattr(self, name) for name in SECURITY_DEFAULTS})
        object.__setattr__(self, "security", security)
        # the resolved hook, so a replace()d config shares it (and the TLS context cached for its settings)
        object.__setattr__(self, "sasl_oauth_token_provider", security.sasl_oauth_token_provider)
        if self.web_token and self.web_token_file:
            raise ConfigError("give web_token or web_token_file, not both")
        token = read_secret_file("web_token", self.web_token_file) if self.web_token_file else self.web_token
        object.__setattr__(
            self,
            "web_security",
            WebSecurity(self.web_ssl_certfile, self.web_ssl_keyfile, self.web_ssl_cafile, as_password(token)),
        )
        object.__setattr__(self, "internal_topic_configs", parse_topic_configs(self.internal_topic_configs))
        if self.processing_guarantee not in PROCESSING_GUARANTEES:
            hint = difflib.get_close_matches(str(self.processing_guarantee), PROCESSING_GUARANTEES, n=1)
            raise ConfigError(
                f"processing_guarantee={self.processing_guarantee!r}: expected one of "
                f"{', '.join(PROCESSING_GUARANTEES)}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
            )
        verify_topology_optimization(self.topology_optimization)
        if self.rebalance_protocol not in REBALANCE_PROTOCOLS:
            raise ConfigError(
                f"rebalance_protocol={self.rebalance_protocol!r}: expected one of {', '.join(REBALANCE_PROTOCOLS)}"
            )
        if self.commit_interval_ms == -1:
            object.__setattr__(self, "commit_interval_ms", DEFAULT_COMMIT_INTERVAL_MS[self.processing_guarantee])
        if not self.application_id or not isinstance(self.application_id, str):
            raise ConfigError("application_id is required (a non-empty string, used as the consumer group id)")
        for name in (
            "num_stream_threads",
            "max_warmup_replicas",
            "restore_chunk_records",
            "max_poll_records",
            "buffered_records_per_partition",
        ):
            _require_int(name, getattr(self, name), minimum=1)
        for name in (
            "num_standby_replicas",
            "acceptable_recovery_lag",
            "commit_interval_ms",
            "statestore_cache_max_bytes",
            "state_cleanup_delay_ms",
            "transaction_timeout_ms",
            "max_block_ms",
            "metrics_interval_ms",
            "rocksdb_bounded_memory_bytes",
        ):
            _require_int(name, getattr(self, name), minimum=0)
        for name in ("rocksdb_block_cache_bytes", "rocksdb_write_buffer_bytes", "rocksdb_max_write_buffers"):
            _require_int(name, getattr(self, name), minimum=1)
        _require_int("max_task_idle_ms", self.max_task_idle_ms, minimum=-1)
        _require_int("statestore_uncommitted_max_bytes", self.statestore_uncommitted_max_bytes, minimum=-1)
        _require_int("event_time_slice_ms", self.event_time_slice_ms, minimum=-1)
        _require_int("event_time_exchange_interval_ms", self.event_time_exchange_interval_ms, minimum=0)
        _require_int("event_time_drift_ms", self.event_time_drift_ms, minimum=0)
        _require_int("probing_rebalance_interval_ms", self.probing_rebalance_interval_ms, minimum=1_000)
        for name, allowed in (
            ("deserialization_exception_handler", DESERIALIZATION_HANDLERS),
            ("processing_exception_handler", PROCESSING_HANDLERS),
            ("production_exception_handler", PRODUCTION_HANDLERS),
        ):
            mode = getattr(self, name)
            if mode not in allowed:
                raise ConfigError(f"{name}={mode!r}: expected one of {', '.join(allowed)}")
            if mode == "dead_letter" and not self.dead_letter_topic:
                raise ConfigError(f"{name}='dead_letter' needs dead_letter_topic")
        if self.group_instance_id and not _LEGAL_ID.fullmatch(self.group_instance_id):
            raise ConfigError(
                f"group_instance_id={self.group_instance_id!r}: use at most 240 of [a-zA-Z0-9._-] (Kafka's rule for "
                "ids, less room for the thread suffix)"
            )
        _validate_rack_awareness(self.client_tags, self.rack_aware_assignment_tags)
        if self.client_rack is not None and (not isinstance(self.client_rack, str) or not self.client_rack):
            raise ConfigError(f"client_rack must be a non-empty string or unset, got {self.client_rack!r}")
        if self.rack_aware_assignment_strategy not in ("none", "min_traffic", "balance_subtopology"):
            raise ConfigError(
                f"rack_aware_assignment_strategy={self.rack_aware_assignment_strategy!r}: expected one of "
                "none, min_traffic, balance_subtopology"
            )
        for name in ("rack_aware_assignment_traffic_cost", "rack_aware_assignment_non_overlap_cost"):
            if getattr(self, name) is not None:
                _require_int(name, getattr(self, name), minimum=0)
        object.__setattr__(self, "client_tags", dict(self.client_tags))
        object.__setattr__(self, "rack_aware_assignment_tags", tuple(self.rack_aware_assignment_tags))
        _require_int("web_port", self.web_port, minimum=0)
        if self.web_port > 65535:
            raise ConfigError(f"web_port must be <= 65535, got {self.web_port}")
        if self.web_port and not self.application_server:
            object.__setattr__(self, "application_server", f"{self.web_host}:{self.web_port}")
        object.__setattr__(self, "application_server", _checked_application_server(self.application_server))

    @property
    def extractor(self) -> TimestampExtractor | None:
        """The resolved `timestamp_extractor` (a string was imported when the config was built)."""
        return cast("TimestampExtractor | None", self.timestamp_extractor)

    @property
    def cluster(self) -> Cluster:
        """Where the brokers are and how every client of this application reaches them."""
        return Cluster(self.bootstrap_servers, self.security)

    @property
    def topic_configs(self) -> Mapping[str, str]:
        """The parsed `internal_topic_configs`."""
        return cast("Mapping[str, str]", self.internal_topic_configs)

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == EXACTLY_ONCE_V2

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> StreamsConfig:
        """Build from a dict (CLI, env, files). Accepts Kafka's dotted names too (`num.stream.threads`)."""
        known = {f.name for f in dataclasses.fields(cls) if f.init}
        kwargs: dict[str, Any] = {}
        topic_configs: dict[str, str] = {}
        for raw_key, value in values.items():
            if raw_key.startswith(TOPIC_PREFIX):  # Kafka Streams' topic.* settings: configs of internal topics
                topic_configs[raw_key.removeprefix(TOPIC_PREFIX)] = str(value)
                continue
            if raw_key.startswith(CLIENT_TAG_PREFIX):  # Kafka's `client.tag.<key>`: one entry of client_tags
                kwargs.setdefault("client_tags", {})[raw_key[len(CLIENT_TAG_PREFIX) :]] = value
                continue
            key = config_key(raw_key)
            if key == "rack_aware_assignment_tags" and isinstance(value, str):  # a Kafka LIST: comma-separated
                value = tuple(t.strip() for t in value.split(",") if t.strip())
            if key not in known:
                raise ConfigError(f"unknown config {raw_key!r}{_unknown_config_hint(key, known)}")
            kwargs[key] = value
        if topic_configs:
            given = parse_topic_configs(kwargs.get("internal_topic_configs", {}))
            kwargs["internal_topic_configs"] = {**given, **topic_configs}
        return cls(**kwargs)

    def replace(self, **changes: Any) -> StreamsConfig:
        return dataclasses.replace(self, **changes)


# Faust's App settings a Faust user types first, and streamlet's name for each. A name Faust shares with no
# StreamsConfig field would get a misleading close match from difflib (or none): these hints come first.
FAUST_SETTINGS: Mapping[str, str] = {
    "broker": "bootstrap_servers (a host:port list, without Faust's kafka:// prefix)",
    "id": "application_id (App's first argument)",
    "datadir": "state_dir",
    "tabledir": "state_dir",
    "table_standby_replicas": "num_standby_replicas",
    "broker_commit_interval": "commit_interval_ms (milliseconds, not Faust's seconds)",
    "broker_session_timeout": "session_timeout_ms (milliseconds)",
    "broker_heartbeat_interval": "heartbeat_interval_ms (milliseconds)",
    "broker_max_poll_records": "max_poll_records",
    "broker_max_poll_interval": "max_poll_interval_ms (milliseconds)",
    "web_bind": "web_host",
    "topic_replication_factor": "replication_factor",
    "store": "nothing: tables are always in RocksDB under state_dir (drop store=)",
}
# aiokafka's names a user may bring, and streamlet's (Kafka's) setting for each
AIOKAFKA_SETTINGS: Mapping[str, str] = {
    "ssl_check_hostname": "ssl_endpoint_identification_algorithm ('https' checks the name, '' does not)",
    "ssl_context": "ssl_cafile, ssl_certfile, ssl_keyfile and ssl_password (streamlet builds the context)",
}


def _unknown_config_hint(key: str, known: set[str]) -> str:
    """' (did you mean ...?)' for an unknown setting: Faust's name for it, else the closest StreamsConfig field."""
    if key in FAUST_SETTINGS:
        return f" (Faust's {key!r}: in streamlet, use {FAUST_SETTINGS[key]})"
    if key in AIOKAFKA_SETTINGS:
        return f" (aiokafka's {key!r}: in streamlet, use {AIOKAFKA_SETTINGS[key]})"
    hint = difflib.get_close_matches(key, sorted(known), n=1)
    return f" (did you mean {hint[0]!r}?)" if hint else ""


TOPIC_PREFIX = "topic."


def parse_topic_configs(value: Mapping[str, Any] | str) -> dict[str, str]:
    """`internal_topic_configs` as a dict of strings (topic configs are strings on the wire): a mapping, or
    "key=value,key=value" as the command line and the environment give it."""
    if isinstance(value, str):
        pairs = [item.strip() for item in value.split(",") if item.strip()]
        parsed: dict[str, str] = {}
        for pair in pairs:
            key, sep, raw = pair.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"internal_topic_configs: expected 'key=value,...', got {pair!r}")
            parsed[key.strip()] = raw.strip()
        return parsed
    if not isinstance(value, Mapping):
        raise ConfigError(f"internal_topic_configs must be a mapping or 'key=value,...', got {value!r}")
    return {str(key): str(raw) for key, raw in value.items()}


def config_key(raw: str) -> str:
    """The field name for a config key: Kafka's dotted names (`num.stream.threads`) and dashes map to snake_case.

    Every layer of configuration goes through this, so `num.stream.threads` and `num_stream_threads` are
    recognised as the same setting when layers are merged.
    """
    if raw.startswith(TOPIC_PREFIX):  # a topic config (`topic.min.insync.replicas`): Kafka's name, kept whole
        return raw
    return raw.replace(".", "_").replace("-", "_")


def parse_setting(key: str, raw: str) -> Any:
    """A `KEY=VALUE` string from the command line, typed after the StreamsConfig field it sets.

    Typing by field (instead of "int if it parses") keeps `application_server=1234`-style strings strings, and
    turns `num_stream_threads=two` into an error that names the setting. Unknown keys stay strings:
    `from_mapping` rejects them with a suggestion.
    """
    name = config_key(key)
    if _FIELD_TYPES.get(name) == "int":
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if _FIELD_TYPES.get(name) == "bool":  # "false" must not reach the config as a (truthy) string
        lowered = raw.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ConfigError(f"{name} must be true or false, got {raw!r}")
    return raw


# field name -> annotation; annotations are strings here (`from __future__ import annotations`)
_FIELD_TYPES: dict[str, str] = {f.name: str(f.type) for f in dataclasses.fields(StreamsConfig)}


# Kafka's `Utils.HOST_PORT_PATTERN` (kafka-clients 4.4.0), which `HostInfo.buildFromEndpoint` matches whole
_HOST_PORT = re.compile(r"(?:[0-9a-zA-Z\-%._]*://)?\[?([0-9a-zA-Z\-%._:]*)]?:([0-9]+)")
_JAVA_INT_MAX = 2**31 - 1
_JAVA_TRIMMED = "".join(map(chr, range(0x21)))  # String.trim drops every char <= U+0020 at both ends


def _checked_application_server(value: Any) -> str:
    """Kafka Streams 4.4.0's KIP-1245 check of `application.server`: `ConfigDef` trims a string value (Java's
    `String.trim`), then `ApplicationServerConfigValidator` takes a blank one as unset and otherwise needs
    `HostInfo.buildFromEndpoint` to parse it: the whole value matches `HOST_PORT_PATTERN`, with a non-empty host
    and a port `Integer.parseInt` takes (no range check beyond that). The error carries Kafka's message. One
    deliberate difference: the `protocol://host:port` form Kafka accepts (and drops the protocol of) is refused,
    since other workers forward queries to `<scheme>://<application_server>` with the scheme of streamlet's own
    web settings."""
    if not isinstance(value, str):
        raise ConfigError(f"application_server must be a string, got {value!r}")
    value = value.strip(_JAVA_TRIMMED)
    if not value:
        return ""
    match = _HOST_PORT.fullmatch(value)
    if match is None or not match.group(1) or int(match.group(2)) > _JAVA_INT_MAX:
        raise ConfigError(
            f"Invalid value {value} for configuration application_server: Error parsing host address {value}. "
            "Expected format host:port."
        )
    if "://" in value:
        raise ConfigError(
            f"application_server={value!r}: give host:port without a protocol; streamlet forwards interactive "
            "queries with the scheme of its web server settings (web_ssl_*)"
        )
    return value


def _require_int(name: str, value: Any, *, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
