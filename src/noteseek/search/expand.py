"""Parent expansion: grow a result to its whole section, then its neighbours, within a budget.

An agent reading a 900-character chunk often needs the rest of its section (the list that the
chunk cut, the code block after the paragraph). Expansion adds the chunks of the same heading
path first, alternating after and before the result, then the neighbouring chunks of other
sections, while the total stays within the character budget. The text is the chunks' own
source text joined in file order, and the line range covers what was added.
"""

from __future__ import annotations

from collections.abc import Sequence

from noteseek.store.base import ChunkRow


def expand(row: ChunkRow, chunks: Sequence[ChunkRow], budget: int) -> tuple[str, int, int]:
    """(text, start line, end line) of ``row`` grown within ``budget`` characters."""
    index = next((i for i, c in enumerate(chunks) if c.rowid == row.rowid), None)
    if index is None or budget <= len(row.text):
        return row.text, row.start_line, row.end_line
    lo = hi = index
    size = len(row.text)
    for same_section in (True, False):
        grew = True
        while grew:
            grew = False
            for step in (1, -1):  # after first: a section is read downwards
                j = hi + 1 if step == 1 else lo - 1
                if not 0 <= j < len(chunks):
                    continue
                other = chunks[j]
                if same_section and other.heading_path != row.heading_path:
                    continue
                if size + len(other.text) + 1 > budget:
                    continue
                size += len(other.text) + 1
                if step == 1:
                    hi = j
                else:
                    lo = j
                grew = True
    picked = chunks[lo : hi + 1]
    text = "\n".join(c.text.rstrip("\n") for c in picked)
    return text, picked[0].start_line, picked[-1].end_line
