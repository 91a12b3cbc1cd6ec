"""Structure of the generated C: one function per region class, constant trip counts on full tiles."""

import re

import mica
from mica.emit_c.kernels import emit_kernel_module


def test_one_function_per_class_and_a_table():
    p = mica.compile_affine(mica.ops.matmul(100, 37, 53), mesh=(7, 5), search=False)
    km = p.kernel_module
    assert km.names == ("k_S0_0", "k_S0_1", "k_S1_0", "k_S1_1")
    assert set(p.kernels) == set(km.names)
    assert "int32_t mica_kernel_count(void) { return 4; }" in km.source


def test_full_tile_class_has_constant_bounds_and_unit_stride_inner_loop():
    p = mica.compile_affine(mica.ops.matmul(64, 64, 64), mesh=(4, 4), search=False)
    plain = emit_kernel_module(p.mesh_program, blocked=False)
    src = dict(plain.sources)["k_S1_0"]
    loops = re.findall(r"for \(int64_t (c\d) = ([^;]*); ([^;]*);", src)
    assert len(loops) == 3
    assert all("mica_min" not in cond for _, _, cond in loops)       # 16x16x16 tiles, no clamping
    # The innermost loop runs over j (the unit-stride dimension of C and B_recv).
    assert "const int64_t i_j = c2;" in src


def test_partial_class_has_its_own_extent():
    p = mica.compile_affine(mica.ops.matmul(100, 37, 53), mesh=(7, 5), search=False)
    # Column 6 of cores holds a single column of C (37 = 6*6 + 1): j is the constant 36.
    assert "const int64_t i_j = 36LL;" in dict(emit_kernel_module(p.mesh_program, blocked=False).sources)["k_S1_1"]
    assert "lo_j = 36LL, n_j = (36LL + 1LL) - lo_j;" in p.kernels["k_S1_1"]


def test_no_user_text_reaches_the_c_source():
    p = mica.compile_affine(mica.ops.scaled_add((5, 5)), mesh=(2, 2), search=False)
    src = p.kernel_module.source
    assert "alpha" not in src                      # scalars are read by index
    assert re.search(r"scalars\[0\]", src)


def test_contraction_class_calls_the_blocked_micro_kernel():
    p = mica.compile_affine(mica.ops.matmul(64, 64, 64), mesh=(4, 4), search=False)
    src = p.kernels["k_S1_0"]
    assert "mica_contract_f32_add(" in src and "for (int64_t c" not in src
    assert "mica_uk_f32_add" in p.kernel_module.source
    # The initialisation C = 0 is no contraction: its class stays a plain loop nest.
    assert "mica_contract" not in p.kernels["k_S0_0"]
