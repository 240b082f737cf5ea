"""A suite's ``storage`` section: what the state keeps of its tasks at rest.

``prompts: redacted`` (the default) keeps each task's prompt as ``redact_personal``
leaves it, with the digest of the clear prompt (a resume reads it again from the suite
file); ``prompts: clear`` keeps the prompt as given, so a resume never needs the suite
file. Results, transcripts and run plans are kept redacted either way
(docs/design/storage.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from backstay.config._document import Document
from backstay.config._fields import Field, check
from backstay.config._paths import Path
from backstay.config._sections import mapping, unknown_key

__all__ = ["PROMPTS_CLEAR", "PROMPTS_REDACTED", "STORAGE_FIELDS", "keep_prompts"]

PROMPTS_REDACTED: Final = "redacted"
PROMPTS_CLEAR: Final = "clear"

STORAGE_FIELDS: Final[Mapping[str, Field]] = {
    "prompts": Field(
        type="string",
        choices=(PROMPTS_REDACTED, PROMPTS_CLEAR),
        help="How the state keeps each task's prompt: redacted (default: personal data "
        "and secrets replaced, a resume reads the prompt again from this file) or clear "
        "(as given).",
    ),
}


def keep_prompts(doc: Document, raw: object) -> bool:
    """Whether the ``storage`` section ``raw`` keeps prompts in the clear (problems to
    ``doc``; ``False`` when it is wrong or absent)."""
    path: Path = ("storage",)
    body = mapping(doc, path, raw, "storage settings (prompts)") or {}
    for key in body:
        if key not in STORAGE_FIELDS:
            unknown_key(doc, path, key, list(STORAGE_FIELDS))
    value = body.get("prompts", PROMPTS_REDACTED)
    problems = check(STORAGE_FIELDS["prompts"], value)
    for sub, reason in problems:
        doc.problem((*path, "prompts", *sub), reason)
    return not problems and value == PROMPTS_CLEAR
