"""Connecting to Ray: importing it (or saying which extra is missing), starting a local
cluster for one batch on 127.0.0.1, or joining an existing one, and leaving it after.

A local cluster is started with ``ray.init(address="local")`` — never joining whatever
cluster Ray's temp directory remembers — with the batch's CPUs, no dashboard, a small
object store, and these variables set while Ray is imported and started (its processes
inherit them): every listener on 127.0.0.1 (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, which
also means single-node), no usage statistics, and no token authentication (nothing
outside this host can reach it). ``ray.shutdown()`` at the end stops every process it
started. Joining an existing cluster leaves the environment as it is: that cluster's own
settings (token, addresses) apply.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import os
import socket
import sys
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any, Final

from backstay.errors import ConfigError
from backstay.executors.ray_settings import LOCAL_OBJECT_STORE_BYTES, RaySettings

__all__ = ["LOCAL_ENV", "RAY_EXTRA_HINT", "import_ray", "ray_session", "require_ray"]

RAY_EXTRA_HINT: Final = "pip install 'backstay[ray]'"
LOCAL_ENV: Final[Mapping[str, str]] = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "disabled",
}
_WHERE: Final = "--executor ray"
# How long the head of an existing cluster may take to accept a connection.
REACH_TIMEOUT_S: Final = 5.0


@contextlib.contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """``values`` set in ``os.environ`` (those already set are kept) while the block runs."""
    added = [name for name in values if name not in os.environ]
    for name in added:
        os.environ[name] = values[name]
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def require_ray() -> None:
    """``ConfigError`` naming the extra when Ray is not installed (without importing it)."""
    try:
        found = importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):  # ValueError: a module entry without a spec
        found = False
    if not found:
        raise ConfigError(f"the Ray executor needs the ray extra: {RAY_EXTRA_HINT}", where=_WHERE)


def import_ray() -> ModuleType:
    """The ``ray`` module; ``ConfigError`` naming the extra when it is not installed."""
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise ConfigError(
            f"the Ray executor needs the ray extra: {RAY_EXTRA_HINT}", where=_WHERE
        ) from None


def _loopback_only() -> None:
    """``ConfigError`` when Ray was imported before backstay could pin it to loopback:
    a local cluster would then listen on every interface."""
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None and getattr(constants, "ENABLE_RAY_CLUSTER", False):
        raise ConfigError(
            "ray was imported before backstay started its local cluster, so the cluster "
            "would listen on every interface: set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 "
            "before importing ray, or pass the address of a cluster (--ray-address)",
            where=_WHERE,
        )


def _check_reachable(address: str) -> None:
    """``ConfigError`` when ``address`` is ``host:port`` and nothing accepts a connection
    there within ``REACH_TIMEOUT_S`` (Ray itself would retry for minutes)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return  # "auto", "ray://…": left to Ray
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT_S).close()
    except OSError as exc:
        raise ConfigError(
            f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}",
            where="--ray-address",
        ) from None


def _connect(settings: RaySettings, concurrency: int) -> tuple[ModuleType, bool]:
    """Ray, initialized; whether it was initialized here (and so is to be shut down)."""
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    if settings.address is not None:
        ray = import_ray()
        if ray.is_initialized():
            return ray, False
        try:
            ray.init(address=settings.address, **options)
        except ConnectionError as exc:
            raise ConfigError(
                f"cannot reach the Ray cluster at {settings.address}: {exc}",
                where="--ray-address",
            ) from None
        return ray, True
    with _environment(LOCAL_ENV):
        ray = import_ray()
        if ray.is_initialized():
            return ray, False
        _loopback_only()
        ray.init(
            address="local",
            num_cpus=settings.local_cpus(concurrency),
            num_gpus=0,
            include_dashboard=False,
            object_store_memory=LOCAL_OBJECT_STORE_BYTES,
            **options,
        )
    return ray, True


@contextlib.contextmanager
def ray_session(settings: RaySettings, *, concurrency: int) -> Iterator[ModuleType]:
    """Ray, initialized for one batch: the cluster at ``settings.address``, or a local one
    started now; left (and a local one stopped) when the block ends. A session already
    open in this process is used as it is and left open."""
    loaded = sys.modules.get("ray")
    if settings.address is not None and (loaded is None or not loaded.is_initialized()):
        _check_reachable(settings.address)
    ray, started = _connect(settings, concurrency)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()
