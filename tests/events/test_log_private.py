"""The event log at rest: personal data in an event's text is redacted, its numbers stay
numbers (each line still JSON), and the file is private (0600 whatever the umask)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from backstay.failure import Failure
from backstay.observe import EventLog, RetryScheduled

EMAIL = "jane.canary@example.com"


def test_personal_data_is_redacted_and_numbers_stay_json(tmp_path: Path) -> None:
    failure = Failure(code="ERR_LLM_CONTENT_FILTER", message=f"refused: mail {EMAIL}")
    # A delay whose digits pass the Luhn check, as a float's may by chance.
    event = RetryScheduled(
        operation="w:t:r", attempt=1, delay_s=4.4111111111111111, failure=failure
    )
    path = tmp_path / "events.jsonl"
    before = os.umask(0o022)
    try:
        with EventLog(path) as log:
            log.emit(event)
    finally:
        os.umask(before)
    (line,) = path.read_text(encoding="utf-8").splitlines()
    data = json.loads(line)
    assert EMAIL not in line
    assert "[EMAIL]" in data["failure"]["message"]
    assert data["delay_s"] == 4.4111111111111111
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
