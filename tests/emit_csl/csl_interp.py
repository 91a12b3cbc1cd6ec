"""A small interpreter of the CSL subset MICA emits, for tests: it runs ``layout.csl`` (tile code
parameters and routes per core) and then ``pe_program.csl`` on every core, with wavelets moving hop by hop
through the routes the layout set, so an emitted file set can be executed and its results compared with
numpy. It models what the emitted code relies on -- tasks that run when activated and not blocked,
asynchronous ``@mov32``/``@mov16`` between memory and fabric DSDs that activate a task when done, input
streams per colour, DSD arithmetic (each operation in the destination's type, rounded as C rounds the
same operation; ``@fmacs`` as a rounded product, then a rounded sum) and ``<math>``'s ``sqrt_f32`` /
``sqrt_f16`` -- not the hardware's timing or queue capacities (a send completes
at once; a receive completes once its wavelets have arrived).

Memory hazards of asynchronous moves are errors: from the moment an asynchronous receive is started until
its wavelets land, no code may read or write the memory it fills; from the moment an asynchronous send is
started until its completion task has run, no code may write the memory it reads (on hardware both run
on a microthread while the core goes on). So a double buffer whose prefetch filled the slot the running
step reads, or a send from memory a compute overwrites, fails here even when the numbers would happen
to come out right in this interpreter's order of events.
"""

from __future__ import annotations

import operator

import numpy as np
from lark import Token

from mica.emit_csl.syntax import parse as _parse_csl

_CMP = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge}


def parse(text: str, name: str):
    """``text`` parsed (:func:`mica.emit_csl.syntax.parse`), each node's rule name a plain ``str``: the
    interpreter compares it with every kind it knows, and comparing lark's ``Token`` runs Python code each
    time (most of the interpreter's time on a large mesh)."""
    tree = _parse_csl(text, name)
    for node in tree.iter_subtrees():
        node.data = str(node.data)
    return tree

DIRS = {"NORTH": (0, -1), "SOUTH": (0, 1), "EAST": (1, 0), "WEST": (-1, 0)}
OPP = {"NORTH": "SOUTH", "SOUTH": "NORTH", "EAST": "WEST", "WEST": "EAST"}
NP = {"f32": np.float32, "f16": np.float16, "i32": np.int64, "u32": np.int64, "i16": np.int64, "u16": np.int64}


class CslError(Exception):
    pass


class _Return(Exception):
    def __init__(self, value):
        self.value = value


def _tok(t):
    return str(t)


