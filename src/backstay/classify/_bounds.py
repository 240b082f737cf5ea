"""How much of a text the classifier reads: its beginning and its end, never all of it.

Provider error markers sit at the start of a message ("Error code: 429 - {…}",
"overloaded_error: …"), and transcripts of retries end with the latest word ("try again
in 7s"). A message can also carry a whole proxy's HTML page or an agent's transcript, and
message patterns cost time in proportion to the text they run over. So every message
pattern, wait hint and embedded-body search runs over ``bounded(text)``: the first
``SCAN_HEAD_CHARS`` and the last ``SCAN_TAIL_CHARS`` characters, which keeps the time of
one classification bounded whatever the size of the failure. Words past the head and
before the tail are not read.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_SCANNED_CHARS", "SCAN_HEAD_CHARS", "SCAN_TAIL_CHARS", "bounded"]

SCAN_HEAD_CHARS: Final = 8 * 1024
SCAN_TAIL_CHARS: Final = 2 * 1024
# Between the two parts: a line of its own, so no pattern matches across the cut.
_SEAM: Final = "\n…\n"
# The longest text ``bounded`` returns; a text no longer is returned as it is.
MAX_SCANNED_CHARS: Final = SCAN_HEAD_CHARS + len(_SEAM) + SCAN_TAIL_CHARS
# A cut moves to the nearest whitespace within this many characters, so it does not split
# a word (or a credential, which redaction would then no longer recognise).
_SNAP: Final = 256


def _space_before(text: str, end: int) -> int:
    """The end of the head: just after the last whitespace before ``end``, if one is near."""
    cut = max(text.rfind(" ", end - _SNAP, end), text.rfind("\n", end - _SNAP, end))
    return cut + 1 if cut > 0 else end


def _space_after(text: str, start: int) -> int:
    """The start of the tail: at the first whitespace after ``start``, if one is near."""
    found = [
        i
        for i in (text.find(" ", start, start + _SNAP), text.find("\n", start, start + _SNAP))
        if i >= 0
    ]
    return min(found) if found else start


def bounded(text: str) -> str:
    """``text`` itself up to ``MAX_SCANNED_CHARS``; else its first ``SCAN_HEAD_CHARS`` and
    last ``SCAN_TAIL_CHARS`` characters, joined by a line holding ``…``. Idempotent."""
    if len(text) <= MAX_SCANNED_CHARS:
        return text
    head = _space_before(text, SCAN_HEAD_CHARS)
    tail = _space_after(text, len(text) - SCAN_TAIL_CHARS)
    return text[:head] + _SEAM + text[tail:]
