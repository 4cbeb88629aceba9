"""One local SparkSession per process, with Spark's Kafka connector, quiet logs and no UI.

The connector (`org.apache.spark:spark-sql-kafka-0-10_<scala>:<pyspark version>`) is not part of PySpark: the
first session resolves it from Maven Central with Spark's own Ivy (`spark.jars.packages`) into
`~/.cache/streamlet/spark/ivy` (`STREAMLET_CACHE_DIR`), and records the resolved jar files in a manifest
beside it. Later sessions put those files on the classpath directly (`spark.jars`), without Ivy or the
network. Environment:

- `STREAMLET_SPARK_MASTER`: the master when none is given (default `local[2]`);
- `STREAMLET_SPARK_DRIVER_MEMORY`: the driver's heap (default `1g`);
- `STREAMLET_MAVEN_REPOSITORY`: where the connector is resolved from (default Maven Central);
- `STREAMLET_SPARK_KAFKA_PACKAGE`: other Maven coordinates for the connector, for when the version matching the
  installed PySpark cannot be resolved (connector and Spark versions should match).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from streamlet.kafka.broker import cache_root
from streamlet.spark import SparkNotInstalledError, SparkSetupError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"
DEFAULT_DRIVER_MEMORY = "1g"
_DEFAULT_SCALA = "2.13"
# Transitive dependencies of the connector that PySpark already ships (same Spark build): not downloaded again.
_BUNDLED_DEPENDENCIES = ("org.apache.hadoop:hadoop-client-api", "org.apache.hadoop:hadoop-client-runtime")

_LOG4J2 = """\
# Written by streamlet.spark.session: Spark's driver logs errors only.
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
# The level a PySpark driver switches to ("Setting default log level to ..."): equal to the root level, no notice.
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""

# Ivy settings for the one resolution: Maven Central only (Spark's default chain also tries a host that is
# unreachable from many networks, spark-packages, and warns about it at length).
_IVY_SETTINGS = """\
<ivysettings>
  <settings defaultResolver="streamlet"/>
  <resolvers>
    <chain name="streamlet" returnFirst="true">
      <ibiblio name="central" m2compatible="true" usepoms="true" root="{repository}"/>
    </chain>
  </resolvers>
</ivysettings>
"""
DEFAULT_MAVEN_REPOSITORY = "https://repo1.maven.org/maven2/"

_lock = threading.Lock()
_session: SparkSession | None = None
_session_has_kafka = False


def require_pyspark() -> None:
    """Raise `SparkNotInstalledError` unless PySpark can be imported."""
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise SparkNotInstalledError(
            "PySpark is not installed: the Spark batch side needs the `spark` extra, `pip install 'streamlet[spark]'`"
        ) from exc


def pyspark_version() -> str:
    require_pyspark()
    import pyspark

    return pyspark.__version__


def _pyspark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def scala_binary_version() -> str:
    """The Scala binary version PySpark was built with (from its bundled `scala-library` jar)."""
    require_pyspark()
    for jar in _pyspark_jars_dir().glob("scala-library-*.jar"):
        match = re.fullmatch(r"scala-library-(\d+\.\d+)\.\d+\.jar", jar.name)
        if match:
            return match.group(1)
    return _DEFAULT_SCALA


def kafka_connector_package() -> str:
    """Maven coordinates of Spark's Kafka connector matching the installed PySpark."""
    override = os.environ.get("STREAMLET_SPARK_KAFKA_PACKAGE")
    if override:
        return override
    return f"org.apache.spark:spark-sql-kafka-0-10_{scala_binary_version()}:{pyspark_version()}"


def spark_cache_dir() -> Path:
    return cache_root() / "spark"


def _manifest_path(package: str) -> Path:
    return spark_cache_dir() / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', package)}.jars"


def cached_connector_jars(package: str | None = None) -> list[Path] | None:
    """The connector's jar files from an earlier resolution, or None when they are not (all) cached."""
    manifest = _manifest_path(package or kafka_connector_package())
    if not manifest.is_file():
        return None
    jars = [Path(line) for line in manifest.read_text().splitlines() if line.strip()]
    return jars if jars and all(j.is_file() for j in jars) else None


def _record_connector_jars(package: str, spark_jars: str) -> None:
    paths = []
    for uri in spark_jars.split(","):
        uri = uri.strip()
        if uri:
            paths.append(uri.removeprefix("file://") if uri.startswith("file://") else uri)
    if paths and all(Path(p).is_file() for p in paths):
        manifest = _manifest_path(package)
        manifest.parent.mkdir(parents=True, exist_ok=True)
        tmp = manifest.with_suffix(".tmp")
        tmp.write_text("\n".join(paths) + "\n")
        tmp.replace(manifest)


def _log4j2_file() -> Path:
    path = spark_cache_dir() / "log4j2.properties"
    if not path.is_file() or path.read_text() != _LOG4J2:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_LOG4J2)
    return path