class Machine:
    """Globals, functions and tasks of one program text on one core (or the layout)."""

    def __init__(self, tree, params: dict, hooks):
        self.globals: dict = dict(params)
        self.funcs: dict = {}
        self.tasks: dict = {}
        self.hooks = hooks
        self.scopes: list[dict] = []
        self.comptime = []
        self.layout = None
        for item in tree.children:
            kind = item.data
            if kind in ("fn_decl", "task_decl"):
                name = _tok(item.children[0])
                args = [_tok(a.children[0]) for a in item.children[1:-2] if a is not None]
                (self.funcs if kind == "fn_decl" else self.tasks)[name] = (args, item.children[-1])
            elif kind == "var_decl":
                self.globals[_tok(item.children[0])] = self.eval(item.children[2])
            elif kind == "param_decl":
                if _tok(item.children[0]) not in self.globals:
                    raise CslError(f"param {item.children[0]} has no value")
            elif kind == "comptime_block":
                self.comptime.append(item.children[0])
            elif kind == "layout_block":
                self.layout = item.children[0]

    # -- names -------------------------------------------------------------------------------------------
    def lookup(self, name):
        for sc in reversed(self.scopes):
            if name in sc:
                return sc[name]
        if name in self.globals:
            return self.globals[name]
        if name in self.funcs or name in self.tasks:
            return ("fnref", name)
        return ("sym", name)          # types, directions, module names

    def store(self, target, value, op="="):
        if op != "=":
            cur = self.eval(target)
            value = {"+=": lambda a, b: a + b, "-=": lambda a, b: a - b, "|=": lambda a, b: a | b,
                     "*=": lambda a, b: a * b}[op](cur, value)
        if target.__class__.__name__ == "Token":
            name = _tok(target)
            for sc in reversed(self.scopes):
                if name in sc:
                    sc[name] = value
                    return
            self.globals[name] = value
        elif target.data == "index":
            arr = self.eval(target.children[0])
            i = int(self.eval(target.children[1]))
            self._touch(target.children[0], i, True)
            arr[i] = value
        else:
            raise CslError(f"cannot assign to {target}")

    def _touch(self, name_tok, i: int, write: bool):
        if getattr(self, "inflight", None) and name_tok.__class__.__name__ == "Token":
            self.hooks.check(self, str(name_tok), [i], write)

    # -- statements --------------------------------------------------------------------------------------
    def block(self, blk, scope=None):
        self.scopes.append(scope or {})
        try:
            for st in blk.children:
                self.stmt(st)
        finally:
            self.scopes.pop()

    def stmt(self, st):
        k = st.data
        if k == "var_decl":
            self.scopes[-1][_tok(st.children[0])] = self.eval(st.children[2])
        elif k == "assign":
            self.store(st.children[0], self.eval(st.children[2]), _tok(st.children[1].children[0]))
        elif k == "call_stmt":
            self.eval(st.children[0])
        elif k == "if_stmt":
            if self.eval(st.children[0]):
                self.block(st.children[1])
            elif st.children[2] is not None:
                e = st.children[2]
                self.stmt(e) if e.data == "if_stmt" else self.block(e)
        elif k == "while_stmt":
            cond, step, body = st.children
            guard = 0
            while self.eval(cond):
                self.block(body)
                if step is not None:
                    self.stmt(step)
                guard += 1
                if guard > 10 ** 6:
                    raise CslError("while loop does not end")
        elif k == "for_stmt":
            rng, name, body = st.children
            for v in self.eval(rng):
                self.block(body, {_tok(name): v})
        elif k == "return_stmt":
            raise _Return(self.eval(st.children[0]) if st.children[0] is not None else None)
        elif k == "block":
            self.block(st)
        else:
            raise CslError(f"statement {k}")

    def call(self, name, args):
        params, body = self.funcs[name] if name in self.funcs else self.tasks[name]
        try:
            self.block(body, dict(zip(params, args)))
        except _Return as r:
            return r.value
        return None

    # -- expressions -------------------------------------------------------------------------------------
    def eval(self, e):
        if type(e) is Token:
            t = e.type
            if t == "INT":
                return int(e)
            if t == "FLOAT":
                return float(e)
            if t == "ESCAPED_STRING":
                return str(e)[1:-1]
            name = str(e)
            if name == "true":
                return True
            if name == "false":
                return False
            return self.lookup(name)
        k = e.data
        c = e.children
        if k in ("add_expr", "mul_expr", "shift_expr"):
            v = self.eval(c[0])
            for op, rhs in zip(c[1::2], c[2::2]):
                v = self.binop(_tok(op.children[0]), v, self.eval(rhs))
            return v
        if k == "cmp_expr":
            return _CMP[str(c[1].children[0])](self.eval(c[0]), self.eval(c[2]))
        if k == "and_expr":
            return all(self.eval(x) for x in c)        # short-circuit, as generated code relies on
        if k == "or_expr":
            return any(self.eval(x) for x in c)
        if k == "bor_expr":
            v = 0
            for x in c:
                v |= self.eval(x)
            return v
        if k == "band_expr":
            v = self.eval(c[0])
            for x in c[1:]:
                v &= self.eval(x)
            return v
        if k == "neg":
            return -self.eval(c[0])
        if k == "not_":
            return not self.eval(c[0])
        if k == "address":
            return self.eval(c[0])
        if k == "index":
            i = int(self.eval(c[1]))
            self._touch(c[0], i, False)
            return self.eval(c[0])[i]
        if k == "field":
            base = self.eval(c[0])
            return ("field", base, _tok(c[1]))
        if k == "if_expr":
            return self.eval(c[1]) if self.eval(c[0]) else self.eval(c[2])
        if k == "struct_lit":
            out, pos = {}, []
            for f in c:
                if f is None:
                    continue
                if getattr(f, "data", None) == "named":
                    out[_tok(f.children[0])] = f.children[1] if _tok(f.children[0]) == "tensor_access" else self.eval(f.children[1])
                else:
                    pos.append(self.eval(f))
            return out if out else pos
        if k == "tensor_access":
            return f
        if k in ("array_type", "pointer_type", "fn_type"):
            return ("type", k, [str(x) for x in c])
        if k == "postfix_call":
            callee = c[0]
            args = [a for a in c[1:] if a is not None]
            if callee.__class__.__name__ == "Token" and callee.type == "BUILTIN":
                return self.hooks.builtin(self, str(callee)[1:], args)
            target = self.eval(callee)
            vals = [self.eval(a) for a in args]
            if target[0] == "fnref":
                return self.call(target[1], vals)
            if target[0] == "field":
                return self.hooks.method(self, target[1], target[2], vals)
            raise CslError(f"cannot call {target}")
        raise CslError(f"expression {k}")

    @staticmethod
    def binop(op, a, b):
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            if isinstance(a, int) and isinstance(b, int):
                if a < 0 or b <= 0:
                    raise CslError(f"signed integer division {a} / {b}")
                return a // b
            return a / b
        if op == "%":
            if a < 0 or b <= 0:
                raise CslError(f"signed integer remainder {a} % {b}")
            return a % b
        if op == "<<":
            return a << b
        if op == ">>":
            return a >> b
        raise CslError(op)


