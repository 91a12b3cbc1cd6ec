"""The structural validator catches each kind of inconsistency in an emitted file set, naming file and line."""

from __future__ import annotations

import re

import pytest

from mica.emit_metalium.validate import validate
from mica.errors import EmitError

from .programs import GOLDEN, rendered

L1 = 1499136 - 100 * 1024


@pytest.mark.parametrize("name", GOLDEN)
def test_emitted_sets_pass(name):
    validate(rendered(name), l1_bytes=L1)


def _fails(files, match):
    with pytest.raises(EmitError, match=match) as info:
        validate(files, l1_bytes=L1)
    return info.value


def _edit(name, path, old, new, count=1):
    files = dict(rendered(name))
    assert old in files[path], (path, old)
    files[path] = files[path].replace(old, new, count)
    return files


def test_a_kernel_naming_another_cb_index_than_the_host():
    files = dict(rendered("matmul_summa_wormhole"))
    path = "kernels/compute_c0.cpp"
    files[path] = re.sub(r"constexpr uint32_t cb_A_recv = \d+;", "constexpr uint32_t cb_A_recv = 30;", files[path])
    err = _fails(files, r"kernels/compute_c0.cpp:\d+: cb_A_recv is CB c_30, which the host does not create")
    assert err.filename == "kernels/compute_c0.cpp" and err.line > 1


def test_a_cb_index_swapped_between_host_and_kernel():
    text = rendered("matmul_summa_wormhole")["kernels/reader_c0.cpp"]
    a = re.search(r"constexpr uint32_t cb_A = (\d+);", text).group(1)
    b = re.search(r"constexpr uint32_t cb_B = (\d+);", text).group(1)
    files = _edit("matmul_summa_wormhole", "kernels/reader_c0.cpp", f"cb_A = {a};", f"cb_A = {b};")
    _fails(files, r"reader_c0.cpp:\d+: cb_A is CB c_\d+ here but c_\d+ in host.cpp")


def test_waiting_for_more_pages_than_a_cb_holds():
    files = _edit("gemv_ktree_wormhole", "kernels/compute_c3.cpp", "cb_wait_front(cb_A, 1);", "cb_wait_front(cb_A, 2);")
    _fails(files, r"compute_c3.cpp:\d+: cb_wait_front\(cb_A, 2\): cb_A holds 1 page")


def test_buffers_that_do_not_fit_l1():
    files = rendered("matmul_partial_wormhole")
    with pytest.raises(EmitError, match=r"host.cpp:\d+: circular buffers need \d+ B per core, more than the 50000 B"):
        validate(files, l1_bytes=50000)


def test_host_setting_fewer_runtime_args_than_the_kernel_reads():
    text = rendered("gemv_ktree_wormhole")["host.cpp"]
    line = next(ln for ln in text.splitlines() if "SetRuntimeArgs(program, reader_c1" in ln)
    files = _edit("gemv_ktree_wormhole", "host.cpp", line, re.sub(r", noc_y\[3\]\}", "}", line))
    _fails(files, r"kernels/reader_c1.cpp:\d+: reads runtime arg \d+, but the host sets \d+ for reader_c1")


def test_host_setting_more_runtime_args_than_the_kernel_reads():
    files = _edit("matmul_summa_wormhole", "host.cpp", "SetRuntimeArgs(program, compute_c0, core, {(uint32_t)core.x, ",
                  "SetRuntimeArgs(program, compute_c0, core, {7, (uint32_t)core.x, ")
    _fails(files, r"compute_c0.cpp:1: the host sets 3 runtime args for compute_c0, the kernel never reads \[2\]")


def test_a_semaphore_the_host_never_created():
    text = rendered("matmul_summa_wormhole")["host.cpp"]
    line = next(ln for ln in text.splitlines() if "CreateSemaphore" in ln and "valid" in ln)
    files = _edit("matmul_summa_wormhole", "host.cpp", line + "\n", "")
    _fails(files, r"reader_c0.cpp:\d+: sem_\w+_valid is compile-time arg \d+, which is not a semaphore the host created")


def test_compile_time_args_in_the_wrong_order():
    text = rendered("matmul_interleaved_wormhole")["host.cpp"]
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("std::vector<uint32_t> reader_c0_ct"))
    inside = line[line.index("{") + 1:line.rindex("}")].split(", ")
    swapped = line.replace(", ".join(inside), ", ".join([inside[1], inside[0]] + inside[2:]))
    files = _edit("matmul_interleaved_wormhole", "host.cpp", line, swapped)
    _fails(files, r"reader_c0.cpp:\d+: sem_\w+ is compile-time arg 0, which the host fills with sem_\w+")


def test_too_many_semaphores():
    text = rendered("mm2_wormhole")["host.cpp"]
    line = next(ln for ln in text.splitlines() if "CreateSemaphore" in ln)
    files = _edit("mm2_wormhole", "host.cpp", line, line + "\n" + line.replace("const uint32_t sem_", "const uint32_t sem_extra_"))
    _fails(files, r"host.cpp:\d+: 9 semaphores; at most 8 per core")


def test_a_kernel_file_missing_from_the_set():
    files = dict(rendered("matmul_summa_wormhole"))
    del files["kernels/writer_c0.cpp"]
    _fails(files, r"host.cpp:\d+: kernel writer_c0 is kernels/writer_c0.cpp, which is not in the file set")
