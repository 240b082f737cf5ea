"""Installing the pinned versions of the agent CLIs into the managed directory.

Each CLI gets its own folder, ``<dir>/<name>``: npm packages with
``npm install --prefix <folder> <package>@<version>`` (never global), PyPI ones into their
own virtual environment, ``<folder>/venv``. After installing, the binary must report the
pinned version and every file its runs' ``HOME`` needs (``home_seed``) must be present;
only then is the manifest written. So:

* a CLI whose manifest names the pinned version and whose binary is unchanged is left
  alone, without starting it (a warm run takes milliseconds);
* a changed pin, a missing or changed binary, or an unfinished install (no manifest) is
  installed again, from an empty folder;
* two installers at once (two test runs) take a lock per CLI: the second waits, then
  finds the CLI installed.

Several CLIs install in parallel (``jobs``). Every command's output goes to
``<dir>/logs/<name>.log``; a failure names the CLI, the command and what to do.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import enum
import fcntl
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

from backstay._checks import check_number
from backstay.agents import _exec
from backstay.agents.catalog import CliSpec, PackageKind
from backstay.agents.home import seed_files
from backstay.agents.manifest import Manifest, read_manifest, write_manifest
from backstay.agents.version import detect_version
from backstay.errors import ConfigError
from backstay.redact import redact

__all__ = [
    "DEFAULT_INSTALL_TIMEOUT_S",
    "DEFAULT_JOBS",
    "InstallResult",
    "InstallStarted",
    "InstallStatus",
    "binary_in",
    "current_install",
    "install",
]

DEFAULT_JOBS: Final = 3
# One npm or pip command; a cold install of the largest CLI takes about a minute.
DEFAULT_INSTALL_TIMEOUT_S: Final = 900.0
_QUOTE_LINES: Final = 4
# Variables of the caller that would point pip at the wrong interpreter or packages.
_PYTHON_LEAKS: Final = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")


class InstallStatus(enum.StrEnum):
    """How one CLI's install ended."""

    INSTALLED = "installed"
    ALREADY = "already installed"
    FAILED = "failed"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class InstallStarted:
    """A CLI is being installed, and why (``not installed``, ``pin changed 1.0.0 → 1.1.0``…)."""

    name: str
    version: str
    reason: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class InstallResult:
    """One CLI's install: ``binary`` is where it is when it succeeded; ``problem`` says
    what went wrong and what to do when it failed (redacted); ``log`` is its output."""

    name: str
    status: InstallStatus
    version: str
    binary: Path | None = None
    duration_s: float = 0.0
    reason: str = ""
    problem: str | None = None
    log: Path | None = None

    @property
    def ok(self) -> bool:
        return self.status is not InstallStatus.FAILED


class _Failed(Exception):
    """An install step failed; the message is the whole ``problem``."""


def binary_in(spec: CliSpec, folder: Path) -> Path:
    """Where the program of ``spec`` lands inside its managed folder."""
    if spec.kind is PackageKind.NPM:
        return folder / "node_modules" / ".bin" / spec.binary
    return folder / "venv" / "bin" / spec.binary


def current_install(spec: CliSpec, root: Path) -> tuple[Manifest | None, str]:
    """The managed install of ``spec`` if it is intact and at the pinned version, else
    ``None``, with the reason it must be installed (again)."""
    folder = root / spec.name
    manifest = read_manifest(folder)
    if manifest is None:
        unfinished = folder.exists() and any(folder.iterdir())
        return None, "unfinished or failed install" if unfinished else "not installed"
    if manifest.version != spec.pinned:
        return None, f"pin changed {manifest.version} → {spec.pinned}"
    if manifest.package != spec.package or manifest.binary_path != binary_in(spec, folder):
        return None, f"package changed {manifest.package} → {spec.package}"
    if not manifest.intact():
        return None, "binary missing or changed since it was installed"
    return manifest, "pinned version installed"


