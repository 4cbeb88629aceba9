"""The native parts, all optional: without a C compiler (or without mypy at build time) the install still succeeds
and streamlet runs pure Python, slower and the same.

- a Kafka record batch decoder for the consumers (`streamlet/_native/record_batch.c`) and an encoder for the record
  collector (`streamlet/_native/record_encoder.c`);
- the per-record modules listed in `streamlet/_compiled.py`, compiled with mypyc. `STREAMLET_MYPYC=0` skips them.
  The build records each one's source hash (`streamlet/_compiled_sources.json`), so that a build older than its
  source is not imported (`streamlet/_compiled.py`). A build is kept in `~/.cache/streamlet/mypyc-builds`
  (`STREAMLET_CACHE_DIR`), by a hash of all it is made from, and a later install of the same sources (a fresh
  clone, CI) copies it instead of compiling again (about 40 s). `STREAMLET_MYPYC_CACHE=0` always compiles.
"""

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
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


def compiled_sources() -> dict[str, Path]:
    return {m: ROOT / f"{m.replace('.', '/')}.py" for m in compiled_config()["COMPILED_MODULES"]}


def source_hashes() -> dict[str, str]:
    return {m: hashlib.sha256(path.read_bytes()).hexdigest() for m, path in compiled_sources().items()}


def mypyc_cache_dir() -> Path | None:
    """Where this build of the compiled modules is kept: a hash of the package's sources (mypy reads the modules
    the compiled ones import), this file, pyproject.toml, mypy's and setuptools' versions, Python's build and the
    C compiler's version."""
    if os.environ.get("STREAMLET_MYPYC_CACHE", "1") == "0":
        return None
    import setuptools
    from mypy.version import __version__ as mypy_version

    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    try:
        compiler_version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    except OSError:
        compiler_version = ""
    digest = hashlib.sha256()
    for part in (
        sys.version,
        platform.machine(),
        sysconfig.get_config_var("EXT_SUFFIX"),
        mypy_version,
        setuptools.__version__,
        compiler_version,
        os.environ.get("CC", ""),
        os.environ.get("CFLAGS", ""),
    ):
        digest.update(f"{part}\0".encode())
    sources = [*(ROOT / "streamlet").rglob("*.py"), *(ROOT / "streamlet").rglob("*.pyi"), ROOT / "setup.py"]
    for path in sorted([*sources, ROOT / "pyproject.toml"]):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    root = Path(os.environ.get("STREAMLET_CACHE_DIR", Path.home() / ".cache" / "streamlet"))
    return root / "mypyc-builds" / digest.hexdigest()[:16]


def mypyc_extensions() -> tuple[list[Extension], dict[str, str]]:
    """mypyc's extensions and {module: source SHA-256}; none when mypyc fails."""
    from mypyc.build import mypycify

    config = compiled_config()
    paths = {m: str(path.relative_to(ROOT)) for m, path in compiled_sources().items()}
    # the build environment has mypy, not streamlet's dependencies: modules it cannot find are typed as Any
    options = ["--ignore-missing-imports"]
    try:
        extensions = mypycify([*options, *paths.values()], opt_level="3", group_name=config["GROUP"])
    except (SystemExit, Exception) as exc:  # a type error or a mypyc limit: install the pure-Python modules
        print(f"streamlet: mypyc did not compile {list(paths)} ({exc!r}); installing them as Python")
        return [], {}
    for extension in extensions:
        extension.optional = True  # a failed compile leaves the pure-Python modules (_compiled.py checks the group)
    return extensions, source_hashes()


class BuildExt(build_ext):
    """Generates the compiled modules' C, then writes their source hashes beside them, once they are built."""

    compiled_hashes: dict[str, str] = {}
    cache: Path | None = None  # where a build of these sources is kept (mypyc_cache_dir)
    cached: dict[str, Path] = {}  # extension name -> its file in the build cache, copied instead of compiled

    def run(self) -> None:
        self.generate_mypyc_sources()
        super().run()
        self.keep_mypyc_build()
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
        BuildExt.cache = cache = mypyc_cache_dir()
        if cache is not None and all((cache / name).is_file() for name in placeholders):
            print(f"streamlet: the compiled modules of these sources are in {cache}: copied, not compiled")
            BuildExt.cached = {name: cache / name for name in placeholders}
            BuildExt.compiled_hashes = source_hashes()
            return
        extensions, BuildExt.compiled_hashes = mypyc_extensions()
        made = {e.name: e for e in extensions}
        for name, placeholder in placeholders.items():
            if name in made:
                vars(placeholder).update(vars(made[name]))
        self.extensions = [e for e in self.extensions if e.name not in placeholders or e.name in made]

    def build_extension(self, ext: Extension) -> None:
        cached = self.cached.get(ext.name)
        if cached is None:
            super().build_extension(ext)
            return
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cached, target)
        target.chmod(0o755)

    def keep_mypyc_build(self) -> None:
        """Put a fresh build of the compiled modules in the cache (written aside, then renamed into place)."""
        cache = self.cache if self.compiled_hashes and not self.cached else None
        names = [e.name for e in self.extensions if e in MYPYC_PLACEHOLDERS]
        built = {name: Path(self.get_ext_fullpath(name)) for name in names}
        if cache is None or cache.exists() or not names or not all(path.is_file() for path in built.values()):
            return
        partial = cache.with_name(f"{cache.name}.{os.getpid()}.partial")
        partial.mkdir(parents=True, exist_ok=True)
        for name, path in built.items():
            shutil.copyfile(path, partial / name)
        try:
            partial.rename(cache)
        except OSError:  # another install kept the same build meanwhile
            shutil.rmtree(partial, ignore_errors=True)
        for stale in sorted(cache.parent.iterdir(), key=lambda p: p.stat().st_mtime)[:-4]:  # the 4 newest stay
            shutil.rmtree(stale, ignore_errors=True)


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
