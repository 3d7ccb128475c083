"""The README as a newcomer meets it: short, its Python snippets run as written (offline,
no LLM), and every relative link in it and in docs/ and benchmarks/ points to a file that
exists (the Presidio and library snippets of docs/ run in test_readme_presidio.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MAX_LINES = 250
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


def relative_links(path: Path) -> list[str]:
    """Relative link targets of a Markdown file, outside code blocks, without anchors."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    out = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, flags=re.I) or target.startswith("#"):
            continue  # a URL (https:, mailto:) or an anchor in the same file
        out.append(target.split("#", 1)[0])
    return out


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines; keep it to {MAX_LINES}, move reference to docs/"


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


def test_link_finder_sees_links() -> None:
    assert "docs/guarantees.md" in relative_links(README)
    assert "docs/review.md" in relative_links(README)
