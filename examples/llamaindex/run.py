"""Run the LlamaIndex workflow of ``notes_workflow.py`` under backstay, against the fake provider.

    python examples/llamaindex/run.py [--base-url URL] [--state-dir DIR]

Without ``--base-url`` a fake provider is started here, scripted to answer with a
``write_file`` tool call. ``write_file`` needs a human's approval: the run pauses with a
durable approval request; this script approves it (as ``backstay`` would after a person
decides) and resumes the run, which restores the workflow context and runs the waiting step again.
"""

from __future__ import annotations

import sys
from pathlib import Path

from backstay.frameworks.llamaindex import LlamaIndexAdapter

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "_shared"))

from approval_demo import main  # noqa: E402  (examples/_shared is put on the path above)


def build_adapter(base_url: str) -> LlamaIndexAdapter:
    return LlamaIndexAdapter(agent="notes_workflow:build", base_url=base_url, api_key="test-key")


if __name__ == "__main__":
    sys.exit(main(HERE, build_adapter))
