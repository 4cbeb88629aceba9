"""Scenario files: what `streamlet experiment run` does, as TOML, parsed and checked before anything starts.

A scenario names the app and its config, the input (a corpus or a generator, and a rate), and a timeline
of steps. Everything a run could trip over late (an unknown step, a misspelt setting, an assignor that does
not exist, stopping a client that was never started, a duplicate process id) is found here, by pure code:
an experiment that fails after ten minutes of rebalancing because of a typo in step 7 wastes the run, and
it has already left processes and topics behind. Parsing is `tomllib` plus explicit checks, so every error
names the step and the key.

```toml
[experiment]
name = "seed000-2-to-3"

[app]
target = "examples.wordcount.app:app"
env = { WORDCOUNT_INPUT_TOPIC = "{input_topic}", WORDCOUNT_OUTPUT_TOPIC = "{output_topic}",
        WORDCOUNT_APPLICATION_ID = "{application_id}" }
verify = "wordcount"

[app.config]
task_assignor = "high_availability"
acceptable_recovery_lag = 0

[input]
partitions = 6
corpus = "../../tests/fixtures/text"   # or: generator = "words", vocabulary = 20000
lines = 2000
rate = 200                             # lines per second

[process_ids]
A = "4b61083e-57d0-457d-951f-d06556c148ca"

[[step]]
action = "start"
clients = ["A", "B"]
threads = 2
```
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamlet.assignment.registry import resolve_task_assignor
from streamlet.config import REBALANCE_PROTOCOLS, StreamsConfig, config_key, parse_setting
from streamlet.errors import ConfigError, StreamletError


class ScenarioError(StreamletError):
    """The scenario file is wrong; raised before the runner starts anything."""


#: Settings the runner sets per client, or which would break the runner's bookkeeping.
RESERVED_CONFIG = frozenset({"application_id", "bootstrap_servers", "state_dir", "num_stream_threads"})
#: Placeholders the runner fills in `[app] env` values.
PLACEHOLDERS = ("input_topic", "output_topic", "application_id", "run_dir")
VERIFIERS = ("wordcount", "none")
GENERATORS = ("words",)
SIGNALS = ("SIGTERM", "SIGKILL")
MAX_WAIT_SECONDS = 3600.0
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")


@dataclass(frozen=True)
class AppSpec:
    target: str
    config: Mapping[str, Any]
    env: Mapping[str, str]
    verify: str = "wordcount"

    @property
    def task_assignor(self) -> str:
        return str(self.config.get("task_assignor", "high_availability"))

    @property
    def rebalance_protocol(self) -> str:
        return str(self.config.get("rebalance_protocol", StreamsConfig.rebalance_protocol))


@dataclass(frozen=True)
class InputSpec:
    partitions: int
    lines: int
    rate: float  # lines per second; 0 = produce nothing until a `rate` step
    corpus: Path | None = None
    generator: str | None = None
    vocabulary: int = 10_000
    words_per_line: int = 8
    seed: int = 0
    output_partitions: int | None = None


@dataclass(frozen=True)
class Step:
    """One timeline step; only the fields its action uses are set (see `_STEP_KEYS`)."""

    index: int
    action: str
    clients: tuple[str, ...] = ()
    client: str = ""
    by: str = ""
    threads: int | None = None
    signal: str = "SIGTERM"
    seconds: float | None = None
    timeout: float = 120.0
    settle: float = 3.0
    rate: float | None = None

    def describe(self) -> str:
        parts = [self.action]
        if self.clients:
            parts.append(",".join(self.clients))
        if self.client:
            parts.append(self.client)
        if self.by:
            parts.append(f"-> {self.by}")
        if self.action == "stop":
            parts.append(self.signal)
        if self.rate is not None:
            parts.append(f"{self.rate:g}/s")
        if self.seconds is not None:
            parts.append(f"{self.seconds:g}s")
        return " ".join(parts)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    app: AppSpec
    input: InputSpec
    steps: tuple[Step, ...]
    process_ids: Mapping[str, uuid.UUID] = field(default_factory=dict)
    source: Path | None = None

    def with_assignor(self, assignor: str) -> Scenario:
        """The same scenario with another `task_assignor` (each shipped scenario runs with HATA and balanced)."""
        _check_assignor(assignor, "--assignor")
        config = {**self.app.config, "task_assignor": assignor}
        return dataclasses.replace(self, app=dataclasses.replace(self.app, config=config))

    def with_protocol(self, protocol: str) -> Scenario:
        """The same scenario under another `rebalance_protocol` (`experiment run --protocols eager,cooperative`
        runs each shipped scenario under both, to compare what a rebalance costs the tasks that stay)."""
        if protocol not in REBALANCE_PROTOCOLS:
            known = ", ".join(REBALANCE_PROTOCOLS)
            raise ScenarioError(f"--protocols: {protocol!r} is not a rebalance protocol (expected {known})")
        config = {**self.app.config, "rebalance_protocol": protocol}
        return dataclasses.replace(self, app=dataclasses.replace(self.app, config=config))

    def client_names(self) -> list[str]:
        """Every client the timeline ever starts, in order of appearance."""
        names: list[str] = []
        for step in self.steps:
            for name in (*step.clients, step.by if step.action == "replace" else ""):
                if name and name not in names:
                    names.append(name)
            if step.action == "add" and step.client not in names:
                names.append(step.client)
        return names


#: Seconds of input a scenario must still produce after its last membership change, at the latest that change
#: can happen: the group rebalances under load and a client that joined gets records to process.
LOAD_AFTER_LAST_CHANGE_S = 10.0
#: The longest a `stop` (or the stop in a `replace`) takes: SIGTERM, then SIGKILL after this many seconds.
STOP_TIMEOUT_S = 60.0
MEMBERSHIP_ACTIONS = ("start", "add", "stop", "replace")


def step_max_seconds(step: Step) -> float:
    """The longest `step` can take in a run that does not fail (a wait that times out fails the run)."""
    if step.action in ("wait_stable", "wait_converged"):
        return step.timeout
    if step.action in ("stop", "replace"):
        return STOP_TIMEOUT_S
    if step.action in ("sleep", "pause"):
        return step.seconds or 0.0
    return 0.0


def last_membership_change_s(scenario: Scenario) -> float:
    """The latest time, in seconds from the start of the input, at which the last client joins or leaves."""
    elapsed, last = 0.0, 0.0
    for step in scenario.steps:
        elapsed += step_max_seconds(step)
        if step.action in MEMBERSHIP_ACTIONS:
            last = elapsed
    return last


def load_problem(scenario: Scenario) -> str | None:
    """Why the scenario may change its membership without load, or None.

    A client that joins after the input has ended processes nothing, and the run then shows a rebalance, not
    scaling. The input starts with the timeline and lasts `lines / rate` seconds; every wait is counted at its
    timeout, so the check holds however fast the group settles. With `rate` steps the input's timing depends
    on when they run, and the check gives no answer (None).
    """
    spec = scenario.input
    if any(step.action == "rate" for step in scenario.steps) or spec.rate <= 0:
        return None
    input_s = spec.lines / spec.rate
    needed_s = last_membership_change_s(scenario) + LOAD_AFTER_LAST_CHANGE_S
    if input_s >= needed_s:
        return None
    return (
        f"the input lasts {input_s:g}s ({spec.lines} lines at {spec.rate:g}/s), but the last client may join or "
        f"leave {last_membership_change_s(scenario):g}s in (each wait at its timeout): produce at least "
        f"{needed_s * spec.rate:.0f} lines, or shorten the timeouts, so the group changes under load "
        f"for {LOAD_AFTER_LAST_CHANGE_S:g}s more"
    )


# action -> (required keys, optional keys), besides "action":
#   start           clients = ["A", "B"] or a count (c1..cN); threads (default 2) - new clients, each with its
#                   own state dir and a process id from [process_ids] (else a random one)
#   add             client, threads - one more client
#   stop            client, signal = "SIGTERM" (clean: commit, flush, leave) | "SIGKILL" (kill -9)
#   replace         client, by, threads, signal - stop `client`, start `by` (new state dir, new process id)
#   pause / resume  client, seconds - SIGSTOP (for `seconds`, else until `resume`) / SIGCONT
#   wait_stable     timeout, settle - the last assignment event has exactly the running clients and threads,
#                   and no new event for `settle` seconds
#   wait_converged  timeout, settle - stable, no follow-up (probing) rebalance scheduled, and every stateful
#                   active task RUNNING (it ran there already, or the worker logged it restored since)
#   rate            rate - input lines per second from now on (0 pauses the input)
#   sleep           seconds
_STEP_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "start": (frozenset({"clients"}), frozenset({"threads"})),
    "add": (frozenset({"client"}), frozenset({"threads"})),
    "stop": (frozenset({"client"}), frozenset({"signal"})),
    "replace": (frozenset({"client", "by"}), frozenset({"threads", "signal"})),
    "pause": (frozenset({"client"}), frozenset({"seconds"})),
    "resume": (frozenset({"client"}), frozenset()),
    "wait_stable": (frozenset(), frozenset({"timeout", "settle"})),
    "wait_converged": (frozenset(), frozenset({"timeout", "settle"})),
    "rate": (frozenset({"rate"}), frozenset()),
    "sleep": (frozenset({"seconds"}), frozenset()),
}
STEP_ACTIONS = tuple(_STEP_KEYS)


def load_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario file; relative corpus paths are relative to the file."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScenarioError(f"scenario file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}") from None
    return parse_scenario(raw, base_dir=path.parent, source=path)


def parse_scenario(raw: Mapping[str, Any], *, base_dir: Path = Path("."), source: Path | None = None) -> Scenario:
    """A checked Scenario from a parsed TOML document (pure: no process, no broker, no import of the app)."""
    _only(raw, {"experiment", "app", "input", "process_ids", "step"}, "the scenario")
    experiment = _table(raw, "experiment")
    _only(experiment, {"name", "description"}, "[experiment]")
    name = _str(experiment, "name", "[experiment]")
    if not _NAME.match(name):
        raise ScenarioError(f"[experiment] name {name!r}: use letters, digits, '-', '_' or '.' (at most 40)")
    scenario = Scenario(
        name=name,
        description=str(experiment.get("description", "")),
        app=_app(_table(raw, "app")),
        input=_input(_table(raw, "input"), base_dir),
        steps=tuple(_step(i + 1, s) for i, s in enumerate(_steps(raw))),
        process_ids=_process_ids(raw.get("process_ids", {})),
        source=source,
    )
    check_timeline(scenario)
    return scenario


def check_timeline(scenario: Scenario) -> None:
    """Walk the timeline with the set of live clients: every step must make sense where it stands."""
    live: dict[str, str] = {}  # name -> "running" | "paused"
    seen: set[str] = set()

    def new(name: str, step: Step) -> None:
        if not _NAME.match(name):
            raise ScenarioError(f"step {step.index} ({step.action}): client name {name!r} is not a valid name")
        if name in seen:
            raise ScenarioError(
                f"step {step.index} ({step.action}): client {name!r} already exists; "
                "a replacement needs a new name (it is a new process with a new state dir)"
            )
        seen.add(name)
        live[name] = "running"

    def existing(name: str, step: Step) -> str:
        if name not in live:
            known = ", ".join(sorted(live)) or "none"
            raise ScenarioError(
                f"step {step.index} ({step.action}): there is no running client {name!r} at this point (live: {known})"
            )
        return live[name]

    for step in scenario.steps:
        if step.action == "start":
            for name in step.clients:
                new(name, step)
        elif step.action == "add":
            new(step.client, step)
        elif step.action == "stop":
            existing(step.client, step)
            del live[step.client]
        elif step.action == "replace":
            existing(step.client, step)
            del live[step.client]
            new(step.by, step)
        elif step.action == "pause":
            if existing(step.client, step) == "paused":
                raise ScenarioError(f"step {step.index} (pause): client {step.client!r} is already paused")
            if step.seconds is None:
                live[step.client] = "paused"
        elif step.action == "resume":
            if existing(step.client, step) != "paused":
                raise ScenarioError(f"step {step.index} (resume): client {step.client!r} is not paused")
            live[step.client] = "running"
        elif step.action in ("wait_stable", "wait_converged") and not any(s == "running" for s in live.values()):
            raise ScenarioError(f"step {step.index} ({step.action}): no running client to wait for")
    if not seen:
        raise ScenarioError("the timeline starts no client: add a `start` step")
    unknown = sorted(set(scenario.process_ids) - seen)
    if unknown:
        raise ScenarioError(f"[process_ids] names clients the timeline never starts: {', '.join(unknown)}")


# ---- sections ----------------------------------------------------------------------------------------------


def _app(table: Mapping[str, Any]) -> AppSpec:
    _only(table, {"target", "config", "env", "verify"}, "[app]")
    target = _str(table, "target", "[app]")
    module, sep, attribute = target.partition(":")
    if not sep or not module or not attribute:
        raise ScenarioError(f"[app] target {target!r}: expected MODULE:APP (e.g. examples.wordcount.app:app)")
    config_raw = table.get("config", {})
    if not isinstance(config_raw, Mapping):
        raise ScenarioError("[app.config] must be a table of StreamsConfig settings")
    known = {f.name for f in dataclasses.fields(StreamsConfig)}
    config: dict[str, Any] = {}
    for raw_key, value in config_raw.items():
        key = config_key(raw_key)
        if key not in known:
            raise ScenarioError(f"[app.config] {raw_key}: not a StreamsConfig setting")
        if key in RESERVED_CONFIG:
            raise ScenarioError(f"[app.config] {raw_key}: set by the runner per client; use the timeline instead")
        if isinstance(value, (dict, list)):
            raise ScenarioError(f"[app.config] {raw_key}: expected a single value, got {type(value).__name__}")
        try:
            config[key] = parse_setting(key, config_text(value))
        except ConfigError as exc:
            raise ScenarioError(f"[app.config] {exc}") from None
    if "task_assignor" in config:
        _check_assignor(str(config["task_assignor"]), "[app.config] task_assignor")
    env_raw = table.get("env", {})
    if not isinstance(env_raw, Mapping) or not all(isinstance(v, str) for v in env_raw.values()):
        raise ScenarioError("[app] env must be a table of strings")
    for key, value in env_raw.items():
        try:
            value.format(**{p: "" for p in PLACEHOLDERS})
        except (KeyError, IndexError, ValueError) as exc:
            raise ScenarioError(
                f"[app] env {key}={value!r}: unknown placeholder {exc}; known: {', '.join(PLACEHOLDERS)}"
            ) from None
    verify = str(table.get("verify", "wordcount"))
    if verify not in VERIFIERS:
        raise ScenarioError(f"[app] verify {verify!r}: expected one of {', '.join(VERIFIERS)}")
    return AppSpec(target, config, dict(env_raw), verify)


def config_text(value: Any) -> str:
    """A TOML value as a `--config KEY=VALUE` value (booleans as true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _input(table: Mapping[str, Any], base_dir: Path) -> InputSpec:
    _only(
        table,
        {
            "partitions",
            "output_partitions",
            "corpus",
            "generator",
            "vocabulary",
            "words_per_line",
            "seed",
            "lines",
            "rate",
        },
        "[input]",
    )
    corpus, generator = table.get("corpus"), table.get("generator")
    if (corpus is None) == (generator is None):
        raise ScenarioError("[input] give exactly one of corpus (a file or directory of text) or generator")
    corpus_path = None
    if corpus is not None:
        corpus_path = (base_dir / str(corpus)).resolve()
        if not corpus_path.exists():
            raise ScenarioError(f"[input] corpus {corpus!r}: {corpus_path} does not exist")
    if generator is not None and generator not in GENERATORS:
        raise ScenarioError(f"[input] generator {generator!r}: expected one of {', '.join(GENERATORS)}")
    output_partitions = table.get("output_partitions")
    return InputSpec(
        partitions=_int(table, "partitions", "[input]", 6, minimum=1),
        lines=_int(table, "lines", "[input]", 1000, minimum=0),
        rate=_number(table, "rate", "[input]", 100.0, minimum=0.0),
        corpus=corpus_path,
        generator=generator,
        vocabulary=_int(table, "vocabulary", "[input]", 10_000, minimum=1),
        words_per_line=_int(table, "words_per_line", "[input]", 8, minimum=1),
        seed=_int(table, "seed", "[input]", 0, minimum=0),
        output_partitions=None if output_partitions is None else _int(table, "output_partitions", "[input]", 1, 1),
    )


def _process_ids(table: Any) -> dict[str, uuid.UUID]:
    if not isinstance(table, Mapping):
        raise ScenarioError("[process_ids] must map client names to UUIDs")
    out: dict[str, uuid.UUID] = {}
    for name, value in table.items():
        try:
            out[name] = uuid.UUID(str(value))
        except ValueError:
            raise ScenarioError(f"[process_ids] {name} = {value!r} is not a UUID") from None
    duplicates = {str(p) for p in out.values() if list(out.values()).count(p) > 1}
    if duplicates:
        raise ScenarioError(f"[process_ids] the same process id is given twice: {', '.join(sorted(duplicates))}")
    return out


def _steps(raw: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    steps = raw.get("step")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, Mapping) for s in steps):
        raise ScenarioError("the scenario needs a timeline: one or more [[step]] tables")
    return steps


