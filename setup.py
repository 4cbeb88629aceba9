"""The native parts, all optional: without a C compiler (or without mypy at build time) the install still succeeds
and streamlet runs pure Python, slower and the same.

- a Kafka record batch decoder for the consumers (`streamlet/_native/record_batch.c`) and an encoder for the record
  collector (`streamlet/_native/record_encoder.c`);
- the per-record modules listed in `streamlet/_compiled.py`, compiled with mypyc. `STREAMLET_MYPYC=0` skips them.
  The build records each one's source hash (`streamlet/_compiled_sources.json`), so that a build older than its
  source is not imported (`streamlet/_compiled.py`).
"""

import hashlib
import json
import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def source_hash(source: str) -> tuple[str, str]:
    """The C source's SHA-256, compiled into its module: a build from an older source is refused at import
    (`streamlet.kafka.native_modules`) instead of crashing the workers."""
    digest = hashlib.sha256((ROOT / source).read_bytes()).hexdigest()
    return ("SOURCE_SHA256", f'"{digest}"')


def compiled_config() -> dict:
    """streamlet/_compiled.py's names, read without importing the package (it is not built yet)."""
    path = ROOT / "streamlet" / "_compiled.py"
    names: dict = {"__file__": str(path), "__name__": "streamlet._compiled"}
    exec(path.read_text(), names)
    return names


def mypyc_placeholders() -> list[Extension]:
    """The compiled modules' extensions, by name only; none when disabled or mypy is missing. pip runs this file
    three times per install (build requirements, metadata, build), and only the build needs mypyc's C (about 12 s
    to generate): `BuildExt` puts the real extensions in their place then."""
    if os.environ.get("STREAMLET_MYPYC", "1") == "0":
        return []
    try:
        import mypyc.build  # noqa: F401
    except ImportError:
        return []
    config = compiled_config()
    return [Extension(name, [], optional=True) for name in (config["GROUP"] + "__mypyc", *config["COMPILED_MODULES"])]


def mypyc_extensions() -> tuple[list[Extension], dict[str, str]]:
    """mypyc's extensions and {module: source SHA-256}; none when mypyc fails."""
    from mypyc.build import mypycify

    config = compiled_config()
    paths = {m: f"{m.replace('.', '/')}.py" for m in config["COMPILED_MODULES"]}
    # the build environment has mypy, not streamlet's dependencies: modules it cannot find are typed as Any
    options = ["--ignore-missing-imports"]
    try:
        extensions = mypycify([*options, *paths.values()], opt_level="3", group_name=config["GROUP"])
    except (SystemExit, Exception) as exc:  # a type error or a mypyc limit: install the pure-Python modules
        print(f"streamlet: mypyc did not compile {list(paths)} ({exc!r}); installing them as Python")
        return [], {}
    for extension in extensions:
        extension.optional = True  # a failed compile leaves the pure-Python modules (_compiled.py checks the group)
    hashes = {m: hashlib.sha256((ROOT / p).read_bytes()).hexdigest() for m, p in paths.items()}
    return extensions, hashes


class BuildExt(build_ext):
    """Generates the compiled modules' C, then writes their source hashes beside them, once they are built."""

    compiled_hashes: dict[str, str] = {}

    def run(self) -> None:
        self.generate_mypyc_sources()
        super().run()
        if self.inplace:  # an extension left from an older build (a module no longer compiled) would shadow its source
            built = {Path(self.get_ext_fullpath(e.name)).resolve() for e in self.extensions}
            suffix = str(self.get_ext_filename("x"))[1:]
            for stale in (ROOT / "streamlet").rglob(f"*{suffix}"):
                if stale.resolve() not in built:
                    print(f"streamlet: removing {stale.relative_to(ROOT)}, an extension this build does not make")
                    stale.unlink()
        if not self.compiled_hashes:
            return
        group = self.get_ext_fullpath(compiled_config()["GROUP"] + "__mypyc")
        if os.path.exists(group):
            manifest = Path(group).parent / compiled_config()["MANIFEST"]
            manifest.write_text(json.dumps(self.compiled_hashes, indent=1, sort_keys=True) + "\n")

    def generate_mypyc_sources(self) -> None:
        """Fill the placeholders with mypyc's extensions (their C sources, include dirs, flags), in place: setuptools
        has already registered them by name; drop them if mypyc fails."""
        placeholders = {e.name: e for e in self.extensions if e in MYPYC_PLACEHOLDERS and not e.sources}
        if not placeholders:
            return
        extensions, BuildExt.compiled_hashes = mypyc_extensions()
        made = {e.name: e for e in extensions}
        for name, placeholder in placeholders.items():
            if name in made:
                vars(placeholder).update(vars(made[name]))
        self.extensions = [e for e in self.extensions if e.name not in placeholders or e.name in made]


MYPYC_PLACEHOLDERS = mypyc_placeholders()

setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        Extension(
            "streamlet._record_batch",
            ["streamlet/_native/record_batch.c"],
            define_macros=[source_hash("streamlet/_native/record_batch.c")],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "streamlet._record_encoder",
            ["streamlet/_native/record_encoder.c"],
            define_macros=[source_hash("streamlet/_native/record_encoder.c")],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        *MYPYC_PLACEHOLDERS,
    ],
)
