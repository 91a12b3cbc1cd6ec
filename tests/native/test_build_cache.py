"""The build cache of mica.emit_c.build: what the key covers, where the cache lives, atomic and
concurrent writes, refusal of directories other users can write to, detection of corrupted entries, and
compiler errors reported with context.

A wrapper script stands in for the C compiler where a test needs to count or slow down compilations
(``--version`` is passed through, so each wrapper is a distinct compiler for the cache key)."""

import multiprocessing
import os
import re
import shutil
import stat
import sys
from pathlib import Path

import cffi
import pytest

from mica.emit_c import build
from mica.emit_c.build import cache_dir, compile_shared, verify_artifact
from mica.errors import EmitError
from mica.native_sim import runtime
from mica.native_sim.runtime import RUNTIME_DIR

SRC = "int mica_cache_probe(int x) { return x + %d; }\n"


def call(path, value=1):
    ffi = cffi.FFI()
    ffi.cdef("int mica_cache_probe(int x);")
    return ffi.dlopen(str(path)).mica_cache_probe(value)


def key_of(path: Path) -> str:
    return path.read_bytes()[-(64 + 1 + 64 + 1):][:64].decode()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("MICA_CACHE_DIR", str(d))
    return d


@pytest.fixture
def wrapper(tmp_path, monkeypatch):
    """A compiler wrapper logging each compilation (one line per call, with the files that exist in the
    output's directory while it compiles); with $MICA_TEST_CC_RENDEZVOUS set to a directory, a compilation
    waits until another one has started too."""
    log = tmp_path / "cc.log"
    script = tmp_path / "cc-wrapper.sh"
    script.write_text(f"""#!/bin/sh
if [ "$1" = "--version" ]; then exec cc --version; fi
for last; do :; done
echo "compile $(ls -A "$(dirname "$last")" | tr '\\n' ' ')" >> {log}
if [ -n "$MICA_TEST_CC_RENDEZVOUS" ]; then    # wait (at most 30 s) until two compilations are running
  touch "$MICA_TEST_CC_RENDEZVOUS/$$"; n=0
  while [ "$(ls "$MICA_TEST_CC_RENDEZVOUS" | wc -l)" -lt 2 ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); done
fi
exec cc "$@"
""")
    script.chmod(0o755)
    monkeypatch.setenv("CC", str(script))
    return log


