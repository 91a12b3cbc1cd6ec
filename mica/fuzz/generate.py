"""The program generator: random C functions in the affine subset ``from_c`` accepts, in bounds by
construction, with a random mesh and thread count (:class:`FuzzCase`, :func:`generate`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .choices import Chooser, RandomChooser, ReplayChooser, _HypothesisChooser
from .items import _Loop, _Stmt
from .shapes import NESTS, argpair_stmts, iterator_value, minmax

TARGET = "wormhole"
MAX_EXTENT = 12                 # every array dimension is at most this long
MESH_W, MESH_H = 6, 5           # meshes 1x1 .. 6x5
_MESH_WIDTHS = (2, 1, 3, 4, 5, 6)


@dataclass(frozen=True)
class FuzzCase:
    """One random program and where it runs."""

    source: str
    params: dict
    mesh: tuple[int, int]
    threads: int = 2
    target: str = TARGET
    dtype: str = "f64"
    data: str = "uniform"       # the inputs: "uniform" in [0.5, 1.5) or "small-int" (0..3: ties happen)
    choices: tuple[int, ...] = field(default=(), compare=False)

    def header(self) -> str:
        return (f"mesh={self.mesh[0]}x{self.mesh[1]} target={self.target} params={self.params} "
                f"threads={self.threads} dtype={self.dtype}" + (f" data={self.data}" if self.data != "uniform" else ""))


ARRAY_NAMES = ("A", "B", "C", "D", "E", "F")
LOOP_VARS = ("i", "j", "k", "l")
SCALARS = ("alpha", "beta")


class _Gen:
    def __init__(self, ch: Chooser, max_size: int):
        self.ch = ch
        self.dtype = "float" if ch.draw(3) == 2 else "double"
        if self.dtype == "float" and ch.coin(0.35):
            self.dtype = "int"          # int32 arrays: + - and integer / only (no overflow), small-int data
        self.sizes = {"n": ch.between(2, max_size), "m": ch.between(2, max_size)}
        self.loops_left = 1 + ch.draw(4)
        self.stmts_left = 1 + ch.draw(4)
        self.ranks: dict[str, int] = {}                 # array -> rank, in order of first use
        self.ranges: dict[str, list[list[int]]] = {}    # array -> per dim [min, max] index used
        self.scalars_used: set[str] = set()
        self.decl_in_for = ch.coin(0.3)
        self.fors = 0                                   # loops written so far (at most 4)
        self.avoid: set[str] = set()                    # arrays a shape reserved: not read by its expressions
        self.decls: list[str] = []                      # C locals declared at the top of the function
        self.small_ints = False                         # the program needs small-integer data (arg pairs)

    def fresh(self, k: int) -> list[str] | None:
        """``k`` array names not used yet, reserved (kept out of expressions until the shape is done)."""
        names = [a for a in ARRAY_NAMES if a not in self.ranks and a not in self.avoid][:k]
        if len(names) < k:
            return None
        self.avoid |= set(names)
        return names

    def mark(self, name: str, ranges: list[list[int]]) -> None:
        """Records that ``name`` (rank ``len(ranges)``) is accessed over ``ranges`` (per dim [lo, hi])."""
        if name not in self.ranks:
            self.ranks[name] = len(ranges)
            self.ranges[name] = [[MAX_EXTENT, 0] for _ in ranges]
        for r, (lo, hi) in zip(self.ranges[name], ranges):
            r[0], r[1] = min(r[0], lo), max(r[1], hi)

    # -- loops ------------------------------------------------------------------------------------------
    def size_text(self) -> tuple[str, int]:
        k = self.ch.draw(3)
        if k == 0:
            return "n", self.sizes["n"]
        if k == 1:
            return "m", self.sizes["m"]
        c = self.ch.between(2, 8)
        return str(c), c

    def loop(self, scope: list[_Loop], down: bool = True) -> _Loop | None:
        ch = self.ch
        var = LOOP_VARS[len(scope)]
        N, nv = self.size_text()
        forms = [("0", N, 0, nv - 1), ("1", N, 1, nv - 1), ("0", f"{N} - 1", 0, nv - 2)]
        if scope:
            u = scope[ch.draw(len(scope))]
            forms += [("0", f"{u.var} + 1", 0, u.hi),                      # j <= i
                      (u.var, N, u.lo, nv - 1),                           # j = i .. N-1
                      (f"{u.var} + 1", N, u.lo + 1, nv - 1),              # j = i+1 .. N-1
                      ("0", u.var, 0, u.hi - 1),                          # j < i
                      (u.var, f"({u.var} + 2 < {N} ? {u.var} + 2 : {N})", u.lo, min(u.hi + 1, nv - 1))]
        lo_t, ub_t, lo, hi = forms[ch.draw(len(forms))]
        if lo > hi:
            lo_t, ub_t, lo, hi = forms[0]
        v = var
        decl = f"int {v}" if self.decl_in_for else v
        if down and ch.coin(0.25):                         # downwards
            start = ub_t[:-4] if ub_t.endswith(" + 1") else f"{ub_t} - 1"
            header = f"for ({decl} = {start}; {v} >= {lo_t}; {v}--)"
        elif ch.coin(0.3):                                 # inclusive upper bound
            last = ub_t[:-4] if ub_t.endswith(" + 1") else f"{ub_t} - 1"
            header = f"for ({decl} = {lo_t}; {v} <= {last}; {v}++)"
        else:
            header = f"for ({decl} = {lo_t}; {v} < {ub_t}; {ch.choice(['++' + v, v + '++', v + ' += 1'])})"
        return _Loop(var, lo, hi, header)

    # -- accesses ---------------------------------------------------------------------------------------
    def subscript(self, scope: list[_Loop], v: _Loop | None) -> tuple[str, int, int]:
        """An affine subscript over the loops in scope, mostly of ``v``, with its index range [lo, hi]
        (within bounds)."""
        ch = self.ch
        top = MAX_EXTENT - 1
        if not scope or ch.coin(0.08):
            c = ch.draw(3)
            return str(c), c, c
        if v is None or ch.coin(0.2):
            v = scope[ch.draw(len(scope))]
        kind = ch.draw(10)
        if kind >= 6:
            off = ch.choice([1, -1, 2])
            if v.lo + off >= 0 and v.hi + off <= top:
                return (f"{v.var} + {off}" if off > 0 else f"{v.var} - {-off}"), v.lo + off, v.hi + off
        if kind == 5:                                       # reversed
            k = v.hi + ch.draw(2)
            if k <= top:
                return f"{k} - {v.var}", k - v.hi, k - v.lo
        if kind == 4 and len(scope) > 1:                    # sum of two iterators
            u = scope[ch.draw(len(scope))]
            if u is not v and u.hi + v.hi <= top:
                return f"{u.var} + {v.var}", u.lo + v.lo, u.hi + v.hi
        if kind == 3 and 2 * v.hi <= top:                   # strided
            return f"2 * {v.var}", 2 * v.lo, 2 * v.hi
        return v.var, v.lo, v.hi

    def access(self, scope: list[_Loop], name: str | None = None) -> str:
        ch = self.ch
        if name is None:
            fresh = [a for a in ARRAY_NAMES if a not in self.ranks and a not in self.avoid]
            used = [a for a in self.ranks if a not in self.avoid]
            if fresh and (not used or ch.coin(0.35)):
                name = fresh[0]
            else:
                name = ch.choice(used)
        if name not in self.ranks:
            self.ranks[name] = 1 + ch.draw(3) if not scope or ch.coin(0.4) else min(len(scope), 3)
            self.ranges[name] = [[MAX_EXTENT, 0] for _ in range(self.ranks[name])]
        subs = []
        rank = self.ranks[name]
        order = list(scope[-rank:])             # the innermost loops, in order, like most code
        if len(order) > 1 and ch.coin(0.3):     # transposed
            order = order[1:] + order[:1]
        for d in range(self.ranks[name]):
            text, lo, hi = self.subscript(scope, order[d] if d < len(order) else None)
            r = self.ranges[name][d]
            r[0], r[1] = min(r[0], lo), max(r[1], hi)
            subs.append(text)
        return name + "".join(f"[{s}]" for s in subs)

    # -- expressions and statements ---------------------------------------------------------------------
    def literal(self) -> str:
        if self.dtype == "int":
            return self.ch.choice(["1", "2", "3", "0"])
        v = self.ch.choice(["0.5", "2.0", "1.5", "0.25"])
        return v + ("f" if self.dtype == "float" else "")

    def term(self, scope) -> str:
        ch = self.ch
        if scope and ch.coin(0.05):
            return iterator_value(self, scope)
        k = ch.draw(10)
        if k == 8 and self.dtype != "int":
            s = ch.choice(SCALARS)
            self.scalars_used.add(s)
            return s
        if k == 9:
            return self.literal()
        return self.access(scope)

    def expr(self, scope, depth: int = 0) -> str:
        ch = self.ch
        e = self.term(scope)
        for _ in range(ch.draw(3)):
            ops = ["+", "-"] if self.dtype == "int" else ["+", "*"] + (["-"] if self.dtype == "double" else [])
            op = ch.choice(ops)
            rhs = self.term(scope) if depth >= 1 or not ch.coin(0.2) else f"({self.expr(scope, depth + 1)})"
            e = f"{e} {op} {rhs}"
        k = ch.draw(12)
        f = "f" if self.dtype == "float" else ""
        if k == 11 and self.dtype != "int":
            e = f"fmax{f}({e}, {self.term(scope)})"
        elif k == 10 and self.dtype == "int":
            e = f"({e}) / 2"
        elif k == 10:
            e = f"({e}) / {'2.0' if not f else '2.0f'}"
        elif k == 9 and self.dtype == "double":
            e = f"fabs({e})"
        return e

    def stmt(self, scope) -> _Stmt:
        ch = self.ch
        lhs = self.access(scope)
        if ch.coin(0.1):                                # a max/min update (a reduction if lhs drops a loop)
            return _Stmt(lhs, "=", minmax(self, ch.choice(["max", "min"]), lhs, self.expr(scope)))
        op = ch.choice(["=", "+=", "="] + (["-="] if self.dtype != "float" else []))
        return _Stmt(lhs, op, self.expr(scope))

    # -- structure --------------------------------------------------------------------------------------
    def block(self, scope: list[_Loop], depth: int) -> list:
        ch = self.ch
        items = []
        for _ in range(1 + ch.draw(3 if depth == 0 else 2)):
            if self.loops_left and self.fors < 4 and len(scope) < 4 and (not scope or ch.coin(0.45)):
                self.loops_left -= 1
                self.fors += 1
                lp = self.loop(scope)
                lp.body = self.block(scope + [lp], depth + 1)
                if lp.body:
                    items.append(lp)
            elif self.stmts_left >= 2 and scope and ch.coin(0.06) and (pair := argpair_stmts(self, scope)):
                self.stmts_left -= 2
                items += pair
            elif self.stmts_left and (scope or ch.coin(0.1)):
                self.stmts_left -= 1
                items.append(self.stmt(scope))
        return items

    def render(self, items, pad: str) -> list[str]:
        out = []
        for it in items:
            if isinstance(it, _Loop):
                if len(it.body) == 1 and self.ch.coin(0.5):
                    out.append(pad + it.header)
                    out += self.render(it.body, pad + "  ")
                else:
                    out.append(pad + it.header + " {")
                    out += self.render(it.body, pad + "  ")
                    out.append(pad + "}")
            else:
                out.append(f"{pad}{it.lhs} {it.op} {it.rhs};")
        return out

    def nest(self) -> list:
        """One of the shapes of :mod:`mica.fuzz.shapes` (or none), as top-level items."""
        items = None
        for make in NESTS:              # one coin each (steadier under hypothesis than one draw among them)
            if self.ch.coin(0.12 if make is not NESTS[-1] else 0.2):     # (the last added: as often as the others)
                items = make(self)
                break
        self.avoid.clear()
        return items or []

    def program(self) -> str:
        nest = self.nest()
        if nest:                        # a shape and a little random code around it
            self.loops_left = min(self.loops_left, 4 - self.fors, int(self.ch.coin(0.2)))
            self.stmts_left = min(self.stmts_left, 1)
        items = self.block([], 0)
        if not nest and not any(isinstance(it, _Stmt) or it.body for it in items):
            items = [self.stmt([])]
        pos = self.ch.draw(len(items) + 1)
        items[pos:pos] = nest
        body = self.render(items, "  ")
        ct = self.dtype
        params = ["int n", "int m"] + [f"{ct} {s}" for s in SCALARS if s in self.scalars_used]
        for name, rank in self.ranks.items():
            dims = []
            for lo, hi in self.ranges[name]:
                ext = max(hi, 0) + 1
                if ext < MAX_EXTENT and self.ch.coin(0.2):
                    ext += 1
                if ext == self.sizes["n"] and self.ch.coin(0.5):
                    dims.append("n")
                elif ext == self.sizes["n"] + 1 and self.ch.coin(0.5):
                    dims.append("n + 1")
                else:
                    dims.append(str(ext))
            params.append(f"{ct} {name}" + "".join(f"[{d}]" for d in dims))
        lines = [f"void kernel_fuzz({', '.join(params)})", "{"]
        if not self.decl_in_for:
            lines.append("  int i, j, k, l;")
        lines += [f"  {d};" for d in self.decls]
        return "\n".join(lines + body + ["}"]) + "\n"


def generate(ch: Chooser, *, max_size: int = 10, meshes: bool = True) -> FuzzCase:
    """A random :class:`FuzzCase` from the decisions of ``ch`` (sizes ``n``, ``m`` in 2..``max_size``)."""
    g = _Gen(ch, max_size)
    src = g.program()
    # a zero draw gives 2x1, the smallest mesh that distributes anything (the 0-biased hypothesis
    # draws and the shrinker then stay on meshes where the mapping matters)
    mesh = (_MESH_WIDTHS[ch.draw(MESH_W)], 1 + ch.draw(MESH_H)) if meshes else (2, 1)
    threads = 1 + ch.draw(3)
    data = "small-int" if g.small_ints or g.dtype == "int" or ch.coin(0.15) else "uniform"
    return FuzzCase(src, dict(g.sizes), mesh, threads, TARGET, {"float": "f32", "double": "f64", "int": "i32"}[g.dtype],
                    data, tuple(ch.record))


def case_from_seed(seed, **kw) -> FuzzCase:
    return generate(RandomChooser(seed), **kw)


def case_from_choices(choices: Sequence[int], **kw) -> FuzzCase:
    return generate(ReplayChooser(choices), **kw)


def cases(max_size: int = 10):
    """A hypothesis strategy of :class:`FuzzCase` (shrinks towards fewer loops, statements and arrays)."""
    from hypothesis import strategies as st

    @st.composite
    def _cases(draw):
        return generate(_HypothesisChooser(draw), max_size=max_size)
    return _cases()
