"""Golden files: the files a back end emits for a program, checked in under a directory and compared byte for
byte, so that every change to emitted code shows up in review.

:func:`check_golden` compares a dict ``{relative path: text}`` with a directory: a missing or extra (stale)
file fails, and each differing file is shown as a unified diff. With ``update=True`` (``--update-golden`` or
``MICA_UPDATE_GOLDEN=1``, see ``tests/conftest.py``) it first rewrites the directory: changed and new files
are written and stale ones deleted.
"""

from __future__ import annotations

import difflib
from pathlib import Path

HOW_TO_UPDATE = "rerun with --update-golden (or MICA_UPDATE_GOLDEN=1) to accept"
MAX_DIFF_LINES = 40             # per file


def read_tree(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` as ``{path relative to it (posix): text}`` (empty if it does not exist)."""
    if not directory.is_dir():
        return {}
    return {p.relative_to(directory).as_posix(): p.read_bytes().decode("utf-8")
            for p in sorted(directory.rglob("*")) if p.is_file()}


def write_tree(files: dict[str, str], directory: Path) -> None:
    """Makes ``directory`` hold exactly ``files``: writes changed and new files, deletes stale ones."""
    on_disk = read_tree(directory)
    for rel in sorted(set(on_disk) - set(files)):
        (directory / rel).unlink()
    for rel, text in sorted(files.items()):
        if on_disk.get(rel) != text:
            path = directory / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))


def golden_diff(files: dict[str, str], directory: Path, label: str = "") -> list[str]:
    """What differs between ``files`` and ``directory``, one message (or unified diff) per problem."""
    label = label or directory.name
    on_disk = read_tree(directory)
    problems = []
    for rel in sorted(set(files) - set(on_disk)):
        problems.append(f"{label}: {rel} is emitted but has no golden file {directory / rel}")
    for rel in sorted(set(on_disk) - set(files)):
        problems.append(f"{label}: stale golden file {directory / rel} (no longer emitted)")
    for rel in sorted(set(files) & set(on_disk)):
        if files[rel] != on_disk[rel]:
            diff = list(difflib.unified_diff(on_disk[rel].splitlines(), files[rel].splitlines(),
                                             f"golden/{label}/{rel}", f"emitted/{rel}", lineterm="", n=1))
            if len(diff) > MAX_DIFF_LINES:
                diff = diff[:MAX_DIFF_LINES] + [f"... ({len(diff) - MAX_DIFF_LINES} more diff lines)"]
            if not diff:        # same lines, different line ends or final newline
                diff = [f"{label}/{rel}: differs in line ends or the final newline only"]
            problems.append("\n".join(diff))
    return problems


def check_golden(files: dict[str, str], directory: Path, *, update: bool = False, label: str = "") -> None:
    """Asserts that ``directory`` holds exactly ``files`` (after rewriting it if ``update``)."""
    if update:
        write_tree(files, directory)
    problems = golden_diff(files, directory, label)
    assert not problems, (f"emitted files differ from {directory} ({HOW_TO_UPDATE}):\n" + "\n".join(problems))
