"""Session-wide fixtures: one real Kafka broker per test session, started only when a test asks for it."""

from __future__ import annotations

import os
import re
import time
from collections.abc import AsyncIterator, Generator, Iterator

import pytest

from streamlet.config import security_from_environment
from streamlet.kafka.broker import BROKER_JVM_OPTIONS_ENV
from tests.support import ast_parse_guard, durations, jvm
from tests.support.kafka import KafkaTestCluster
from tests.support.reports import REPORTS
from tests.support.stuck_tests import StuckTestWatch
from tests.support.workers import MADE_IN_TEST

# The JVMs the tests start run on C1 alone with the serial collector (tests/support/jvm.py): every broker (the
# session's, a test's own, a cluster's nodes, an experiment's: streamlet.kafka.broker.broker_jvm_options), Spark's
# driver (SPARK_SUBMIT_OPTS), a standalone Spark cluster's master and worker (SPARK_DAEMON_JAVA_OPTS) and Maven (the
# oracles' builds, the brokers' jars), in this process and those it starts; a value already set wins. The oracles'
# JVMs and the javac runs set their own.
TEST_JVM_OPTIONS = " ".join(jvm.SHORT_LIVED)
for _variable in (BROKER_JVM_OPTIONS_ENV, "SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS", "MAVEN_OPTS"):
    os.environ.setdefault(_variable, TEST_JVM_OPTIONS)

ast_parse_guard.install()  # before the test modules are imported (and their asserts rewritten)

#: `STREAMLET_TEST_TIMELINE=FILE`: every test process appends "<start> <end> <process> <test>" (Unix seconds) per test,
#: setup and teardown included, to see where a parallel run's processes spent its time
TIMELINE = os.environ.get("STREAMLET_TEST_TIMELINE")
WORKER_LOG_TAIL_LINES = 80
# A test past this prints its asyncio tasks' await chains and fails, cancelled (faulthandler_timeout, 600 s, dumps
# the threads of one stuck elsewhere)
STUCK_AFTER_S = 420
_STUCK = StuckTestWatch(STUCK_AFTER_S)


@pytest.fixture(scope="session")
def bootstrap_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`STREAMLET_BOOTSTRAP_SERVERS` when set; otherwise a broker started by the project's own script."""
    configured = os.environ.get("STREAMLET_BOOTSTRAP_SERVERS")
    if configured:
        yield configured
        return
    from streamlet.kafka.broker import LocalBroker
    from tests.support.broker import TEST_BROKER_SETTINGS

    # no preferred_port: any free port, not 9092, which a developer's own `streamlet broker start` takes
    broker = LocalBroker(tmp_path_factory.mktemp("kafka-broker"), die_with_parent=True, overrides=TEST_BROKER_SETTINGS)
    status = broker.start()
    try:
        yield status.bootstrap_servers
    finally:
        broker.stop()


@pytest.fixture
async def kafka(bootstrap_servers: str) -> AsyncIterator[KafkaTestCluster]:
    """Per-test access to the broker; topics it creates are uniquely named and deleted afterwards."""
    cluster = KafkaTestCluster(bootstrap_servers, security_from_environment())  # a secured cluster's, if set
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.close()


#: a module fixture that starts something once for all the module's tests
_SHARED_FIXTURE = re.compile(r"scope=[\"'](module|package|session)[\"']")


def xdist_group(path: str, source: str = "") -> str | None:
    """The pytest-xdist group of a test module (`--dist loadgroup`, scripts/test), by its path from the root and its
    source.

    A module's tests run on one process, so its module fixtures (a Kafka Streams JVM, a 3-node cluster) start
    once; every Spark test runs on one process, so one Spark JVM serves them all. The unit tier has no costly
    fixture, and is faster with its tests spread one by one: no group. Nor has a process test (tests/e2e,
    tests/chaos) whose module shares no fixture: each is dealt alone, so one module's long tests run side by side."""
    if path.startswith("tests/unit/"):
        return None
    if "/spark/" in path:
        return "spark"
    if path.startswith(("tests/e2e/", "tests/chaos/")) and not _SHARED_FIXTURE.search(source):
        return None
    return path


def scheduling_rank(path: str, group: str | None) -> int:
    """A test's tier in the run order, for tests with no recorded duration (tests/support/durations.py): Spark's
    group, the oracle modules and the chaos tests first, the unit tier's single tests last."""
    if group == "spark":
        return 0
    for rank, tier in enumerate(("tests/oracle/", "tests/chaos/"), start=1):
        if path.startswith(tier):
            return rank
    return 4 if path.startswith("tests/unit/") else 3


def deal_order(tests: list[tuple[str, str, str | None]], recorded: dict[str, float]) -> list[int]:
    """The order to deal `tests` (test id, path, group) in: groups (a test without one is its own) by their recorded
    seconds, longest first, then by tier; a group's tests stay together and in order."""
    seconds: dict[str, float] = {}
    first: dict[str, int] = {}
    for index, (test, _, group) in enumerate(tests):
        unit = group or test
        seconds[unit] = seconds.get(unit, 0.0) + recorded.get(durations.test_id(test), 0.0)
        first.setdefault(unit, index)

    def key(index: int) -> tuple[float, int, int, int]:
        test, path, group = tests[index]
        unit = group or test
        return (-seconds[unit], scheduling_rank(path, group), first[unit], index)

    return sorted(range(len(tests)), key=key)


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist deals the groups largest (most tests) first unless told not to: deal_order's order is the point
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    paths = {item: item.path.relative_to(config.rootpath).as_posix() for item in items}
    sources = {
        item.path: item.path.read_text() for item in items if paths[item].startswith(("tests/e2e/", "tests/chaos/"))
    }
    groups = {item: xdist_group(paths[item], sources.get(item.path, "")) for item in items}
    for item, group in groups.items():
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # the order matters where the controller reads it: in xdist's workers (their collections), whose own "dist" is "no"
    if config.getoption("dist", "no") != "no" or hasattr(config, "workerinput"):
        order = deal_order([(item.nodeid, paths[item], groups[item]) for item in items], durations.load())
        items[:] = [items[index] for index in order]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The figures scenario tests measured (tests/support/reports.py), one section each."""
    for section in dict.fromkeys(section for section, _ in REPORTS):
        terminalreporter.section(section)
        for line in (line for s, line in REPORTS if s == section):
            terminalreporter.write_line(line)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    MADE_IN_TEST.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test that ran worker processes shows their logs' tails: the CI output is all there is of them."""
    report: pytest.TestReport = yield
    if report.failed:
        for workers in MADE_IN_TEST:
            for title, tail in workers.log_tails(WORKER_LOG_TAIL_LINES):
                report.sections.append((title, tail))
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    _STUCK.started(item.nodeid, getattr(item, "originalname", item.name))
    began = time.time()
    try:
        return (yield)
    finally:
        _STUCK.finished()
        if TIMELINE:
            with open(TIMELINE, "a") as timeline:
                timeline.write(
                    f"{began:.2f} {time.time():.2f} {os.environ.get('PYTEST_XDIST_WORKER', '-')} {item.nodeid}\n"
                )
