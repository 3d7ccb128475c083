"""Docs and code speak of the product only: no phrase dates a change by the order of the work.

"Since the <ordinal> ...", "the <ordinal> s-ession's run", "this s-ession", "an earlier
s-ession" (without the hyphen) mean nothing to a reader and go stale.  A docstring says what the code does and why;
a figure's history belongs in its results file under ``benchmarks/results/``, where a run is
named by its date and commit.  This test scans the package, ``docs/``, ``tests/``,
``benchmarks/`` and the README for such phrases and names each one's file and line.

"Session" alone is a product word (a review session, ``presidio_delink/review/session.py``):
only the phrases that order the work are flagged.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("README.md", "presidio_delink", "docs", "tests", "benchmarks")
#: Text files that hold prose or code; data dumps (JSON, JSONL) are not read.
SUFFIXES = {".py", ".md", ".txt", ".log", ".toml", ".cfg", ".ini", ".yaml", ".yml", ".sh",
            ".html", ".jinja", ".j2", ".js", ".css", ".patch", ".rst"}
SKIPPED_DIRS = {"_work", "__pycache__", ".venv", ".mypy_cache", ".ruff_cache", "node_modules"}


_ORDINAL_WORDS = (
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
    "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
    "seventeenth", "eighteenth", "nineteenth", "twentieth", "thirtieth",
)
ORDINAL = (r"(?:(?:twenty|thirty)-)?(?:" + "|".join(_ORDINAL_WORDS) + r")"
           r"|\d+(?:st|nd|rd|th)")
#: Ordinals from "tenth" on: "the first's memory" (a first worker's) is plain English; the
#: same form with a later ordinal names a stage of the work.
LATE_ORDINAL = (r"(?:(?:twenty|thirty)-)?(?:" + "|".join(_ORDINAL_WORDS[9:]) + r")"
                r"|\d+(?:st|nd|rd|th)")
#: Phrases that date a change by the order of the work.  Matched case-insensitively on the
#: text with line breaks (and a comment's leading ``#``, ``#:``, ``*`` or ``>``) read as
#: spaces, so that a phrase wrapped over two lines is still found.
HISTORY = re.compile(
    "|".join((
        rf"\b(?:{ORDINAL})(?:'s)?\s+sessions?\b",                 # <ordinal> session(s)
        rf"\b(?:since|until|till)\s+the\s+(?:{ORDINAL})\b",        # since the <ordinal>
        rf"\bthe\s+(?:{LATE_ORDINAL})'s\b",                             # the <ordinal>'s panel
        r"\b(?:this|that|previous|earlier|last|next|later|prior|same|an\s+earlier)"
        r"\s+sessions?\b",                                          # this / an earlier ... session
        r"\bsame-session\b|\bpre-session\b",
        r"\bsessions?\s+\d+\b",                                     # session <number>
        r"\bsession's\s+(?:start|end|first|last)\b",               # the session's (start|end)
        r"\b(?:start|end|beginning)\s+of\s+(?:the\s+|this\s+)?session\b",
        r"\bsessions?\s+ago\b",
    )),
    flags=re.I,
)
#: A line break with the next line's indentation and comment marks.
_BREAK = re.compile(r"\n[ \t]*(?:#:?|\*|>|//)?[ \t]*")


def history_phrases(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line: phrase`` for each phrase of ``path`` that dates a change by the order
    of the work (``file`` relative to ``root`` where it lies under it)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    flat, line_of = [], []  # the text with breaks as spaces; each character's line number
    line, pos = 1, 0
    for brk in _BREAK.finditer(text):
        flat.append(text[pos:brk.start()])
        line_of.extend([line] * (brk.start() - pos))
        flat.append(" ")
        line_of.append(line)
        line += 1
        pos = brk.end()
    flat.append(text[pos:])
    line_of.extend([line] * (len(text) - pos))
    joined = "".join(flat)
    try:
        name = path.relative_to(root).as_posix()
    except ValueError:
        name = path.as_posix()
    return [f"{name}:{line_of[m.start()]}: {m.group(0)}" for m in HISTORY.finditer(joined)]


def scanned_files(root: Path = ROOT) -> list[Path]:
    out = []
    for top in SCANNED:
        base = root / top
        if base.is_file():
            out.append(base)
            continue
        for path in sorted(base.rglob("*")):
            if (path.is_file() and path.suffix in SUFFIXES
                    and not SKIPPED_DIRS.intersection(path.relative_to(root).parts)):
                out.append(path)
    return out


def test_scan_covers_the_project() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in scanned_files()}
    assert "README.md" in names
    assert "presidio_delink/linkage.py" in names
    assert "tests/test_docs_history.py" in names
    assert any(n.startswith("docs/") for n in names)
    assert any(n.startswith("benchmarks/results/") for n in names)


def test_no_phrase_dates_a_change_by_the_order_of_the_work() -> None:
    found = [hit for path in scanned_files() for hit in history_phrases(path)]
    assert found == [], (
        "Describe the product instead (a results file names its run by date and commit):\n"
        + "\n".join(found))



def test_a_planted_phrase_is_found_with_its_line(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""A module."""\n'
        "X = 1\n"
        "# chosen on held-in texts (the eighteenth\n"
        "#   session's run): the panel reads pairs\n"
        + "Y = 2  # since the fif" "teenth the guard reads it\n"
        + '"""Measured in this ses' 'sion and in an earlier ses' 'sion."""\n'
        "# issue 8 ses" "sion 4, at the ses" "sion's end\n",
        encoding="utf-8",
    )
    hits = history_phrases(planted, root=tmp_path)
    assert [h.split(": ", 1)[0] for h in hits] == [
        "planted.py:3", "planted.py:5", "planted.py:6", "planted.py:6", "planted.py:7",
        "planted.py:7"]
    assert hits[0] == "planted.py:3: eighteenth " + "session"
    assert "since the fif" "teenth" in hits[1]


def test_product_uses_of_session_are_not_flagged(tmp_path: Path) -> None:
    clean = tmp_path / "review.md"
    clean.write_text(
        "The review session keeps its state in SQLite; a session's records are read once.\n"
        "Open a session with `presidio-delink review`, then sign off the first edit.\n"
        "The second pass and the third step of the guard; the first run of a benchmark.\n"
        "## 2026-12-05, run at 60db66d: the protection reads the window pairs\n",
        encoding="utf-8",
    )
    assert history_phrases(clean, root=tmp_path) == []