def _ivy_settings_file() -> Path:
    repository = os.environ.get("STREAMLET_MAVEN_REPOSITORY") or DEFAULT_MAVEN_REPOSITORY
    text = _IVY_SETTINGS.format(repository=repository if repository.endswith("/") else repository + "/")
    path = spark_cache_dir() / "ivysettings.xml"
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def _bundled_excludes() -> list[str]:
    jars = _pyspark_jars_dir()
    return [dep for dep in _BUNDLED_DEPENDENCIES if any(jars.glob(f"{dep.split(':')[1]}-*.jar"))]


def _active(session: SparkSession | None) -> bool:
    if session is None:
        return False
    try:
        return not session.sparkContext._jsc.sc().isStopped()  # type: ignore[union-attr]
    except Exception:
        return False


def _shutdown_gateway() -> None:
    """Stop the driver JVM that PySpark launched, so the next session starts one with a new classpath."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:
        pass
    if proc is not None:
        try:
            if proc.stdin is not None:
                proc.stdin.close()  # the gateway exits when its stdin closes
            proc.wait(timeout=30)
        except Exception:
            proc.kill()
    SparkContext._gateway = None
    SparkContext._jvm = None


def get_spark(
    master: str | None = None,
    *,
    kafka: bool = True,
    driver_memory: str | None = None,
    app_name: str = "streamlet",
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """The process's SparkSession, created on first use; reused afterwards whatever `master` says.

    With `kafka`, the session can read Kafka topics (`spark.read.format("kafka")`); a session made earlier in
    this process without the connector is stopped and its JVM relaunched (a JVM's classpath is fixed).
    `conf` adds or overrides Spark settings of a new session.
    """
    global _session, _session_has_kafka
    require_pyspark()
    with _lock:
        if _active(_session) and (_session_has_kafka or not kafka):
            return _session  # type: ignore[return-value]
        if _active(_session):
            _session.stop()  # type: ignore[union-attr]
            _shutdown_gateway()
        _session = None
        _session, _session_has_kafka = _create(
            master, kafka=kafka, driver_memory=driver_memory, app_name=app_name, conf=conf
        )
        return _session


def session_active() -> bool:
    """Whether this process has a running session (`get_spark` would reuse it)."""
    with _lock:
        return _active(_session)


def stop_spark() -> None:
    """Stop the process's session (a later `get_spark` creates a new one)."""
    global _session, _session_has_kafka
    with _lock:
        if _active(_session):
            _session.stop()  # type: ignore[union-attr]
        _session, _session_has_kafka = None, False


def _create(
    master: str | None, *, kafka: bool, driver_memory: str | None, app_name: str, conf: Mapping[str, str] | None
) -> tuple[SparkSession, bool]:
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    if existing is not None:  # made by the caller, not here: use it as it is
        active_conf = existing.sparkContext.getConf()
        has_kafka = "spark-sql-kafka" in active_conf.get("spark.jars", "") + active_conf.get("spark.jars.packages", "")
        if kafka and not has_kafka:
            raise SparkSetupError(
                "a SparkSession without Spark's Kafka connector is already active in this process; stop it, or "
                f"create it with spark.jars.packages={kafka_connector_package()}"
            )
        return existing, has_kafka

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise SparkSetupError(
            "java not found: Spark needs Java 17 or later (e.g. `apt-get install openjdk-17-jre-headless`)"
        )
    master = master or os.environ.get("STREAMLET_SPARK_MASTER") or DEFAULT_MASTER
    memory = driver_memory or os.environ.get("STREAMLET_SPARK_DRIVER_MEMORY") or DEFAULT_DRIVER_MEMORY
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.memory", memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_log4j2_file()}")
    )
    if master.startswith("local"):
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")

    for key, value in (conf or {}).items():
        builder = builder.config(key, value)

    package = kafka_connector_package() if kafka else None
    resolving = False
    if package is not None:
        jars = cached_connector_jars(package)
        if jars is not None:
            builder = builder.config("spark.jars", ",".join(str(j) for j in jars))
        else:
            resolving = True
            ivy = spark_cache_dir() / "ivy"
            ivy.mkdir(parents=True, exist_ok=True)
            builder = (
                builder.config("spark.jars.packages", package)
                .config("spark.jars.ivy", str(ivy))
                .config("spark.jars.ivySettings", str(_ivy_settings_file()))
            )
            excludes = _bundled_excludes()
            if excludes:
                builder = builder.config("spark.jars.excludes", ",".join(excludes))
            print(f"streamlet: resolving {package} from Maven Central into {ivy} (first use only)", file=sys.stderr)

    began = time.monotonic()
    try:
        session = builder.getOrCreate()
    except Exception as exc:
        hint = ""
        if resolving:
            hint = (
                f"; if the output above says 'unresolved dependency' for {package}, that connector version "
                "could not be fetched from Maven Central: install a PySpark version whose connector is published "
                "there, or set STREAMLET_SPARK_KAFKA_PACKAGE to matching coordinates"
            )
        raise SparkSetupError(f"could not start Spark ({master}): {exc}{hint}") from exc
    if resolving and package is not None:
        _record_connector_jars(package, session.sparkContext.getConf().get("spark.jars", ""))
        print(f"streamlet: Spark started with the Kafka connector in {time.monotonic() - began:.1f}s", file=sys.stderr)
    return session, package is not None
