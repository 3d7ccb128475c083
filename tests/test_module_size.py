"""Every module of the package fits in one reading: at most 700 lines.  A module that grows
past it is split by what it holds (see ../shared/STYLE.md, "Modules under ~700 lines")."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "presidio_delink"
MAX_LINES = 700


def long_modules(root: Path, limit: int = MAX_LINES) -> list[str]:
    """``path: lines`` for each ``.py`` file under ``root`` longer than ``limit`` lines."""
    out = []
    for path in sorted(root.rglob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > limit:
            out.append(f"{path.relative_to(root)}: {n}")
    return out


def test_no_module_is_over_700_lines() -> None:
    assert long_modules(PACKAGE) == []


def test_a_long_module_is_named(tmp_path: Path) -> None:
    (tmp_path / "short.py").write_text("x = 1\n" * 3)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "long.py").write_text("x = 1\n" * 5)
    assert long_modules(tmp_path, limit=4) == ["sub/long.py: 5"]
