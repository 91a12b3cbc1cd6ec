"""Structural validator of an emitted Metalium file set (``host.cpp`` + ``kernels/*.cpp``), from the text alone.

Checks, each raising :class:`EmitError` naming file and line:

* circular buffers fit L1: the CB bytes the host creates per core stay within the L1 left for programs,
  every CB's total is a whole number of pages, and no index is created twice or outside 0..31;
* CB indices agree: every ``constexpr uint32_t cb_<name> = <index>;`` of a kernel names a CB the host
  creates, with the same index the host's ``// cb_<name>:`` comment gives it; no kernel waits for or
  reserves more pages than the CB holds;
* runtime args: for every kernel the host creates, the ``SetRuntimeArgs`` list has exactly as many values
  as the kernel reads (``get_arg_val<...>(i)`` for i = 0..n-1, no gaps);
* compile-time args: every ``get_compile_time_arg_val(i)`` is below the length of the kernel's
  ``compile_args`` vector;
* semaphores: every ``sem_*`` a kernel binds to a compile-time arg is, at that position of the host's
  vector, a semaphore the host created (``CreateSemaphore``) under the same name; at most
  :data:`~.api.NUM_SEMAPHORES` per core.

Public API: :func:`validate` (files as {relative path: text}), :func:`validate_dir`.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import EmitError
from .api import MAX_CBS, MAX_RUNTIME_ARGS, NUM_SEMAPHORES

_CB_CREATE = re.compile(r"CircularBufferConfig\((\d+), \{\{tt::CBIndex::c_(\d+), [^}]*\}\}\)"
                        r"\.set_page_size\(tt::CBIndex::c_(\d+), (\d+)\)")
_CB_COMMENT = re.compile(r"^\s*// (cb_\w+):")
_KERNEL = re.compile(r'KernelHandle (\w+) = CreateKernel\(program, "([^"]+)", \w+, .*\.compile_args = (\w+)\}')
_CT_VEC = re.compile(r"std::vector<uint32_t> (\w+) = \{([^}]*)\};")
_SET_RT = re.compile(r"SetRuntimeArgs\(program, (\w+), core, \{(.*)\}\);")
_SEM = re.compile(r"const uint32_t (sem_\w+) = CreateSemaphore\(")
_K_CB = re.compile(r"constexpr uint32_t (cb_\w+) = (\d+);")
_K_ARG = re.compile(r"get_arg_val<\w+>\((\d+)\)")
_K_CT = re.compile(r"get_compile_time_arg_val\((\d+)\)")
_K_SEM = re.compile(r"constexpr uint32_t (sem_\w+) = get_compile_time_arg_val\((\d+)\)")
_K_PAGES = re.compile(r"cb_(?:wait_front|reserve_back|push_back|pop_front)\((cb_\w+), (\d+)\)")


def _split_args(text: str) -> list[str]:
    """Top-level comma-separated items of a brace list's inside."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _err(file: str, line: int, msg: str) -> EmitError:
    return EmitError(f"{file}:{line}: {msg}", location=(file, line, 1))


