"""`application_server` is accepted and refused as Kafka Streams 4.4.0 accepts and refuses `application.server`.

KIP-1245 (4.4): `StreamsConfig` validates the value at construction (`ApplicationServerConfigValidator`, which
calls `HostInfo.buildFromEndpoint`). A Java helper builds a real `StreamsConfig` for each value of a corpus
(hand-picked edge cases and seeded random strings over the characters the pattern cares about) and prints
whether it was accepted, or Kafka's error message. streamlet must accept the same values, with the same
message when it refuses one, except for the `protocol://host:port` form, which it refuses on purpose (see
`streamlet/config.py`).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError
from tests.support.jvm import SHORT_LIVED, javac_options
from tests.support.semantics_oracle import kafka_streams_classpath

pytestmark = pytest.mark.oracle

HELPER = """
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Properties;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.streams.StreamsConfig;

public class ApplicationServerHelper {
    public static void main(final String[] args) throws Exception {
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            final String value = new String(HexFormat.of().parseHex(line), StandardCharsets.UTF_8);
            final Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, "app");
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
            props.put(StreamsConfig.APPLICATION_SERVER_CONFIG, value);
            String answer;
            try {
                new StreamsConfig(props);
                answer = "ok";
            } catch (final ConfigException e) {
                answer = "error " + e.getMessage();
            }
            System.out.println(HexFormat.of().formatHex(answer.getBytes(StandardCharsets.UTF_8)));
        }
    }
}
"""

EDGE_CASES = [
    "",
    " ",
    "\t\n",
    "\x01",
    "\u00a0",  # not blank to Java's trim
    "localhost:8080",
    "localhost",
    "localhost:",
    ":8080",
    "localhost:http",
    "localhost:-1",
    "localhost:0",
    "localhost:65535",
    "localhost:65536",
    "localhost:2147483647",
    "localhost:2147483648",
    "localhost:99999999999",
    "localhost:0008080",
    "localhost:8080 ",
    " localhost:8080",
    "local host:8080",
    "w1.example.com:6066",
    "10.0.0.1:6066",
    "[::1]:8080",
    "::1:8080",
    "[::1]",
    "[]:80",
    "a]:1",
    "[a:1",
    "h%eth0:1",
    "h_1-2.x:3",
    "host:1:2",
    "host:1a",
    "h\u00e9:1",
    "http://localhost:8080",
    "https://w1:443",
    "://h:1",
    "http:/h:1",
    "http://:1",
    "a@b:1",
    "localhost:8080/path",
    "localhost:1a",
    " localhost:8080\t",
    "  \n",
    "http://w1:6066",
]
ALPHABET = "aZ09:[]/-%._ @\t\u00e9"


def _corpus() -> list[str]:
    rng = random.Random(1245)
    generated = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 9))) for _ in range(1500)]
    templated = [
        f"{rng.choice(['', 'p://', '[', 'h', 'host.x', '::'])}{rng.choice(['', 'a', '1.2', '-'])}"
        f"{rng.choice(['', ']'])}:{rng.choice(['', '0', '80', '65536', '4294967296', 'x', '8 '])}"
        for _ in range(500)
    ]
    return list(dict.fromkeys(EDGE_CASES + generated + templated))


@pytest.fixture(scope="module")
def kafka_answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    assert shutil.which("javac") and shutil.which("java"), "this test compiles Java: install a JDK 17+"
    classpath = kafka_streams_classpath()
    assert classpath is not None, "oracle/target/lib has no kafka-streams jar after the oracle build"
    root = tmp_path_factory.mktemp("appserver")
    source = root / "ApplicationServerHelper.java"
    source.write_text(HELPER)
    javac = subprocess.run(
        ["javac", *javac_options(), "-nowarn", "-cp", classpath, "-d", str(root), str(source)],
        capture_output=True,
        text=True,
    )
    assert javac.returncode == 0, f"the helper does not compile against the oracle's kafka-streams:\n{javac.stderr}"
    corpus = _corpus()
    result = subprocess.run(
        ["java", *SHORT_LIVED, "-cp", classpath + os.pathsep + str(root), "ApplicationServerHelper"],
        input="".join(value.encode().hex() + "\n" for value in corpus),
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(root),
    )
    answers = [bytes.fromhex(line).decode() for line in result.stdout.splitlines()]
    assert len(answers) == len(corpus)
    return dict(zip(corpus, answers, strict=True))


def _streamlet_answer(value: str) -> str:
    try:
        StreamsConfig(application_id="app", application_server=value)
    except ConfigError as exc:
        return f"error {exc}"
    return "ok"


def test_streamlet_accepts_and_refuses_application_server_as_kafka_streams(kafka_answers: dict[str, str]) -> None:
    accepted = [v for v, a in kafka_answers.items() if a == "ok"]
    refused = [v for v, a in kafka_answers.items() if a != "ok"]
    assert len(accepted) > 100 and len(refused) > 100  # the corpus exercises both sides
    mismatches = []
    for value, kafka in kafka_answers.items():
        ours = _streamlet_answer(value)
        if kafka == "ok" and "://" in value:  # refused on purpose: the scheme comes from the web settings
            if not (ours.startswith("error application_server=") and "give host:port without a protocol" in ours):
                mismatches.append((value, kafka, ours))
            continue
        expected = kafka.replace(" for configuration application.server: ", " for configuration application_server: ")
        if ours != expected:
            mismatches.append((value, kafka, ours))
    assert mismatches == [], f"{len(mismatches)} of {len(kafka_answers)} values differ, e.g. {mismatches[:5]}"


def test_the_kafka_rules_the_corpus_pins(kafka_answers: dict[str, str]) -> None:
    """What 4.4.0 checks, as recorded from the jar: digits that fit a Java int, no port range, blank = unset."""
    assert kafka_answers["localhost:65536"] == "ok"  # no port range check
    assert kafka_answers["localhost:0"] == "ok"
    assert kafka_answers["localhost:2147483648"].startswith("error ")  # Integer.parseInt overflows
    assert kafka_answers["localhost:http"] == (
        "error Invalid value localhost:http for configuration application.server: Error parsing host address "
        "localhost:http. Expected format host:port."
    )
    assert kafka_answers[" "] == "ok" and kafka_answers["\x01"] == "ok"  # blank: no application server
    assert kafka_answers["\u00a0"].startswith("error ")
    assert kafka_answers["http://localhost:8080"] == "ok"
