"""Run a command with an OTLP receiver of its own (``tests.observe.otlp_receiver``) as its
``OTEL_EXPORTER_OTLP_ENDPOINT``, in whatever network namespace this runs in, and write the
spans it received to a JSON file: ``python otlp_wrap.py OUT.json -- COMMAND…``. Exits with
the command's exit code. Used where the command must run inside a private namespace, out
of reach of a receiver in the test's own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.observe.otlp_receiver import OtlpReceiver, attributes

# The longest the command may run (the test's own timeout is longer).
COMMAND_TIMEOUT_S = 600.0


def main() -> int:
    out, separator, *command = sys.argv[1:]
    assert separator == "--", "usage: otlp_wrap.py OUT.json -- COMMAND…"
    with OtlpReceiver() as receiver:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
        done = subprocess.run(command, env=env, timeout=COMMAND_TIMEOUT_S, check=False)
        spans = [
            {
                "name": span.name,
                "trace_id": span.trace_id.hex(),
                "span_id": span.span_id.hex(),
                "parent_span_id": span.parent_span_id.hex(),
                "start_ns": span.start_time_unix_nano,
                "end_ns": span.end_time_unix_nano,
                "attributes": attributes(span),
            }
            for span in receiver.spans()
        ]
    Path(out).write_text(json.dumps(spans), encoding="utf-8")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