def _step(index: int, table: Mapping[str, Any]) -> Step:
    action = table.get("action")
    where = f"step {index}"
    if action not in _STEP_KEYS:
        raise ScenarioError(f"{where}: unknown action {action!r}; expected one of {', '.join(STEP_ACTIONS)}")
    where = f"step {index} ({action})"
    required, optional = _STEP_KEYS[action]
    _only(table, required | optional | {"action"}, where)
    missing = sorted(required - set(table))
    if missing:
        raise ScenarioError(f"{where}: missing {', '.join(missing)}")
    clients: tuple[str, ...] = ()
    if "clients" in table:
        value = table["clients"]
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            clients = tuple(f"c{i}" for i in range(1, value + 1))
        elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            clients = tuple(value)
        else:
            raise ScenarioError(f"{where}: clients must be a list of names or a positive count")
        if len(set(clients)) != len(clients):
            raise ScenarioError(f"{where}: a client name appears twice in clients")
    signal = str(table.get("signal", "SIGTERM")).upper()
    if signal in ("KILL", "9", "-9"):
        signal = "SIGKILL"
    if signal in ("TERM", "15"):
        signal = "SIGTERM"
    if signal not in SIGNALS:
        raise ScenarioError(f"{where}: signal {table.get('signal')!r}: expected SIGTERM or SIGKILL")
    seconds = table.get("seconds")
    return Step(
        index=index,
        action=action,
        clients=clients,
        client=_str(table, "client", where) if "client" in table else "",
        by=_str(table, "by", where) if "by" in table else "",
        threads=_int(table, "threads", where, 1, minimum=1, maximum=64) if "threads" in table else None,
        signal=signal,
        seconds=None if seconds is None else _number(table, "seconds", where, 0.0, 0.0, MAX_WAIT_SECONDS),
        timeout=_number(table, "timeout", where, 120.0, minimum=1.0, maximum=MAX_WAIT_SECONDS),
        settle=_number(table, "settle", where, 3.0, minimum=0.0, maximum=600.0),
        rate=_number(table, "rate", where, 0.0, minimum=0.0) if "rate" in table else None,
    )


