"""Softmax with its max subtraction, decode attention over a KV cache (also with the online softmax's pair
combined across cores) and causal prefill attention, emitted as CSL and executed: ``-INFINITY`` (the running max's start, the causal mask) is a bit cast of its IEEE pattern,
``expf`` is ``<math>``'s ``exp_f32`` and ``fmaxf`` the PE program's own helper (C's NaN rule). The interpreter
runs the emitted files on every core; the results must match run.py's reference and the emulator's."""

import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.emit_csl import render

from .test_csl_execution import execute

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from native.test_minmax_programs import ATTENTION, PREFILL, SOFTMAX  # noqa: E402
from native.test_online_softmax import ONLINE_ATTENTION  # noqa: E402

PROGRAMS = {"softmax": (SOFTMAX, {"N": 6, "M": 12}), "attention": (ATTENTION, {"H": 2, "L": 12, "D": 4}),
            "prefill": (PREFILL, {"H": 1, "T": 8, "D": 4}), "online": (ONLINE_ATTENTION, {"H": 2, "L": 12, "D": 4})}


@lru_cache(maxsize=None)
def _compiled(name: str, mesh: tuple[int, int]):
    src, params = PROGRAMS[name]
    return mica.compile_affine(from_c(src, "attention" if name == "online" else name, params=params), mesh=mesh)


@pytest.mark.parametrize("name, mesh", [("softmax", (4, 4)), ("attention", (3, 2)), ("prefill", (4, 4)),
                                        ("online", (4, 4)),
                                        pytest.param("softmax", (3, 2), marks=pytest.mark.slow),
                                        pytest.param("attention", (4, 4), marks=pytest.mark.slow),
                                        pytest.param("prefill", (3, 2), marks=pytest.mark.slow)])
def test_softmax_and_attention_execute_as_csl(name, mesh):
    compiled = _compiled(name, mesh)
    files = render(compiled)                        # validates and syntax-checks
    text, ir = files["pe_program.csl"], compiled.meshir
    assert "math_lib.exp_f32(" in text
    if name == "online":        # the (running max, rescaled sum) partials combine across cores in the CSL
        assert "online softmax's (running max, rescaled sum) pair" in compiled.explain()
    # INFINITY (0x7f800000, negated) or -INFINITY (0xff800000)
    assert ("@bitcast(f32, @as(u32, " in text) == ("inf" in ir)
    assert ("mica_fmax_f32(" in text) == ("fmax(" in ir)
    rng = np.random.default_rng(3)
    arrays = {a.name: (rng.uniform(-2.0, 2.0, a.shape).astype(np.float32) if a.name in compiled.program.inputs
                       else np.zeros(a.shape, np.float32)) for a in compiled.program.arrays}
    got, want = execute(compiled, files, arrays=arrays)
    emulated = compiled.run({k: v for k, v in arrays.items() if k in compiled.program.inputs}, threads=1).outputs
    assert got
    for k, v in got.items():
        np.testing.assert_allclose(v, want[k], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(v, emulated[k].reshape(v.shape), rtol=1e-6, atol=1e-7)
