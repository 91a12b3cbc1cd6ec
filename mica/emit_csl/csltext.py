"""Small CSL text helpers shared by the layout and PE renderers: rectangle tests, loop-variable
expressions, direction names, and the arithmetic helpers every generated file defines.

Public API: :func:`lin_csl`, :func:`rect_test`, :func:`box_test`, :data:`DIR`, :data:`HELPERS`,
:data:`FLOAT_HELPERS`, :data:`INT_HELPERS`.
"""

from __future__ import annotations

from ..meshir import ir
from .plan import Box

DIR = {"RAMP": "RAMP", "N": "NORTH", "E": "EAST", "S": "SOUTH", "W": "WEST"}

HELPERS = """\
fn imin(a: i32, b: i32) i32 { if (a < b) { return a; } return b; }
fn imax(a: i32, b: i32) i32 { if (a > b) { return a; } return b; }
// quotient and remainder of a >= 0 by b > 0 (unsigned arithmetic: no signed division needed)
fn udiv(a: i32, b: i32) i32 { return @as(i32, @as(u32, a) / @as(u32, b)); }
fn urem(a: i32, b: i32) i32 { return @as(i32, @as(u32, a) % @as(u32, b)); }
// floor(a / b) and a mod b in [0, b), for b > 0 and any a
fn floord(a: i32, b: i32) i32 { if (a >= 0) { return udiv(a, b); } return -udiv(b - 1 - a, b); }
fn pmod(a: i32, m: i32) i32 { if (a >= 0) { return urem(a, m); } const r: i32 = urem(-a, m); if (r == 0) { return 0; } return m - r; }
fn in_box(x: i32, y: i32, x0: i32, x1: i32, xs: i32, y0: i32, y1: i32, ys: i32) bool {
  return x >= x0 and x < x1 and pmod(x - x0, xs) == 0 and y >= y0 and y < y1 and pmod(y - y0, ys) == 0;
}"""


#: C's truncating ``/`` and ``%`` on ``i32`` (the quotient rounded toward zero, the remainder taking the
#: dividend's sign), defined by a PE program whose kernels divide integers (:data:`mica.codeprint.CSL`'s
#: ``int_div``; a zero divisor is the caller's undefined behaviour, as in C), and C's conversions to ``i8``,
#: ``u8`` and ``i16`` (two's complement wrap), whose arrays CSL holds widened in ``i32`` words.
INT_HELPERS = """\
fn iabs(a: i32) i32 { if (a < 0) { return -a; } return a; }
fn cdiv(a: i32, b: i32) i32 { const q: i32 = udiv(iabs(a), iabs(b)); if ((a < 0 and b > 0) or (a >= 0 and b < 0)) { return -q; } return q; }
fn cmod(a: i32, b: i32) i32 { return a - cdiv(a, b) * b; }
// C's conversion of an int to the narrow integer types, whose arrays are held widened in i32 words
fn wrap_i8(a: i32) i32 { return ((a + 128) & 255) - 128; }
fn wrap_u8(a: i32) i32 { return a & 255; }
fn wrap_i16(a: i32) i32 { return ((a + 32768) & 65535) - 32768; }"""


#: C's ``fmaxf`` / ``fminf`` per CSL float type (the other operand when one is a NaN) and ``fabsf`` (the sign
#: bit cleared through the same-sized unsigned type), defined by a PE program whose kernels call one
#: (:data:`.kernels.OWN`).
FLOAT_HELPERS = "\n".join(
    [f"fn mica_{fn}_{ty}(a: {ty}, b: {ty}) {ty} {{ if (b != b or a {cmp} b) {{ return a; }} return b; }}"
     for ty in ("f32", "f16") for fn, cmp in (("fmax", ">="), ("fmin", "<="))]
    + [f"fn mica_fabs_{ty}(a: {ty}) {ty} {{ return @bitcast({ty}, @bitcast({uty}, a) & @as({uty}, {mask})); }}"
       for ty, uty, mask in (("f32", "u32", 0x7FFFFFFF), ("f16", "u16", 0x7FFF))])


def lin_csl(v: ir.Lin, slots: dict[str, int]) -> str:
    """A MeshIR affine value over loop variables, as CSL over the loop-variable array ``lv``; with a divisor
    (:attr:`ir.Lin.div`, the block of a step loop), its floor quotient (``floord``)."""
    parts = []
    for var, c in v.terms:
        term = f"lv[{slots[var]}]"
        parts.append(term if c == 1 else f"{c} * {term}")
    if v.const or not parts:
        parts.append(str(v.const))
    text = "(" + " + ".join(parts) + ")"
    return f"floord{text[:-1]}, {v.div})" if v.div != 1 else text


def rect_test(r: ir.Rect, slots: dict[str, int]) -> str:
    """CSL condition: core (px, py) lies in ``r`` at the current loop values."""
    conds = []
    for b in r.x0:
        conds.append(f"px >= {lin_csl(b, slots)}")
    for b in r.x1:
        conds.append(f"px < {lin_csl(b, slots)}")
    for b in r.y0:
        conds.append(f"py >= {lin_csl(b, slots)}")
    for b in r.y1:
        conds.append(f"py < {lin_csl(b, slots)}")
    if r.xs != 1:
        conds.append(f"pmod(px - {lin_csl(r.xp, slots)}, {r.xs}) == 0")
    if r.ys != 1:
        conds.append(f"pmod(py - {lin_csl(r.yp, slots)}, {r.ys}) == 0")
    return " and ".join(conds)


def box_test(b: Box, x: str = "px", y: str = "py") -> str:
    return f"in_box({x}, {y}, {b.x0}, {b.x1}, {b.xs}, {b.y0}, {b.y1}, {b.ys})"