def compilations(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


# -- the key ----------------------------------------------------------------------------------------------

def test_key_covers_source_flags_format_runtime_and_compiler(cache, monkeypatch, tmp_path):
    base = compile_shared(SRC % 1, name="probe")
    assert call(base) == 2
    assert compile_shared(SRC % 1, name="probe") == base
    others = {compile_shared(SRC % 2, name="probe"),
              compile_shared(SRC % 1, name="probe", flags=("-DMICA_X=1",))}
    monkeypatch.setattr(build, "FORMAT_VERSION", "mica-build-test")
    others.add(compile_shared(SRC % 1, name="probe"))
    monkeypatch.undo()
    monkeypatch.setenv("MICA_CACHE_DIR", str(cache))
    monkeypatch.setattr(build, "runtime_abi", lambda: "another runtime header")
    others.add(compile_shared(SRC % 1, name="probe"))
    monkeypatch.undo()
    monkeypatch.setenv("MICA_CACHE_DIR", str(cache))
    monkeypatch.setattr(build, "compiler_version", lambda cc: "cc 99.0 (another compiler)")
    others.add(compile_shared(SRC % 1, name="probe"))
    assert base not in others and len(others) == 5
    assert all(p.parent == cache for p in others)


def test_compiler_identity_includes_its_version_and_resolved_path():
    ident = build.compiler_version("cc")
    assert os.path.isabs(ident.splitlines()[0]) and len(ident.splitlines()) > 1


def test_the_name_only_decorates_the_file_name(cache):
    a = compile_shared(SRC % 3, name="../../etc/evil name\x00;rm -rf ~")
    b = compile_shared(SRC % 3, name="other")
    assert a.parent == cache and b.parent == cache and a != b and key_of(a) == key_of(b)
    assert "/" not in a.name and not a.name.startswith(".")


# -- the emulator's sources: a unity build of several parts -----------------------------------------------

def _runtime_key() -> str:
    return build.cache_key(runtime.runtime_source(), "cc 1.0", build.DEFAULT_FLAGS)


def test_editing_or_adding_any_part_of_the_emulator_changes_its_key(tmp_path, monkeypatch):
    copy = tmp_path / "runtime_c"
    shutil.copytree(RUNTIME_DIR, copy)
    monkeypatch.setattr(runtime, "RUNTIME_DIR", copy)
    parts = build.runtime_sources(copy)
    names = {p.name for p in parts}
    assert {"mica_rt.c", "mica_rt.h"} <= names and len(names) >= 10        # the unity file and its parts
    assert names == {p.name for p in RUNTIME_DIR.iterdir() if p.suffix in (".c", ".h")}
    base = _runtime_key()
    assert _runtime_key() == base                                              # deterministic
    seen = {base}
    for part in parts:
        original = part.read_bytes()
        part.write_bytes(original + b"\n/* edited */\n")
        key = _runtime_key()
        assert key not in seen, part.name                                      # every part counts, apart
        seen.add(key)
        part.write_bytes(original)
        assert _runtime_key() == base, part.name
    (copy / "rt_extra.c").write_text("/* a new part */\n")
    assert _runtime_key() not in seen
    (copy / "rt_extra.c").unlink()
    (copy / "sub").mkdir()
    (copy / "sub" / "more.h").write_text("/* a part in a subdirectory */\n")
    assert _runtime_key() not in seen
    (copy / "sub" / "more.h").unlink()
    (copy / "NOTES.txt").write_text("not C\n")                                # other files do not count
    assert _runtime_key() == base
    part = next(p for p in parts if p.name != "mica_rt.c")
    part.rename(copy / f"renamed_{part.name}")                                 # a name counts too
    assert _runtime_key() != base


def test_the_unity_build_includes_every_part_once():
    unity = (RUNTIME_DIR / "mica_rt.c").read_text()
    included = re.findall(r'^#include "([^"]+)"', unity, flags=re.M)
    parts = sorted(p.name for p in RUNTIME_DIR.glob("*.c") if p.name != "mica_rt.c")
    assert sorted(included) == sorted(parts + ["mica_rt.h"])                   # each once, none missing
    for name in parts:                                                         # parts include nothing local
        assert not re.search(r'^#include "', (RUNTIME_DIR / name).read_text(), flags=re.M), name
        assert f" *   {name} " in unity, f"{name} is not listed in mica_rt.c's overview"


def test_the_package_ships_every_part_of_the_emulator():
    tomllib = pytest.importorskip("tomllib")                                   # Python 3.11+
    with open(Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as f:
        patterns = tomllib.load(f)["tool"]["setuptools"]["package-data"]["mica.runtime_c"]
    shipped = {p for pattern in patterns for p in RUNTIME_DIR.glob(pattern)}
    missing = [p.name for p in build.runtime_sources(RUNTIME_DIR) if p not in shipped]
    assert not missing, f"pyproject.toml package-data does not ship {missing}"


# -- where the cache lives ----------------------------------------------------------------------------------

def test_cache_directory_follows_mica_cache_dir_then_xdg(tmp_path, monkeypatch):
    monkeypatch.delenv("MICA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "mica"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")          # ignored, as the XDG spec says
    assert cache_dir() == Path.home() / ".cache" / "mica"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "mica"
    monkeypatch.setenv("MICA_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "explicit"


def test_a_new_cache_directory_is_created_private(tmp_path, monkeypatch):
    monkeypatch.delenv("MICA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = compile_shared(SRC % 4, name="probe")
    assert path.parent == tmp_path / "xdg" / "mica"
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert call(path) == 5


# -- atomic and concurrent writes -----------------------------------------------------------------------------

def test_the_library_appears_only_complete_and_by_rename(cache, wrapper):
    path = compile_shared(SRC % 5, name="atomic")
    assert compile_shared(SRC % 5, name="atomic") == path           # cached: no second compilation
    [line] = compilations(wrapper)
    assert path.name not in line.split()                            # absent while the compiler ran
    assert any(f.startswith(".atomic-") and f.endswith(".so.tmp") for f in line.split()[1:])
    assert sorted(os.listdir(cache)) == [path.name]                 # no temporary files left
    assert verify_artifact(path, key_of(path)) and call(path) == 6


def _compile_in_child(cache_dir_s, cc, rendezvous, barrier, queue):
    os.environ["MICA_CACHE_DIR"] = cache_dir_s
    os.environ["CC"] = cc
    os.environ["MICA_TEST_CC_RENDEZVOUS"] = rendezvous
    try:
        barrier.wait(timeout=60)
        path = compile_shared(SRC % 7, name="race")
        queue.put((str(path), call(path)))
    except BaseException as exc:   # reported to the parent
        queue.put(("error", repr(exc)))


def test_two_processes_compiling_the_same_program_share_one_artifact(cache, wrapper, tmp_path):
    rendezvous = tmp_path / "rendezvous"
    rendezvous.mkdir()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_compile_in_child, args=(str(cache), os.environ["CC"], str(rendezvous), barrier, queue))
             for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert all(p.exitcode == 0 for p in procs), results
    assert all(r[0] != "error" for r in results), results
    assert len(compilations(wrapper)) == 2 and len(os.listdir(rendezvous)) == 2   # at the same time
    paths = {r[0] for r in results}
    assert len(paths) == 1 and [r[1] for r in results] == [8, 8]
    path = Path(paths.pop())
    assert sorted(os.listdir(cache)) == [path.name] and verify_artifact(path, key_of(path))
    assert compile_shared(SRC % 7, name="race") == path and len(compilations(wrapper)) == 2


# -- directories other users can write to -------------------------------------------------------------------

@pytest.mark.parametrize("mode, words", [(0o770, "writable by its group"), (0o707, "writable by others"),
                                         (0o777, "writable by others")])
def test_a_cache_directory_others_can_write_is_refused(tmp_path, monkeypatch, mode, words):
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(mode)
    monkeypatch.setenv("MICA_CACHE_DIR", str(d))
    with pytest.raises(EmitError, match=words) as info:
        compile_shared(SRC % 8, name="probe")
    assert str(d) in str(info.value) and "chmod go-w" in str(info.value)
    assert os.listdir(d) == []                                      # nothing compiled, nothing loaded
    d.chmod(0o700)
    assert call(compile_shared(SRC % 8, name="probe")) == 9        # the user's own private dir is fine


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_cache_directory_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    d = tmp_path / "theirs"
    d.mkdir(mode=0o700)
    os.chown(d, 54321, -1)
    monkeypatch.setenv("MICA_CACHE_DIR", str(d))
    with pytest.raises(EmitError, match="owned by uid 54321, not by you"):
        compile_shared(SRC % 9, name="probe")


def test_a_parent_anyone_can_write_is_refused_unless_sticky(tmp_path, monkeypatch):
    top = tmp_path / "open"
    top.mkdir()
    top.chmod(0o777)
    d = top / "cache"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("MICA_CACHE_DIR", str(d))
    with pytest.raises(EmitError, match="world-writable without the sticky bit"):
        compile_shared(SRC % 10, name="probe")
    top.chmod(0o1777)                                               # like /tmp
    assert call(compile_shared(SRC % 10, name="probe")) == 11


def test_a_cache_path_that_is_a_file_is_an_emit_error(tmp_path, monkeypatch):
    f = tmp_path / "file"
    f.write_text("x")
    monkeypatch.setenv("MICA_CACHE_DIR", str(f))
    with pytest.raises(EmitError, match="cache directory"):
        compile_shared(SRC % 11, name="probe")


# -- corrupted entries ------------------------------------------------------------------------------------

def _truncate(p: Path, good: bytes, other: Path):
    p.write_bytes(good[: len(good) // 2])


def _garbage(p: Path, good: bytes, other: Path):
    p.write_bytes(os.urandom(len(good)))


def _flipped_byte(p: Path, good: bytes, other: Path):
    b = bytearray(good)
    b[len(b) // 3] ^= 0x40
    p.write_bytes(bytes(b))


def _no_trailer(p: Path, good: bytes, other: Path):
    p.write_bytes(good[: -(64 + 1 + 64 + 1 + len(b"\n\0MICA-ARTIFACT "))])


def _empty(p: Path, good: bytes, other: Path):
    p.write_bytes(b"")


def _another_artifact(p: Path, good: bytes, other: Path):
    p.write_bytes(other.read_bytes())                               # valid library, wrong key


@pytest.mark.parametrize("damage", [_truncate, _garbage, _flipped_byte, _no_trailer, _empty, _another_artifact])
def test_a_corrupted_entry_is_detected_and_rebuilt(cache, wrapper, damage):
    path = compile_shared(SRC % 12, name="victim")
    other = compile_shared(SRC % 13, name="victim")
    good, key = path.read_bytes(), key_of(path)
    damage(path, good, other)
    assert not verify_artifact(path, key)
    assert compile_shared(SRC % 12, name="victim") == path
    assert len(compilations(wrapper)) == 3                          # rebuilt once
    assert verify_artifact(path, key_of(path)) and call(path) == 13
    assert compile_shared(SRC % 12, name="victim") == path and len(compilations(wrapper)) == 3


def test_a_directory_in_place_of_an_entry_is_an_emit_error(cache):
    path = compile_shared(SRC % 14, name="blocked")
    path.unlink()
    path.mkdir()
    with pytest.raises(EmitError, match="cannot store the compiled library"):
        compile_shared(SRC % 14, name="blocked")


# -- compiler errors ---------------------------------------------------------------------------------------

def test_compiler_errors_are_emit_errors_with_context(cache):
    src = "int broken(void) { return undeclared_name; }\n"
    with pytest.raises(EmitError) as info:
        compile_shared(src, name="kernels_gemm")
    msg = str(info.value)
    assert "C compilation of kernels_gemm failed" in msg and "exit 1" in msg and "undeclared_name" in msg
    assert "undeclared_name" in info.value.detail
    assert os.listdir(cache) == []                                  # no partial artifact, no temp files


def test_a_missing_compiler_is_an_emit_error(cache, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/mica-cc")
    with pytest.raises(EmitError, match="cannot run the C compiler '/nonexistent/mica-cc'"):
        compile_shared(SRC % 15, name="probe")


def test_a_compiler_that_fails_to_start_compiling_is_an_emit_error(cache, tmp_path, monkeypatch):
    script = tmp_path / "bad-cc.sh"
    script.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo bad-cc 1.0; exit 0; fi\n'
                      'echo "bad-cc: internal compiler error: segmentation fault" >&2; exit 4\n')
    script.chmod(0o755)
    monkeypatch.setenv("CC", str(script))
    with pytest.raises(EmitError, match=r"(?s)C compilation of probe failed \(.*bad-cc.sh, exit 4\).*"
                                        r"internal compiler error"):
        compile_shared(SRC % 16, name="probe")
    assert os.listdir(cache) == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
