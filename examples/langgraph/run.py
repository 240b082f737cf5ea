"""Run the LangGraph agent of ``graph_agent.py`` under backstay, against the fake provider.

    python examples/langgraph/run.py [--base-url URL] [--state-dir DIR]

Without ``--base-url`` a fake provider is started here, scripted to answer with a
``write_file`` tool call. ``write_file`` needs a human's approval: the run pauses with a
durable approval request; this script approves it (as ``backstay`` would after a person
decides) and resumes the run, which continues the graph from its checkpoint.
"""

from __future__ import annotations

import sys
from pathlib import Path

from backstay.frameworks.langgraph import LangGraphAdapter

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "_shared"))

from approval_demo import main  # noqa: E402  (examples/_shared is put on the path above)


def build_adapter(base_url: str) -> LangGraphAdapter:
    return LangGraphAdapter(agent="graph_agent:build", base_url=base_url, api_key="test-key")


if __name__ == "__main__":
    sys.exit(main(HERE, build_adapter))
