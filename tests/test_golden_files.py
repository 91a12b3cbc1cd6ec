"""The golden-file helper the back-end golden tests share (tests/golden_files.py)."""

import pytest

from golden_files import check_golden, golden_diff

FILES = {"plan.json": "{}\n", "kernels/a.cpp": "int a;\nint b;\n"}


def test_matching_tree_passes(tmp_path):
    check_golden(FILES, tmp_path, update=True)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == sorted(FILES)
    check_golden(FILES, tmp_path)


def test_difference_is_a_unified_diff(tmp_path):
    check_golden(FILES, tmp_path, update=True)
    changed = dict(FILES, **{"kernels/a.cpp": "int a;\nint c;\n"})
    with pytest.raises(AssertionError) as e:
        check_golden(changed, tmp_path, label="prog")
    msg = str(e.value)
    assert "--- golden/prog/kernels/a.cpp" in msg and "+++ emitted/kernels/a.cpp" in msg
    assert "-int b;" in msg and "+int c;" in msg and "--update-golden" in msg


def test_missing_and_stale_files_are_reported(tmp_path):
    check_golden(FILES, tmp_path, update=True)
    (tmp_path / "old.csl").write_text("x\n")
    fewer = {"plan.json": FILES["plan.json"], "new.txt": "n\n"}
    problems = golden_diff(fewer, tmp_path, "prog")
    assert any("stale golden file" in p and "old.csl" in p for p in problems)
    assert any("stale golden file" in p and "kernels/a.cpp" in p for p in problems)
    assert any("new.txt is emitted but has no golden file" in p for p in problems)


def test_update_rewrites_and_prunes(tmp_path):
    check_golden(FILES, tmp_path, update=True)
    (tmp_path / "old.csl").write_text("x\n")
    fewer = {"plan.json": "[]\n"}
    check_golden(fewer, tmp_path, update=True)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == ["plan.json"]
    assert (tmp_path / "plan.json").read_text() == "[]\n"


def test_line_end_only_difference_is_reported(tmp_path):
    check_golden(FILES, tmp_path, update=True)
    problems = golden_diff(dict(FILES, **{"plan.json": "{}"}), tmp_path, "prog")
    assert problems and "line ends or the final newline" in problems[0]


def test_missing_directory_fails(tmp_path):
    with pytest.raises(AssertionError, match="has no golden file"):
        check_golden(FILES, tmp_path / "absent")