def _dsd_elems(d, n=None):
    n = d["length"] if n is None else n
    return [d["base"] + i * d["stride"] for i in range(n)]


class Fabric:
    """The whole mesh: per-core machines, routes, wavelet streams, tasks."""

    def __init__(self, files: dict[str, str], width: int, height: int):
        self.w, self.h = width, height
        self.routes: dict = {}
        self.params: dict = {}
        layout = Machine(parse(files["layout.csl"], "layout.csl"), {"width": width, "height": height}, self)
        self.mode = "layout"
        layout.block(layout.layout)
        pe_tree = parse(files["pe_program.csl"], "pe_program.csl")
        self.mode = "pe"
        self.cores = {}
        self.streams: dict = {}          # (x, y, colour) -> list of values arriving on the ramp
        self.pending: list = []          # receives waiting for wavelets
        for (x, y), params in self.params.items():
            self.cur = (x, y)
            m = Machine(pe_tree, dict(params), self)
            m.core = (x, y)
            m.active, m.blocked, m.bound, m.done = set(), set(), {}, False
            m.inflight = []              # asynchronous moves running: [kind, array, set of indices, task]
            self.cores[(x, y)] = m
            for blk in m.comptime:
                m.block(blk)

    # -- builtins ---------------------------------------------------------------------------------------
    def builtin(self, m: Machine, name, args):
        ev = [m.eval(a) if not (getattr(a, "data", None) == "struct_lit") else m.eval(a) for a in args]
        if name in ("get_color", "get_local_task_id", "get_input_queue", "get_output_queue", "get_ut_id"):
            return ev[0]
        if name == "import_module":
            return ("module", ev[0])
        if name == "as":
            ty = ev[0][1]
            return float({"f32": np.float32, "f16": np.float16}[ty](ev[1])) if ty in ("f32", "f16") else int(ev[1])
        if name == "bitcast":          # a float from its IEEE bits, or the bits of a float (same size)
            ty = ev[0][1]
            if ty in ("u32", "u16"):
                src = {"u32": np.float32, "u16": np.float16}[ty]
                return int(np.array(ev[1], src).view({"u32": np.uint32, "u16": np.uint16}[ty]))
            return float(np.array(int(ev[1]), {"f32": np.uint32, "f16": np.uint16}[ty]).view(NP[ty]))
        if name == "zeros":
            _, kind, (n, ty) = ev[0]
            return np.zeros(int(n), dtype=NP[ty])
        if name == "range":
            if len(ev) == 2:
                return range(ev[1])
            return range(ev[1], ev[2], ev[3] if len(ev) > 3 else 1)
        if name == "comptime_assert":
            assert ev[0], "comptime assert"
            return None
        if name in ("set_rectangle",):
            assert (ev[0], ev[1]) == (self.w, self.h)
            return None
        if name == "set_tile_code":
            self.params[(ev[0], ev[1])] = ev[3]
            return None
        if name == "set_color_config":
            x, y, col, cfg = ev
            r = cfg["routes"]
            key = (x, y, col)
            if key in self.routes:
                raise CslError(f"router ({x},{y}) configured twice for colour {col}")
            self.routes[key] = ({d[1] for d in r["rx"]}, {d[1] for d in r["tx"]})
            return None
        if name in ("export_name", "export_symbol", "initialize_queue"):
            return None
        if name == "bind_local_task":
            m.bound[ev[1]] = ev[0][1]
            return None
        if name == "activate":
            m.active.add(ev[0])
            return None
        if name == "block":
            m.blocked.add(ev[0])
            return None
        if name == "unblock":
            m.blocked.discard(ev[0])
            return None
        if name == "get_dsd":
            kind, cfg = ev[0][1], ev[1]
            if kind == "mem1d_dsd":
                ta = cfg["tensor_access"]
                var, ext, idx = ta.children
                arr_name = _tok(idx.children[0])

                def at(i):
                    m.scopes.append({_tok(var): i})
                    try:
                        return m.eval(idx.children[1])
                    finally:
                        m.scopes.pop()
                base = at(0)
                return {"kind": "mem", "arr": arr_name, "base": base, "stride": at(1) - base,
                        "length": m.eval(ext)}
            if kind == "fabin_dsd":
                return {"kind": "fin", "colour": cfg["fabric_color"], "length": cfg["extent"]}
            if kind == "fabout_dsd":
                return {"kind": "fout", "colour": cfg["fabric_color"], "length": cfg["extent"]}
            raise CslError(kind)
        if name == "set_dsd_length":
            return {**ev[0], "length": int(ev[1])}
        if name == "increment_dsd_offset":
            return {**ev[0], "base": ev[0]["base"] + int(ev[1])}
        if name in ("fmacs", "fadds", "fsubs", "fmovs", "fmuls", "fnegs", "fmach", "faddh", "fsubh", "fmovh",
                    "fmulh", "fnegh"):
            return self.vector(m, name[:-1], ev)
        if name in ("mov32", "mov16"):
            return self.mov(m, ev)
        raise CslError(f"builtin @{name}")

    def method(self, m, base, name, vals):
        if base == ("module", "<memcpy/memcpy>") and name == "unblock_cmd_stream":
            m.done = True
            return None
        if base == ("module", "<math>") and name in ("sqrt_f32", "sqrt_f16", "exp_f32", "exp_f16"):
            ty = np.float32 if name.endswith("f32") else np.float16
            return ty({"sqrt": np.sqrt, "exp": np.exp}[name[:-4]](ty(vals[0])))
        if base == ("module", "<layout>"):
            return {"get_x_coord": m.core[0], "get_y_coord": m.core[1]}[name]
        if base[0] == "module" and name == "get_params":
            return ("memcpy_params", vals[0])
        raise CslError(f"{base}.{name}")

    # -- hazards of asynchronous moves ----------------------------------------------------------------
    def check(self, m, arr: str, idx, write: bool, what: str = "code"):
        """Raises when ``what`` reads (``write`` False) or writes ``arr[idx]`` while an asynchronous move
        that conflicts is running on core ``m``."""
        if not m.inflight:
            return
        idx = set(idx)
        for kind, a, held, _ in m.inflight:
            if a == arr and (write or kind == "recv") and idx & held:
                raise CslError(f"core {m.core}: {what} {'writes' if write else 'reads'} {arr}"
                               f"[{min(idx & held)}..] while an asynchronous {kind} of it is running "
                               f"(pc {m.globals.get('pc')}, lv {[int(v) for v in m.globals.get('lv', [])]}; running: {[(k, a, min(h), t) for k, a, h, t in m.inflight]})")

    # -- data movement ----------------------------------------------------------------------------------
    def _arr(self, m, d):
        return m.globals[d["arr"]]

    def vector(self, m, op, ev):
        """A DSD arithmetic operation ``op`` (``fmac``, ``fadd``, ``fsub``, ``fmul``, ``fmov``, ``fneg``), element
        by element in the destination's type, each operation rounded to it: ``@fmacs(d, a, b, s)`` is
        ``d = a + (b * s)`` with the product rounded before the sum (the order and rounding of the C statement
        ``a + b * s`` without contraction; the SDK documents @fmacs as a "32-bit floating point multiply-add"
        without saying whether the product is rounded). Operands are DSDs (read at the destination's
        length) or scalars, in the builtins' order (sdk.cerebras.ai, Builtins for DSD Operations)."""
        dst = ev[0]
        n = dst["length"]
        out = self._arr(m, dst)
        ty = out.dtype.type

        self.check(m, dst["arr"], _dsd_elems(dst, n), True, f"@{op}")
        for v in ev[1:]:
            if isinstance(v, dict):
                self.check(m, v["arr"], _dsd_elems(v, n), False, f"@{op}")

        def val(v):
            if isinstance(v, dict):
                src = self._arr(m, v)
                if src.dtype.type is not ty:
                    raise CslError(f"@{op}: operand {v['arr']} is {src.dtype}, the destination {out.dtype}")
                return src[_dsd_elems(v, n)].copy()
            return np.full(n, ty(v), dtype=ty)
        args = [val(v) for v in ev[1:]]
        if op == "fmac":
            if isinstance(ev[3], dict) or not isinstance(ev[2], dict):
                raise CslError("@fmac takes (dest, src_dsd1, src_dsd2, scalar)")
            res = args[0] + args[1] * args[2]
        elif op == "fadd":
            res = args[0] + args[1]
        elif op == "fsub":
            res = args[0] - args[1]
        elif op == "fmul":
            res = args[0] * args[1]
        elif op == "fneg":
            res = -args[0]
        else:
            res = args[0]
        if len(args) == 2 and not any(isinstance(v, dict) for v in ev[1:]):
            raise CslError(f"@{op}: two scalar sources")
        out[_dsd_elems(dst, n)] = res.astype(ty)

    def mov(self, m, ev):
        dst, src = ev[0], ev[1]
        opts = ev[2] if len(ev) > 2 else {}
        if dst["kind"] == "mem" and src["kind"] == "mem":
            self.check(m, dst["arr"], _dsd_elems(dst), True, "@mov")
            self.check(m, src["arr"], _dsd_elems(src, dst["length"]), False, "@mov")
            self._arr(m, dst)[_dsd_elems(dst)] = self._arr(m, src)[_dsd_elems(src, dst["length"])]
            return
        task = opts.get("activate")
        if dst["kind"] == "fout":
            idx = _dsd_elems(src, dst["length"])
            self.check(m, src["arr"], idx, False, "an asynchronous send")
            if task is not None:
                m.inflight.append(["send", src["arr"], set(idx), task])
            data = self._arr(m, src)[idx].copy()
            for cell in self.deliver(m.core, dst["colour"]):
                self.streams.setdefault((*cell, dst["colour"]), []).extend(data.tolist())
            if task is not None:
                m.active.add(task)
            return
        if src["kind"] == "fin":
            idx = _dsd_elems(dst)
            self.check(m, dst["arr"], idx, True, "an asynchronous receive")
            entry = ["recv", dst["arr"], set(idx), task]
            m.inflight.append(entry)
            self.pending.append((m, src["colour"], dst, task, entry))
            return
        raise CslError("mov between unsupported DSDs")

    def deliver(self, core, colour):
        """Cores whose ramp a wavelet injected at ``core`` on ``colour`` reaches."""
        out, stack, seen = [], [(core, "RAMP")], set()
        while stack:
            (x, y), came = stack.pop()
            if (x, y) in seen:
                raise CslError(f"colour {colour} loops at ({x},{y})")
            seen.add((x, y))
            r = self.routes.get((x, y, colour))
            if r is None or came not in r[0]:
                raise CslError(f"wavelet on colour {colour} from {came} dropped at router ({x},{y})")
            for d in r[1]:
                if d == "RAMP":
                    out.append((x, y))
                else:
                    dx, dy = DIRS[d]
                    stack.append(((x + dx, y + dy), OPP[d]))
        return out

    def step(self) -> bool:
        """One round: run every task that is ready; only when none is, land the receives whose wavelets
        are there. Receives thus complete as late as the program allows (the most adversarial legal
        order): code that does not wait for a receive reads memory still being received, and fails."""
        progress = False
        for m in self.cores.values():
            ready = [t for t in sorted(m.active) if t not in m.blocked]
            for t in ready:
                m.active.discard(t)
                m.inflight = [e for e in m.inflight if not (e[0] == "send" and e[3] == t)]   # a send is done
                m.call(m.bound[t], [])
                progress = True
        if progress:
            return True
        still = []
        for m, colour, dst, task, entry in self.pending:
            s = self.streams.get((*m.core, colour), [])
            n = dst["length"]
            if len(s) >= n:
                self._arr(m, dst)[_dsd_elems(dst)] = s[:n]
                del s[:n]
                m.inflight.remove(entry)
                if task is not None:
                    m.active.add(task)
                progress = True
            else:
                still.append((m, colour, dst, task, entry))
        self.pending = still
        return progress

    def run(self, fn="main"):
        for m in self.cores.values():
            m.call(fn, [])
        for _ in range(10 ** 6):
            if not self.step():
                break
        left = [c for c, m in self.cores.items() if not m.done]
        if left or self.pending or any(self.streams.values()):
            raise CslError(f"not finished: cores {left[:4]}, {len(self.pending)} receive(s) waiting, "
                           f"{sum(map(len, self.streams.values()))} wavelet(s) unread")