@contextlib.contextmanager
def _locked(root: Path, name: str) -> Iterator[None]:
    locks = root / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    with (locks / f"{name}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _install_env(environ: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in environ.items() if k not in _PYTHON_LEAKS}
    env["npm_config_update_notifier"] = "false"
    return env


def _quote(tail: str) -> str:
    """The lines of an installer's output that say what went wrong: its first error lines
    (npm's ``code``/``errno``/reason, pip's ``ERROR:``), else its last lines."""
    lines = [line.strip() for line in redact(tail).splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() and "complete log" not in line]
    return " | ".join(errors[:_QUOTE_LINES] or lines[-_QUOTE_LINES:])


@dataclasses.dataclass(slots=True)
class _Installer:
    root: Path
    timeout_s: float
    python: str
    env: dict[str, str]
    node_major: int | None = None
    stopped: threading.Event = dataclasses.field(default_factory=threading.Event)

    def _run(self, argv: list[str], log: Path, what_to_do: str) -> None:
        try:
            finished = _exec.run(
                argv, env=self.env, timeout_s=self.timeout_s, log=log, stop=self.stopped
            )
        except OSError as exc:
            raise _Failed(
                f"`{' '.join(argv)}` could not start: {exc.strerror or exc}. {what_to_do}"
            ) from None
        if finished.returncode is None:
            raise _Failed(
                f"`{' '.join(argv)}` did not finish within {self.timeout_s:g} s and was "
                f"killed. {what_to_do}"
            )
        if not finished.ok:
            raise _Failed(
                f"`{' '.join(argv)}` exited {finished.returncode}: {_quote(finished.tail)}. "
                f"{what_to_do}"
            )

    def _node(self, spec: CliSpec) -> str:
        npm = shutil.which("npm", path=self.env.get("PATH"))
        node = shutil.which("node", path=self.env.get("PATH"))
        if npm is None or node is None:
            missing = "npm" if npm is None else "node"
            raise _Failed(
                f"{missing} is not on PATH: install Node.js {spec.min_node or ''}+ with npm, "
                f"then run `{spec.install_hint}`"
            )
        if spec.min_node is not None:
            if self.node_major is None:
                said = _exec.run([node, "--version"], env=self.env, timeout_s=30.0)
                match = re.match(r"v(\d+)\.", said.tail.strip())
                self.node_major = int(match.group(1)) if match else 0
            if self.node_major < spec.min_node:
                raise _Failed(
                    f"{spec.package} needs Node.js {spec.min_node} or newer, {node} is "
                    f"version {self.node_major}: install a newer Node.js, then run "
                    f"`{spec.install_hint}`"
                )
        return npm

    def _commands(self, spec: CliSpec, folder: Path) -> list[list[str]]:
        if spec.kind is PackageKind.NPM:
            npm = self._node(spec)
            return [
                [
                    npm,
                    "install",
                    "--prefix",
                    str(folder),
                    "--no-fund",
                    "--no-audit",
                    "--no-update-notifier",
                    spec.requirement,
                ]
            ]
        venv = folder / "venv"
        return [
            [self.python, "-m", "venv", str(venv)],
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                spec.requirement,
            ],
        ]

    def _reachable_hint(self, spec: CliSpec) -> str:
        registry = "the npm registry" if spec.kind is PackageKind.NPM else "PyPI"
        return (
            f"Check that {registry} is reachable and {spec.requirement} exists, then run "
            f"`{spec.install_hint}`"
        )

    def install_one(self, spec: CliSpec, folder: Path, log: Path) -> Path:
        """Install ``spec`` into the empty ``folder``; the checked binary."""
        for argv in self._commands(spec, folder):
            self._run(argv, log, self._reachable_hint(spec))
        binary = binary_in(spec, folder)
        if not binary.is_file():
            raise _Failed(
                f"{spec.requirement} installed no program {binary}: is {spec.binary!r} still "
                "its program's name?"
            )
        try:
            version = detect_version(binary, spec, environ=self.env)
            seed_files(spec, binary)
        except ConfigError as err:
            raise _Failed(f"{err.reason}; see {log}") from None
        if version != spec.pinned:
            raise _Failed(
                f"installed {spec.requirement} but `{binary} --version` reports {version}"
            )
        return binary


def _one(
    spec: CliSpec,
    installer: _Installer,
    force: bool,
    report: Callable[[InstallStarted | InstallResult], None] | None,
) -> InstallResult:
    started = time.monotonic()
    folder = installer.root / spec.name
    log = installer.root / "logs" / f"{spec.name}.log"

    def result(
        status: InstallStatus,
        reason: str,
        *,
        binary: Path | None = None,
        problem: str | None = None,
        log: Path | None = None,
    ) -> InstallResult:
        done = InstallResult(
            name=spec.name,
            status=status,
            version=spec.pinned,
            binary=binary,
            duration_s=time.monotonic() - started,
            reason=reason,
            problem=problem,
            log=log,
        )
        if report is not None:
            report(done)
        return done

    with _locked(installer.root, spec.name):
        manifest, reason = current_install(spec, installer.root)
        if manifest is not None and not force:
            return result(InstallStatus.ALREADY, reason, binary=manifest.binary_path)
        reason = "forced" if manifest is not None else reason
        if report is not None:
            report(InstallStarted(name=spec.name, version=spec.pinned, reason=reason))
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("", encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        try:
            binary = installer.install_one(spec, folder, log)
            write_manifest(
                folder, name=spec.name, package=spec.package, version=spec.pinned, binary=binary
            )
        except _Failed as failed:
            return result(InstallStatus.FAILED, reason, problem=str(failed), log=log)
        except OSError as exc:
            problem = f"cannot write to {folder}: {exc.strerror or exc}"
            return result(InstallStatus.FAILED, reason, problem=problem, log=log)
        return result(InstallStatus.INSTALLED, reason, binary=binary, log=log)


def install(
    specs: Sequence[CliSpec],
    *,
    root: Path,
    force: bool = False,
    jobs: int = DEFAULT_JOBS,
    timeout_s: float = DEFAULT_INSTALL_TIMEOUT_S,
    python: str | None = None,
    environ: Mapping[str, str] | None = None,
    report: Callable[[InstallStarted | InstallResult], None] | None = None,
) -> tuple[InstallResult, ...]:
    """Install each of ``specs`` at its pinned version under ``root`` (see the module
    docstring); the results in the order given. Failures are results, never exceptions;
    ``ConfigError`` only for invalid arguments or an unusable ``root``.

    ``force`` installs again even what is intact. ``python`` is the interpreter that
    creates PyPI CLIs' virtual environments (default: the one running backstay).
    ``environ`` is the installers' environment (default: this process's). ``report``
    hears an ``InstallStarted`` before each install and every ``InstallResult``, from
    worker threads.
    """
    check_number(jobs, where="jobs", minimum=1, integer=True)
    check_number(timeout_s, where="timeout_s", above=True)
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise ConfigError(f"names a CLI twice: {names}", where="names")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"{root} cannot be created: {exc.strerror or exc}", where="--dir"
        ) from None
    installer = _Installer(
        root=root,
        timeout_s=timeout_s,
        python=python or sys.executable,
        env=_install_env(os.environ if environ is None else environ),
    )
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_one, spec, installer, force, report) for spec in specs]
        try:
            return tuple(future.result() for future in futures)
        except BaseException:
            installer.stopped.set()
            for future in futures:
                future.cancel()
            _exec.kill_all()
            raise
