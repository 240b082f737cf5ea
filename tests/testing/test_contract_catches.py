"""The contract fails adapters that break it: run on purpose-built broken adapters in an
inner pytest session (the plugin comes from the installed entry point)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

BROKEN = '''
import asyncio
import subprocess
import sys

from backstay.adapters.base import BaseAdapter
from backstay.adapters.contract import AgentResult
from backstay.failure import Failure
from backstay.testing import ScriptedAdapter
from backstay.testing.contract import AdapterContract

GRANDCHILD = "import time; time.sleep(20)"
LEADER = (
    "import subprocess, sys, time; "
    f"subprocess.Popen([sys.executable, '-c', {GRANDCHILD!r}]); time.sleep(20)"
)


class Leaky(BaseAdapter):
    """Kills only the process it started at the deadline: its grandchild lives on."""

    name = "leaky"

    async def execute(self, request, *, operation_id, attempt_id, capture):
        proc = subprocess.Popen(
            [sys.executable, "-c", LEADER], env=dict(request.env), start_new_session=True
        )
        await asyncio.sleep(request.timeout_s)
        proc.kill()
        proc.wait()
        failure = Failure(code="ERR_TIMEOUT", message="deadline")
        return AgentResult.failed(failure, exit_code=124)


class TestLeaky(AdapterContract):
    hang_timeout_s = 0.5

    def make_adapter(self, scenario):
        return Leaky()


class TestRaw(AdapterContract):
    """Lets a foreign exception escape instead of raising AdapterError."""

    def make_adapter(self, scenario):
        return ScriptedAdapter([ConnectionError("refused"), "ok"], raw_exceptions=True)


class TestMisclassified(AdapterContract):
    """Reports a content-policy refusal as a server error (so it is retried)."""

    def make_adapter(self, scenario):
        return ScriptedAdapter(["ERR_HTTP_500_INTERNAL"])
'''

EXPECTED_FAILURES = {
    "TestLeaky::test_a_timed_out_attempt_leaves_no_process_behind",
    "TestRaw::test_every_failure_is_an_adapter_error_with_a_classified_failure[network_error]",
    "TestMisclassified::test_a_content_policy_refusal_is_escalated",
}


def test_the_contract_fails_adapters_that_break_it(tmp_path: Path) -> None:
    (tmp_path / "test_broken.py").write_text(textwrap.dedent(BROKEN), encoding="utf-8")
    selection = (
        "(TestLeaky and leaves_no_process) or (TestRaw and classified_failure and network_error) "
        "or (TestMisclassified and content_policy_refusal)"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-k", selection],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = done.stdout + done.stderr
    # The leaked grandchild is reported by pid; kill it rather than let it sleep on.
    for pid in re.findall(r"ProcessInfo\(pid=(\d+)", out):
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
    failed = set(re.findall(r"^FAILED test_broken\.py::(\S+)", out, flags=re.MULTILINE))
    assert failed == EXPECTED_FAILURES, out
    assert "processes left behind" in out
    assert "dispatch raised ConnectionError" in out
