"""How the tests run the JVMs they start.

They live for seconds to minutes under light load (a broker, javac on one generated class, an oracle answering
cases, Maven packaging an oracle): on C1 alone and the serial collector they need about half the CPU, without C2's
compilations and G1's threads (javac and a describe() run: 50 -> 27 s of CPU; a broker's start: 6.9 -> 3.2 s).
"""

from __future__ import annotations

SHORT_LIVED = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


def javac_options() -> list[str]:
    """SHORT_LIVED for javac, which passes `-J` options to its own JVM."""
    return [f"-J{option}" for option in SHORT_LIVED]
