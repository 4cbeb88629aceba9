"""The wire formats of foreign-key joins against the bytes Kafka Streams 4.4.0's own classes write.

A Java helper (compiled here against the kafka-streams jar, in the package of the package-private classes)
prints Kafka's `Murmur3.hash128` of inputs of every tail length, `SubscriptionWrapperSerde` output for every
instruction (with and without a hash, versions 0 and 1), `SubscriptionResponseWrapperSerde` output (with and
without hash and value) and `CombinedKeySchema` keys and prefixes. streamlet must write the same bytes and
read them back to the same fields.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from streamlet.murmur3 import hash128
from streamlet.serdes import StringSerde
from streamlet.topology.subscription_wrappers import (
    Instruction,
    SubscriptionResponseWrapper,
    SubscriptionResponseWrapperSerde,
    SubscriptionWrapper,
    SubscriptionWrapperSerde,
    combined_key,
    combined_key_prefix,
    split_combined_key,
)
from tests.support.jvm import SHORT_LIVED, javac_options
from tests.support.semantics_oracle import kafka_streams_classpath

pytestmark = pytest.mark.oracle

PACKAGE = "org.apache.kafka.streams.kstream.internals.foreignkeyjoin"
HELPER = (
    """
package PACKAGE;

import java.util.HexFormat;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.state.internals.Murmur3;

public class FormatsHelper {
    static final HexFormat HEX = HexFormat.of();

    static byte[] input(final int length) {
        final byte[] data = new byte[length];
        for (int i = 0; i < length; i++) {
            data[i] = (byte) (i * 37 + length * 11);
        }
        return data;
    }

    static String hash(final long[] h) {
        return h == null ? "-" : String.format("%016x%016x", h[0], h[1]);
    }

    public static void main(final String[] args) {
        for (int length = 0; length <= 40; length++) {
            System.out.println("murmur " + length + " " + hash(Murmur3.hash128(input(length))));
        }
        final long[] h = Murmur3.hash128(input(21));
        final Serializer<SubscriptionWrapper<String>> subscriptions =
            new SubscriptionWrapperSerde<>(() -> "t-pk", Serdes.String()).serializer();
        for (final SubscriptionWrapper.Instruction instruction : SubscriptionWrapper.Instruction.values()) {
            for (final long[] hash : new long[][] {h, null}) {
                for (final byte version : new byte[] {0, 1}) {
                    final SubscriptionWrapper<String> w =
                        new SubscriptionWrapper<>(hash, instruction, "pk-" + instruction.value(), version, 7);
                    System.out.println("subscription " + instruction.value() + " " + hash(hash) + " " + version
                        + " " + HEX.formatHex(subscriptions.serialize("t", new RecordHeaders(), w)));
                }
            }
        }
        final Serializer<SubscriptionResponseWrapper<String>> responses =
            new SubscriptionResponseWrapperSerde<>(Serdes.String()).serializer();
        for (final long[] hash : new long[][] {h, null}) {
            for (final String value : new String[] {"A1", null}) {
                final SubscriptionResponseWrapper<String> r = new SubscriptionResponseWrapper<>(hash, value, 3);
                System.out.println("response " + hash(hash) + " " + value + " "
                    + HEX.formatHex(responses.serialize("t", new RecordHeaders(), r)));
            }
        }
        final CombinedKeySchema<String, String> schema =
            new CombinedKeySchema<>(() -> "t-fk", Serdes.String(), () -> "t-pk", Serdes.String());
        final RecordHeaders none = new RecordHeaders();
        System.out.println("combined fk1 pk-1 " + HEX.formatHex(schema.toBytes("fk1", "pk-1", none).get()));
        System.out.println("prefix fk1 " + HEX.formatHex(schema.prefixBytes("fk1", none).get()));
    }
}
"""
).replace("PACKAGE", PACKAGE)


def _input(length: int) -> bytes:
    return bytes((i * 37 + length * 11) & 0xFF for i in range(length))


@pytest.fixture(scope="module")
def java_lines(tmp_path_factory: pytest.TempPathFactory) -> list[list[str]]:
    assert shutil.which("javac") and shutil.which("java"), "this test compiles Java: install a JDK 17+"
    classpath = kafka_streams_classpath()
    assert classpath is not None, "oracle/target/lib has no kafka-streams jar after the oracle build"
    root = tmp_path_factory.mktemp("fkformats")
    source = root / Path(*PACKAGE.split(".")) / "FormatsHelper.java"
    source.parent.mkdir(parents=True)
    source.write_text(HELPER)
    javac = subprocess.run(
        ["javac", *javac_options(), "-nowarn", "-cp", classpath, "-d", str(root), str(source)],
        capture_output=True,
        text=True,
    )
    assert javac.returncode == 0, f"the helper does not compile against the oracle's kafka-streams:\n{javac.stderr}"
    result = subprocess.run(
        ["java", *SHORT_LIVED, "-cp", classpath + os.pathsep + str(root), PACKAGE + ".FormatsHelper"],
        check=True,
        capture_output=True,
        text=True,
    )
    return [line.split(" ") for line in result.stdout.splitlines()]


def test_murmur3_hash128_matches_kafka_for_every_tail_length(java_lines: list[list[str]]) -> None:
    murmurs = [line for line in java_lines if line[0] == "murmur"]
    assert len(murmurs) == 41
    for _, length, expected in murmurs:
        assert hash128(_input(int(length))).hex() == expected, length


def test_subscription_wrappers_match_kafka(java_lines: list[list[str]]) -> None:
    serde = SubscriptionWrapperSerde(StringSerde())
    hash_ = hash128(_input(21))
    subscriptions = [line for line in java_lines if line[0] == "subscription"]
    assert len(subscriptions) == 16
    for _, instruction, hashed, version, expected in subscriptions:
        wrapper = SubscriptionWrapper(
            None if hashed == "-" else hash_,
            Instruction(int(instruction)),
            "pk-" + instruction,
            7 if version == "1" else None,
            int(version),
        )
        assert serde.serialize("t", wrapper) == bytes.fromhex(expected), (instruction, hashed, version)
        assert serde.deserialize("t", bytes.fromhex(expected)) == wrapper


def test_subscription_response_wrappers_match_kafka(java_lines: list[list[str]]) -> None:
    serde = SubscriptionResponseWrapperSerde(StringSerde())
    hash_ = hash128(_input(21))
    responses = [line for line in java_lines if line[0] == "response"]
    assert len(responses) == 4
    for _, hashed, value, expected in responses:
        response = SubscriptionResponseWrapper(None if hashed == "-" else hash_, None if value == "null" else value, 3)
        assert serde.serialize("t", response) == bytes.fromhex(expected), (hashed, value)
        # the partition is not written: it only routes the response
        assert serde.deserialize("t", bytes.fromhex(expected)) == SubscriptionResponseWrapper(
            response.original_value_hash, response.foreign_value, None
        )


def test_combined_keys_match_kafka(java_lines: list[list[str]]) -> None:
    combined = next(line for line in java_lines if line[0] == "combined")
    prefix = next(line for line in java_lines if line[0] == "prefix")
    assert combined_key(b"fk1", b"pk-1") == bytes.fromhex(combined[3])
    assert split_combined_key(bytes.fromhex(combined[3])) == (b"fk1", b"pk-1")
    assert combined_key_prefix(b"fk1") == bytes.fromhex(prefix[2])
