"""What makes two memory names one name to a person or to a disk, and the names a disk refuses.

A name is a path, and paths that look alike are a trap: ``МЕМОRY`` (Cyrillic М, Е, М, О)
beside ``MEMORY``, ``memоry/2025-01-01`` (a Cyrillic о) beside the daily-log folder, ``café``
spelled with one code point or with ``e`` and a combining accent (two files on Linux, one on
macOS). So names are compared by their :func:`skeleton`: compatibility-normalised (NFKD:
fullwidth and ligature letters become plain ones), each Cyrillic or Greek letter that looks like
a Latin one replaced by it, case folded, and composed again (NFC). Two names with one skeleton
are one name; a new name is written in NFC.

The look-alike table is small on purpose: the Latin, Cyrillic and Greek letters that look the
same in common fonts (after Unicode's confusables list, UTS #39, for those scripts). The full
list (PyICU's ``SpoofChecker``) would bring ICU, a native library of tens of megabytes, for
names that letters, digits, spaces and ``_ - .`` already bound; ``confusable-homoglyphs``
flags mixed scripts but gives no skeleton to compare names by.

Windows refuses device names (``CON``, ``nul.txt``, ``com1``) in any folder, whatever the
extension, and a folder of memories is often synced to Windows; and file systems count a
name's length in bytes: ``MAX_SEGMENT_BYTES`` leaves room, under the common limit of 255 bytes,
for the temporary file a write uses (``.name.md.<12 hex>.tmp``) and for a trash stamp.
"""

from __future__ import annotations

import unicodedata

MAX_SEGMENT_BYTES = 200
"""Longest folder or file name in a memory name, in bytes of UTF-8 (without ``.md``): with
``.md``, a temporary file's ``.``, ``.<12 hex>.tmp`` or a trash stamp ``~YYYYMMDDTHHMMSS-N``
it stays within the 255 bytes most file systems allow."""
MAX_NAME_BYTES = 1000
"""Longest memory name, folders included, in bytes of UTF-8."""

_LOOK_ALIKES = {
    # Cyrillic capitals and small letters
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ԛ": "Q", "Ԝ": "W", "Ү": "Y",
    "Һ": "H", "Ӏ": "I", "Ԁ": "D", "Ѵ": "V",
    "а": "a", "с": "c", "е": "e", "о": "o", "р": "p", "у": "y", "х": "x", "ѕ": "s", "і": "i",
    "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "ү": "y", "ѵ": "v", "ɡ": "g",
    # Greek capitals and small letters
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C", "Ϳ": "J",
    "ο": "o", "ρ": "p", "ν": "v", "ι": "i", "α": "a", "γ": "y", "υ": "u", "κ": "k", "χ": "x",
    "ϲ": "c", "ϳ": "j",
    # Latin letters that look like others
    "ı": "i", "ȷ": "j",
}  # fmt: skip
_FOLD = str.maketrans(_LOOK_ALIKES)

_SCRIPTS = ("CYRILLIC", "GREEK")

_DEVICE_NAMES = frozenset(
    ["con", "prn", "aux", "nul", "conin$", "conout$", "clock$"]
    + [f"{stem}{n}" for stem in ("com", "lpt") for n in (*"123456789", "¹", "²", "³")]
)
"""Names Windows keeps for devices, in every folder and with any extension (``nul.txt``)."""


def skeleton(name: str) -> str:
    """What ``name`` looks like: equal for names a person cannot tell apart (see the module)."""
    folded = unicodedata.normalize("NFKD", name).translate(_FOLD).casefold()
    return unicodedata.normalize("NFC", folded)


def nfc(name: str) -> str:
    return unicodedata.normalize("NFC", name)


def look_alike_letters(name: str) -> list[str]:
    """The letters of ``name`` that the skeleton replaces by a Latin one, each once, as
    ``'М' (Cyrillic)``: for a message that says why two names are one."""
    out: dict[str, None] = {}
    for char in unicodedata.normalize("NFKD", name):
        if char in _LOOK_ALIKES:
            script = next((s for s in _SCRIPTS if s in unicodedata.name(char, "")), "")
            out[f"{char!r} ({script.title()})" if script else repr(char)] = None
    return list(out)


def device_name(segment: str) -> str | None:
    """The Windows device name that ``segment`` is (with or without an extension), or None."""
    stem = segment.split(".", 1)[0].rstrip(" ").casefold()
    return stem if stem in _DEVICE_NAMES else None


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def why_alike(new: str, existing: str) -> str:
    """In a few words, how ``new`` and ``existing`` (one skeleton) differ."""
    if nfc(new) == nfc(existing):
        return "the same letters, composed differently (Unicode normalisation)"
    if any(unicodedata.normalize("NFKC", n) != nfc(n) for n in (new, existing)):
        return "fullwidth or other compatibility forms of letters"
    letters = look_alike_letters(new) or look_alike_letters(existing)
    if letters:
        return "look-alike letters: " + ", ".join(letters[:4])
    if new.casefold() == existing.casefold():
        return "only letter case"
    return "letters that look alike"
