"""The README as a newcomer meets it: short, its Python snippets run as written (offline,
no LLM), and every relative link in it and in docs/ and benchmarks/ points to a file that
exists (the Presidio and library snippets of docs/ run in test_readme_presidio.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MAX_LINES = 200
#: Longest paragraph, list item or table cell a newcomer should have to read (words).
MAX_WORDS = 120
#: Markdown links and images: ``[text](target)``; the target ends at white space or ")".
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", flags=re.S | re.M)


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def linked_files() -> list[Path]:
    return [
        README,
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "benchmarks").glob("*.md")),
        *sorted((ROOT / "benchmarks" / "results").glob("*.md")),
    ]


def relative_links(path: Path, anchors: bool = False) -> list[str]:
    """Relative link targets of a Markdown file, outside code blocks (without their
    ``#anchor`` unless ``anchors``); a link to an anchor of the same file is ``#anchor``."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    out = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, flags=re.I):
            continue  # a URL (https:, mailto:)
        out.append(target if anchors else target.split("#", 1)[0])
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (repeats get ``-1``, ``-2``, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    for m in re.finditer(r"^#{1,6} (.+)$", FENCE.sub("", path.read_text(encoding="utf-8")), flags=re.M):
        s = slug(m.group(1))
        out.add(s if s not in seen else f"{s}-{seen[s]}")
        seen[s] = seen.get(s, 0) + 1
    return out


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines; keep it to {MAX_LINES}, move reference to docs/"


def prose_units(text: str) -> list[str]:
    """The README's paragraphs, list items and table cells, outside code blocks."""
    units: list[str] = []
    for block in re.split(r"\n\s*\n", FENCE.sub("", text)):
        lines = block.strip().splitlines()
        if lines and all(line.lstrip().startswith("|") for line in lines):
            units += [c for line in lines for c in line.strip().strip("|").split("|")]
        elif lines and re.match(r"\s*([-*+]|\d+\.) ", lines[0]):
            units += re.split(r"\n(?=\s*(?:[-*+]|\d+\.) )", block.strip())
        else:
            units.append(block)
    return units


def words(unit: str) -> int:
    """Words a reader reads: link targets do not count."""
    return len(re.sub(r"\]\([^)]*\)", "]", unit).split())


def test_readme_units_are_short() -> None:
    long = [u[:60] for u in prose_units(README.read_text(encoding="utf-8")) if words(u) > MAX_WORDS]
    assert not long, f"README paragraphs, list items or cells over {MAX_WORDS} words: {long}"


def test_word_counter_sees_a_long_cell() -> None:
    cell = " ".join(["word"] * (MAX_WORDS + 1))
    text = f"Intro.\n\n| a | b |\n|---|---|\n| short | {cell} |\n\n- item one\n- item two\n"
    units = prose_units(text)
    assert max(words(u) for u in units) == MAX_WORDS + 1
    assert "- item two" in units and words("[x](a/very/long/link/target.md) y") == 2


def test_readme_keeps_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert "bash samples/demo.sh" in text and (ROOT / "samples" / "demo.sh").is_file()
    assert "bash .ci/run" in text and (ROOT / ".ci" / "run").is_file()


def test_readme_has_a_python_snippet() -> None:
    assert python_blocks(README.read_text(encoding="utf-8"))


@pytest.mark.parametrize("index", range(len(python_blocks(README.read_text(encoding="utf-8")))))
def test_readme_python_snippet_runs(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Each snippet as written, alone, in an empty folder: no LLM, no network, no file of ours."""
    monkeypatch.chdir(tmp_path)
    code = python_blocks(README.read_text(encoding="utf-8"))[index]
    ns: dict[str, object] = {"__name__": "__readme__"}
    exec(compile(code, f"README.md python block {index + 1}", "exec"), ns)
    result = ns.get("result")
    if result is not None and hasattr(result, "linkable_after"):
        assert result.linkable_after is False
        assert result.text and "[REDACTED]" in result.text
        assert result.text in capsys.readouterr().out


def test_relative_links_point_to_files() -> None:
    broken = [
        f"{path.relative_to(ROOT)}: {target}"
        for path in linked_files()
        for target in relative_links(path)
        if target and not (path.parent / target).exists()
    ]
    assert broken == []


def test_anchors_point_to_headings() -> None:
    broken = []
    for path in linked_files():
        for target in relative_links(path, anchors=True):
            file, _, anchor = target.partition("#")
            dest = (path.parent / file) if file else path
            if anchor and dest.suffix == ".md" and dest.is_file() and anchor not in headings(dest):
                broken.append(f"{path.relative_to(ROOT)}: {target}")
    assert broken == []


def test_link_finder_sees_links() -> None:
    assert "docs/guarantees.md" in relative_links(README)
    assert "docs/review.md" in relative_links(README)
    assert slug("What `delink` writes") == "what-delink-writes"
    assert slug("Attacks: what the audit checks") == "attacks-what-the-audit-checks"
