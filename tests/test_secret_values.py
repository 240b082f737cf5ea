"""The secret values redaction removes by value follow the environment exactly, whether
the change is noticed through audit events (watching) or by comparing (when watching is
impossible), and asking for them is cheap when nothing changed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest

from backstay import redact
from backstay._secret_values import SECRETS, SecretValues

LATE = "late-watched-7c2e9a41d5b3"
PLAIN = "plain-value-0f6b2d8e4a17"


def test_the_process_watches_environment_changes_through_audit_events() -> None:
    redact("anything")  # the first redaction adds the hook
    assert SECRETS._watching is True


def test_a_secret_put_by_another_thread_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    assert redact(f"value {LATE}") == f"value {LATE}"
    monkeypatch.setenv("OTHER_THREAD_TOKEN", "placeholder-value-0000")  # restored after
    worker = threading.Thread(target=os.environ.__setitem__, args=("OTHER_THREAD_TOKEN", LATE))
    worker.start()
    worker.join(timeout=10)
    assert LATE not in redact(f"value {LATE}")


def test_a_secret_put_and_removed_between_two_redactions_is_not_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    redact("before")
    monkeypatch.setenv("BRIEF_API_KEY", LATE)
    monkeypatch.delenv("BRIEF_API_KEY")
    assert redact(f"value {LATE}") == f"value {LATE}"


def test_a_variable_with_a_plain_name_leaves_the_answer_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = SECRETS.current()
    monkeypatch.setenv("MY_SERVICE_REGION", PLAIN)
    assert SECRETS.current() is before  # results kept by it stay valid


def test_a_registered_value_joins_the_answer_of_its_own_instance() -> None:
    before = SECRETS.current()
    values = SecretValues()
    values.register("registered-value-5a9c")
    assert "registered-value-5a9c" in values.current()
    assert SECRETS.current() is before


def test_an_environment_replaced_by_a_plain_mapping_is_read_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    replaced = dict(os.environ)
    monkeypatch.setattr(os, "environ", replaced)
    assert redact(f"value {LATE}") == f"value {LATE}"
    replaced["REPLACED_SECRET"] = LATE  # no audit event: only reading shows it
    assert LATE not in redact(f"value {LATE}")


def test_another_instance_compares_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    values = SecretValues()
    assert LATE not in values.current()
    assert values._watching is False
    monkeypatch.setenv("COMPARED_TOKEN", LATE)
    assert LATE in values.current()


def test_when_an_audit_hook_refuses_others_the_environment_is_compared() -> None:
    script = textwrap.dedent(
        f"""
        import os, sys

        def refuse(event, args):
            if event == "sys.addaudithook":
                raise RuntimeError("no more hooks")

        sys.addaudithook(refuse)
        from backstay import redact
        from backstay._secret_values import SECRETS
        assert redact("value {LATE}") == "value {LATE}"
        assert SECRETS._watching is False, SECRETS._watching
        os.environ["REFUSED_HOOK_TOKEN"] = "{LATE}"
        assert "{LATE}" not in redact("value {LATE}")
        del os.environ["REFUSED_HOOK_TOKEN"]
        assert redact("value {LATE}") == "value {LATE}"
        print("compared")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "compared"