def validate(files: dict[str, str], *, l1_bytes: int) -> None:
    """Raises :class:`EmitError` on the first inconsistency of ``files`` (see the module docstring)."""
    host_name = "host.cpp"
    if host_name not in files:
        raise EmitError("the Metalium file set has no host.cpp")
    host = files[host_name].splitlines()
    cbs: dict[int, tuple[int, int, int]] = {}        # index -> (total, page, line)
    cb_names: dict[str, int] = {}
    sems: dict[str, int] = {}
    kernels: dict[str, tuple[str, str, int]] = {}    # handle -> (file, ct vector, line)
    vectors: dict[str, list[str]] = {}
    runtime: dict[str, tuple[int, int]] = {}          # handle -> (count, line)
    pending_name = None
    total = 0
    for n, line in enumerate(host, 1):
        m = _CB_COMMENT.match(line)
        if m:
            pending_name = m.group(1)
        m = _CB_CREATE.search(line)
        if m:
            tot, idx, idx2, page = (int(g) for g in m.groups())
            if idx != idx2:
                raise _err(host_name, n, f"CB c_{idx} sets the page size of c_{idx2}")
            if not 0 <= idx < MAX_CBS:
                raise _err(host_name, n, f"CB index {idx} outside 0..{MAX_CBS - 1}")
            if idx in cbs:
                raise _err(host_name, n, f"CB c_{idx} is created twice (first on line {cbs[idx][2]})")
            if page <= 0 or tot % page:
                raise _err(host_name, n, f"CB c_{idx}: {tot} B is not a whole number of {page} B pages")
            cbs[idx] = (tot, page, n)
            total += tot
            if total > l1_bytes:
                raise _err(host_name, n, f"circular buffers need {total} B per core, more than the {l1_bytes} B "
                                         f"of L1 left for programs")
            if pending_name:
                cb_names[pending_name] = idx
                pending_name = None
        m = _SEM.search(line)
        if m:
            sems[m.group(1)] = n
            if len(sems) > NUM_SEMAPHORES:
                raise _err(host_name, n, f"{len(sems)} semaphores; at most {NUM_SEMAPHORES} per core")
        m = _CT_VEC.search(line)
        if m:
            vectors[m.group(1)] = _split_args(m.group(2))
        m = _KERNEL.search(line)
        if m:
            kernels[m.group(1)] = (m.group(2), m.group(3), n)
        m = _SET_RT.search(line)
        if m:
            count = len(_split_args(m.group(2)))
            if count > MAX_RUNTIME_ARGS:
                raise _err(host_name, n, f"{count} runtime args for {m.group(1)}; at most {MAX_RUNTIME_ARGS}")
            if m.group(1) not in kernels:
                raise _err(host_name, n, f"runtime args for {m.group(1)}, which is not a kernel created before")
            runtime[m.group(1)] = (count, n)
    for handle, (path, vec, n) in kernels.items():
        if path not in files:
            raise _err(host_name, n, f"kernel {handle} is {path}, which is not in the file set")
        if vec not in vectors:
            raise _err(host_name, n, f"kernel {handle}: compile-args vector {vec} is not defined")
        if handle not in runtime:
            raise _err(host_name, n, f"kernel {handle} gets no runtime args")
        _check_kernel(path, files[path], cbs, cb_names, vectors[vec], sems, runtime[handle][0], handle)


def _check_kernel(path, text, cbs, cb_names, ct, sems, n_rt, handle) -> None:
    read = {}
    declared = {}
    for n, line in enumerate(text.splitlines(), 1):
        for m in _K_CB.finditer(line):
            name, idx = m.group(1), int(m.group(2))
            if idx not in cbs:
                raise _err(path, n, f"{name} is CB c_{idx}, which the host does not create")
            if name in cb_names and cb_names[name] != idx:
                raise _err(path, n, f"{name} is CB c_{idx} here but c_{cb_names[name]} in host.cpp")
            declared[name] = idx
        for m in _K_PAGES.finditer(line):
            name, k = m.group(1), int(m.group(2))
            if name in declared:
                tot, page, _ = cbs[declared[name]]
                if k > tot // page:
                    raise _err(path, n, f"{m.group(0)}: {name} holds {tot // page} page(s)")
        for m in _K_ARG.finditer(line):
            i = int(m.group(1))
            read.setdefault(i, n)
            if i >= n_rt:
                raise _err(path, n, f"reads runtime arg {i}, but the host sets {n_rt} for {handle}")
        for m in _K_CT.finditer(line):
            if int(m.group(1)) >= len(ct):
                raise _err(path, n, f"reads compile-time arg {m.group(1)}, but {handle} gets {len(ct)}")
        for m in _K_SEM.finditer(line):
            name, i = m.group(1), int(m.group(2))
            if i >= len(ct) or ct[i] not in sems:
                raise _err(path, n, f"{name} is compile-time arg {i}, which is not a semaphore the host created")
            if ct[i] != name:
                raise _err(path, n, f"{name} is compile-time arg {i}, which the host fills with {ct[i]}")
    missing = sorted(set(range(n_rt)) - set(read))
    if missing:
        raise _err(path, 1, f"the host sets {n_rt} runtime args for {handle}, the kernel never reads {missing}")


def validate_dir(out: Path, *, l1_bytes: int) -> None:
    """:func:`validate` on a directory written by :func:`mica.emit_metalium.emit`."""
    out = Path(out)
    files = {str(p.relative_to(out)): p.read_text() for p in out.rglob("*") if p.suffix in (".cpp", ".h")}
    validate(files, l1_bytes=l1_bytes)