# ---- small checks ------------------------------------------------------------------------------------------


def _check_assignor(name: str, where: str) -> None:
    try:
        resolve_task_assignor(name)
    except ConfigError as exc:
        raise ScenarioError(f"{where}: {exc}") from None


def _only(table: Mapping[str, Any], allowed: set[str] | frozenset[str], where: str) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ScenarioError(f"{where}: unknown key(s) {', '.join(unknown)}; expected {', '.join(sorted(allowed))}")


def _table(raw: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = raw.get(name)
    if not isinstance(value, Mapping):
        raise ScenarioError(f"the scenario needs an [{name}] table")
    return value


def _str(table: Mapping[str, Any], key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{where}: {key} must be a non-empty string")
    return value


def _int(
    table: Mapping[str, Any], key: str, where: str, default: int, minimum: int = 0, maximum: int | None = None
) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ScenarioError(f"{where}: {key} must be an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ScenarioError(f"{where}: {key} must be <= {maximum}, got {value!r}")
    return value


def _number(
    table: Mapping[str, Any], key: str, where: str, default: float, minimum: float = 0.0, maximum: float | None = None
) -> float:
    value = table.get(key, default)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < minimum:
        raise ScenarioError(f"{where}: {key} must be a number >= {minimum:g}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ScenarioError(f"{where}: {key} must be <= {maximum:g}, got {value!r}")
    return float(value)
