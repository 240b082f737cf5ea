"""How ``backstay batch`` records its suite's runs while the first ones already run, and
how ``backstay resume`` finishes a recording a killed batch cut short.

``batch`` records the runs a page at a time (``backstay.engine.registration``), each
page's workspaces made before the page is recorded, and starts the first runs once the
first page is in. The batch's header keeps where its runs come from: the suite file
(resolved), a digest of its text, and whether the runs inherit their providers'
variables (``--isolated-env``). ``resume`` on a batch whose header is still there reads
that suite again (with its own ``--config``, as ``batch`` read it with its own), checks
that the file is the one the batch started from and that it gives the same runs (their
operation ids, in order), and records the runs left before it resumes the batch; a suite
file that is gone or was edited is a ``ConfigError`` saying so, and nothing runs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backstay.errors import ConfigError

if TYPE_CHECKING:
    from backstay.config import BackstayConfig, Suite
    from backstay.engine import Engine, SuiteBatch
    from backstay.engine.registration import EarlyStart

__all__ = ["early_start", "finish_recording"]


def _digest(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


def early_start(suite: Suite, batch: SuiteBatch, *, inherit_env: bool) -> EarlyStart | None:
    """How ``batch`` (of ``suite``) is recorded while it runs; ``None`` for a suite not
    read from a file (recorded whole before it runs, as nothing could finish it)."""
    from backstay.engine.registration import EarlyStart  # noqa: PLC0415 - when it runs

    if suite.file is None:
        return None
    file = Path(suite.file).resolve()
    source = {"suite_file": str(file), "suite_sha256": _digest(file), "inherit_env": inherit_env}
    return EarlyStart(source=json.dumps(source, sort_keys=True), before_page=batch.prepare_range)


def _source_of(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _source(text: str, where: str) -> dict[str, Any]:
    data = _source_of(text)
    if not isinstance(data.get("suite_file"), str):
        raise ConfigError(
            "the batch's recording was cut short and its header does not name a suite file "
            "to finish it from",
            where=where,
        )
    return data


def finish_recording(
    engine: Engine, *, state_dir: Path, config: BackstayConfig
) -> tuple[int, int] | None:
    """Record the runs a batch killed while it recorded them left; ``(recorded now, the
    batch's total)``, or ``None`` when the batch was wholly recorded."""
    from backstay.config import load_suite, with_frameworks  # noqa: PLC0415 - when it runs
    from backstay.engine.registration import (  # noqa: PLC0415
        EarlyStart,
        PagedRegistration,
        StagedCommit,
    )
    from backstay.engine.suite_batch import SuiteBatch  # noqa: PLC0415

    store = engine.store
    header = store.registration() if isinstance(store, PagedRegistration) else None
    if header is None:
        return None
    if isinstance(store, StagedCommit) and "staging" in _source_of(header.source):
        return store.finish_staged(), header.total  # a staged batch (register_each)
    where = f"--state-dir {state_dir}"
    source = _source(header.source, where)
    file = Path(source["suite_file"])
    cut = f"the batch's recording was cut short after {header.recorded} of its {header.total} runs"
    if not file.is_file():
        raise ConfigError(
            f"{cut}, and its suite file {file} is gone: put it back as it was to record the "
            "rest and resume",
            where=where,
        )
    if _digest(file) != source.get("suite_sha256"):
        raise ConfigError(
            f"{cut}, and its suite file {file} was edited since: put it back as it was to "
            "record the rest and resume",
            where=where,
        )
    suite = with_frameworks(load_suite(file, registry=config.registry), config.frameworks)
    batch = SuiteBatch.open(suite, state_dir, inherit_env=bool(source.get("inherit_env", True)))
    early = EarlyStart(source=header.source, before_page=batch.prepare_range)
    try:
        count = engine.finish_registration(batch.specs, early=early)
    except ConfigError as err:
        if err.where != "specs":
            raise
        raise ConfigError(f"{cut}: the suite {err.reason}", where=where) from None
    return count, header.total
