"""C preprocessing in the front end: ``#define``, ``#include "..."``, ``#if``, ``-D``-style ``defines`` and
include directories, through the system preprocessor; errors point at the file and line that were written.
Every compiled program is checked against the same C compiled natively (with the same defines)."""

import numpy as np
import pytest

import mica
from mica.affine.c_preprocess import needs_preprocessing, preprocess_text
from mica.affine.from_c import from_c
from mica.errors import AffineError, NotAffineError
from mica.testing import assert_matches, run_c, run_program

KERNEL = """#include <math.h>
#include "twice.h"
#ifndef N
#define N 24
#endif
#define M (N / 2 + 1)

/* B = 2 A + sqrt(|A|) over an N x M grid */
void scale(float A[N][M], float B[N][M]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++)
      B[i][j] = TWICE(A[i][j]) + sqrtf(fabsf(A[i][j]));
}
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "twice.h").write_text("#define TWICE(x) (2.0f * (x))\n")
    src = tmp_path / "scale.c"
    src.write_text(KERNEL)
    return tmp_path, src


@pytest.mark.parametrize("defines, n", [({}, 24), ({"N": 10}, 10), ({"N": "7"}, 7)])
def test_defines_and_includes_compile_and_match_native_c(files, defines, n):
    root, src = files
    kw = dict(filename=str(src), defines=defines, include_dirs=[str(root / "inc")])
    prog = from_c(src.read_text(), **kw)
    m = n // 2 + 1
    assert [a.shape for a in prog.arrays] == [(n, m), (n, m)]
    A = np.random.default_rng(n).standard_normal((n, m)).astype(np.float32)
    want = run_c(src.read_text(), None, {"A": A}, **kw)
    got = mica.compile_affine(prog, mesh=(3, 2)).run({"A": A}).outputs
    assert_matches(got, want, rtol=1e-6)


def test_the_source_directory_is_searched_for_quoted_includes(files):
    root, src = files
    (root / "twice.h").write_text("#define TWICE(x) (3.0f * (x))\n")       # beside the source: found first
    prog = from_c(src.read_text(), filename=str(src))
    A = np.random.default_rng(1).standard_normal((24, 13)).astype(np.float32)
    got = run_program(prog, {"A": A})["B"]
    np.testing.assert_allclose(got, 3 * A + np.sqrt(np.abs(A)), rtol=1e-6)


def test_errors_point_at_the_line_written_not_the_preprocessed_one(tmp_path):
    (tmp_path / "h.h").write_text("\n\n#define ROWS 8\nstatic float helper(float x) { return x; }\n")
    src = tmp_path / "bad.c"
    src.write_text('#include <math.h>\n#include "h.h"\n#define N 8\n\nvoid f(float A[ROWS][N]) {\n'
                   "  for (int i = 0; i < N; i++)\n    for (int j = 0; j < N; j++)\n      A[i][j] = A[i * j][j];\n}\n")
    with pytest.raises(NotAffineError) as info:
        from_c(src.read_text(), filename=str(src))
    assert info.value.location[:2] == (str(src), 8)
    assert str(info.value).startswith(f"{src}:8:")
    # the header's function does not count as one of the source's: function=None still finds f
    assert from_c(src.read_text().replace("A[i * j][j]", "A[i][j] + 1"), filename=str(src)).name == "f"


def test_preprocessor_errors_name_the_file_and_line(tmp_path):
    src = tmp_path / "missing.c"
    src.write_text('#define N 4\n\n#include "nothere.h"\nvoid f(float A[N]) { A[0] = 1; }\n')
    with pytest.raises(AffineError, match=r"missing.c:3:\d+: the C preprocessor refused the source: .*nothere.h"):
        from_c(src.read_text(), filename=str(src))
    with pytest.raises(AffineError, match=r"x.c:2:\d+: the C preprocessor refused .*size must be given"):
        from_c('#ifndef N\n#error size must be given\n#endif\nvoid f(float A[N]) { A[0] = 1; }\n', filename="x.c")


def test_several_functions_need_a_name_and_get_listed():
    src = "#define N 4\nvoid f(float A[N]) { A[0] = 1; }\nvoid g(float A[N]) { A[0] = 2; }\n"
    with pytest.raises(AffineError, match=r"x.c:3:6: the source defines 2 functions \(f, g\)"):
        from_c(src, filename="x.c")
    assert from_c(src, "g", filename="x.c").name == "g"


def test_bad_defines_are_refused_by_name():
    with pytest.raises(AffineError, match="macro name must be a C identifier"):
        from_c("void f(float A[4]) { A[0] = 1; }", defines={"2N": 3})
    with pytest.raises(AffineError, match="need preprocess=True"):
        from_c("void f(float A[4]) { A[0] = 1; }", defines={"N": 3}, preprocess=False)


def test_which_text_needs_the_preprocessor():
    assert not needs_preprocessing('#pragma scop\n# 1 "k.c"\n#include <math.h>\nint x;')
    for text in ("#define N 3", '#include "a.h"', "  #  ifdef X", "#if 0\n#endif", "#undef N"):
        assert needs_preprocessing(text), text


def test_line_origins_are_traced_through_includes(tmp_path):
    (tmp_path / "two.h").write_text("int a;\nint b;\n")
    pre = preprocess_text('int x;\n#include "two.h"\nint y;\n', str(tmp_path / "m.c"))
    where = {ln.strip(): pre.origin(k + 1) for k, ln in enumerate(pre.text.split("\n")) if ln.strip()}
    assert where["int x;"] == (str(tmp_path / "m.c"), 1)
    assert where["int a;"][1] == 1 and where["int a;"][0].endswith("two.h")
    assert where["int b;"][1] == 2
    assert where["int y;"] == (str(tmp_path / "m.c"), 3)
