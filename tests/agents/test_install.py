"""install: pinned installs from a real npm registry and real wheels (served on this
machine), idempotent, repaired when broken, failures as results naming what to do."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.agents.registry import NPM_QUIET, NpmRegistry, npm_tarball, pip_env, write_wheel

from backstay.agents import (
    CliSpec,
    InstallResult,
    InstallStarted,
    InstallStatus,
    PackageKind,
    install,
)
from backstay.agents.install import binary_in, current_install
from backstay.agents.manifest import MANIFEST_FILE, read_manifest
from backstay.errors import ConfigError

pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None or shutil.which("node") is None,
    reason="installing from npm needs node and npm on PATH",
)


def npm_spec(pinned: str = "1.0.0", *, name: str = "fakecli") -> CliSpec:
    return CliSpec(
        name=name,
        kind=PackageKind.NPM,
        package=name,
        binary=name,
        pinned=pinned,
        supported=("1.0.0", "1.1.0"),
        min_node=18,
    )


@pytest.fixture
def registry() -> Iterator[NpmRegistry]:
    with NpmRegistry() as reg:
        for version in ("1.0.0", "1.1.0"):
            reg.add("fakecli", version, npm_tarball("fakecli", version, "fakecli"))
            reg.add("othercli", version, npm_tarball("othercli", version, "othercli"))
        reg.add("liarcli", "1.0.0", npm_tarball("liarcli", "1.0.0", "liarcli", prints="9.9.9"))
        reg.add("nobincli", "1.0.0", npm_tarball("nobincli", "1.0.0", "elsewhere"))
        leaky = npm_tarball("leakycli", "1.0.0", "leakycli", postinstall=LEAK)
        reg.add("leakycli", "1.0.0", leaky)
        yield reg


@pytest.fixture
def env(tmp_path: Path, registry: NpmRegistry) -> dict[str, str]:
    return {
        **os.environ,
        **NPM_QUIET,
        "npm_config_registry": registry.url,
        "npm_config_cache": str(tmp_path / "npm-cache"),
    }


CANARY = "sk-ant-api03-CanaryInstallLog0123456789"
# A postinstall script that prints a key and fails: npm shows its output in the error.
LEAK = f"node -e \"console.log('token {CANARY}'); process.exit(1)\""


def run(specs: list[CliSpec], root: Path, env: dict[str, str], **kw: Any) -> list[InstallResult]:
    return list(install(specs, root=root, environ=env, **kw))


def test_an_npm_cli_is_installed_at_its_pin_with_a_manifest(
    tmp_path: Path, env: dict[str, str]
) -> None:
    root = tmp_path / "agents"
    [result] = run([npm_spec()], root, env)
    assert result.status is InstallStatus.INSTALLED, result.problem
    assert result.binary == root / "fakecli" / "node_modules" / ".bin" / "fakecli"
    manifest = read_manifest(root / "fakecli")
    assert manifest is not None
    assert (manifest.package, manifest.version) == ("fakecli", "1.0.0")
    assert manifest.binary_path == result.binary
    assert result.log is not None
    assert "npm install --prefix" in result.log.read_text()


def test_an_intact_install_is_left_alone_without_asking_the_registry(
    tmp_path: Path, env: dict[str, str], registry: NpmRegistry
) -> None:
    root = tmp_path / "agents"
    run([npm_spec()], root, env)
    asked = len(registry.requests)
    [again] = run([npm_spec()], root, env)
    assert again.status is InstallStatus.ALREADY
    assert again.ok
    assert len(registry.requests) == asked


def test_a_changed_pin_installs_the_new_version(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "agents"
    run([npm_spec("1.0.0")], root, env)
    events: list[InstallStarted | InstallResult] = []
    [result] = run([npm_spec("1.1.0")], root, env, report=events.append)
    assert result.status is InstallStatus.INSTALLED
    assert result.reason == "pin changed 1.0.0 → 1.1.0"
    assert isinstance(events[0], InstallStarted)
    assert events[0].reason == result.reason
    manifest = read_manifest(root / "fakecli")
    assert manifest is not None
    assert manifest.version == "1.1.0"


def test_a_missing_binary_is_installed_again(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "agents"
    [first] = run([npm_spec()], root, env)
    assert first.binary is not None
    first.binary.resolve().unlink()
    assert current_install(npm_spec(), root)[0] is None
    [result] = run([npm_spec()], root, env)
    assert result.status is InstallStatus.INSTALLED
    assert result.reason == "binary missing or changed since it was installed"
    assert result.binary is not None
    assert result.binary.exists()


def test_a_folder_without_a_manifest_is_an_unfinished_install(
    tmp_path: Path, env: dict[str, str]
) -> None:
    root = tmp_path / "agents"
    run([npm_spec()], root, env)
    (root / "fakecli" / MANIFEST_FILE).unlink()
    [result] = run([npm_spec()], root, env)
    assert (result.status, result.reason) == (
        InstallStatus.INSTALLED,
        "unfinished or failed install",
    )


def test_force_installs_again_what_is_intact(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "agents"
    run([npm_spec()], root, env)
    [result] = run([npm_spec()], root, env, force=True)
    assert (result.status, result.reason) == (InstallStatus.INSTALLED, "forced")


def test_an_unreachable_registry_is_a_failed_result_naming_the_command_and_the_fix(
    tmp_path: Path, env: dict[str, str]
) -> None:
    closed = {**env, "npm_config_registry": "http://127.0.0.1:9/"}
    [result] = run([npm_spec()], tmp_path / "agents", closed)
    assert result.status is InstallStatus.FAILED
    assert not result.ok
    assert result.problem is not None
    assert "npm install --prefix" in result.problem
    assert "fakecli@1.0.0" in result.problem
    assert "npm registry is reachable" in result.problem
    assert "backstay agents install fakecli" in result.problem
    assert read_manifest(tmp_path / "agents" / "fakecli") is None


def test_one_failure_does_not_stop_the_others_installing_in_parallel(
    tmp_path: Path, env: dict[str, str]
) -> None:
    specs = [npm_spec(name="nosuchcli"), npm_spec(), npm_spec(name="othercli")]
    results = run(specs, tmp_path / "agents", env, jobs=3)
    assert [r.name for r in results] == ["nosuchcli", "fakecli", "othercli"]
    assert [r.status for r in results] == [
        InstallStatus.FAILED,
        InstallStatus.INSTALLED,
        InstallStatus.INSTALLED,
    ]


def test_a_binary_reporting_another_version_fails_the_install(
    tmp_path: Path, env: dict[str, str]
) -> None:
    [result] = run([npm_spec(name="liarcli")], tmp_path / "agents", env)
    assert result.status is InstallStatus.FAILED
    assert result.problem is not None
    assert "reports 9.9.9" in result.problem


def test_a_package_without_the_expected_program_fails_the_install(
    tmp_path: Path, env: dict[str, str]
) -> None:
    [result] = run([npm_spec(name="nobincli")], tmp_path / "agents", env)
    assert result.status is InstallStatus.FAILED
    assert result.problem is not None
    assert "installed no program" in result.problem


def test_two_installers_at_once_install_once(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "agents"
    results: list[InstallResult] = []

    def installer() -> None:
        results.extend(run([npm_spec()], root, env))

    threads = [threading.Thread(target=installer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(r.status for r in results) == [InstallStatus.ALREADY, InstallStatus.INSTALLED]


def test_a_pypi_cli_gets_its_own_virtual_environment_and_its_home_seed(
    tmp_path: Path, env: dict[str, str]
) -> None:
    wheels = tmp_path / "wheels"
    write_wheel(wheels, "fakeaider", "2.0.0", "fakeaider", {"prices_backup.json": '{"m": 1}'})
    spec = CliSpec(
        name="fakeaider",
        kind=PackageKind.PYPI,
        package="fakeaider",
        binary="fakeaider",
        pinned="2.0.0",
        supported=("2.0.0",),
        home_seed={".fake/caches/prices.json": "lib/python*/site-packages/fakeaider/*_backup.json"},
    )
    root = tmp_path / "agents"
    [result] = run([spec], root, {**env, **pip_env(wheels)})
    assert result.status is InstallStatus.INSTALLED, result.problem
    assert result.binary == binary_in(spec, root / "fakeaider")
    assert result.binary == root / "fakeaider" / "venv" / "bin" / "fakeaider"
    [again] = run([spec], root, {**env, **pip_env(wheels)})
    assert again.status is InstallStatus.ALREADY


def test_a_pypi_cli_missing_its_home_seed_fails_the_install(
    tmp_path: Path, env: dict[str, str]
) -> None:
    wheels = tmp_path / "wheels"
    write_wheel(wheels, "fakeaider", "2.0.0", "fakeaider", {})
    spec = CliSpec(
        name="fakeaider",
        kind=PackageKind.PYPI,
        package="fakeaider",
        binary="fakeaider",
        pinned="2.0.0",
        supported=("2.0.0",),
        home_seed={".fake/prices.json": "lib/python*/site-packages/fakeaider/prices.json"},
    )
    [result] = run([spec], tmp_path / "agents", {**env, **pip_env(wheels)})
    assert result.status is InstallStatus.FAILED
    assert result.problem is not None
    assert "prices.json is missing" in result.problem


def test_missing_npm_is_named_with_what_to_install(tmp_path: Path, env: dict[str, str]) -> None:
    [result] = run([npm_spec()], tmp_path / "agents", {**env, "PATH": str(tmp_path)})
    assert result.status is InstallStatus.FAILED
    assert result.problem is not None
    assert result.problem.startswith("npm is not on PATH: install Node.js 18+ with npm")


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [({"jobs": 0}, "jobs"), ({"timeout_s": 0}, "timeout_s")],
)
def test_invalid_arguments_are_config_errors(
    tmp_path: Path, kwargs: dict[str, Any], where: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        install([npm_spec()], root=tmp_path, **kwargs)
    assert caught.value.where == where


def test_naming_a_cli_twice_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="names a CLI twice"):
        install([npm_spec(), npm_spec()], root=tmp_path)


def test_a_secret_in_the_installers_output_reaches_neither_problem_nor_log(
    tmp_path: Path, env: dict[str, str]
) -> None:
    [result] = run([npm_spec(name="leakycli")], tmp_path / "agents", env)
    assert result.status is InstallStatus.FAILED
    assert result.problem is not None
    assert result.log is not None
    log = result.log.read_text()
    assert "[REDACTED]" in log
    assert CANARY not in log
    assert CANARY not in result.problem
