"""Recursive-descent parser for the .pto subset: module, func.func, arith, scf, pto ops.

Uses of SSA names are resolved against lexically scoped definitions while parsing; a
name that is not (yet) defined becomes a Value of kind "undefined", which the verifier
reports. Parse errors are PtoasError with the .pto line/col.
"""
from __future__ import annotations

import re

from .errors import PtoasError
from .ir import Func, Module, Op, SrcLoc, Value
from .lexer import Token, tokenize
from .types import SCALAR_NAMES, parse_type

# arith ops written `%r = arith.X %a : T1 to T2`
CAST_OPS = {"arith.index_cast", "arith.index_castui", "arith.sitofp", "arith.uitofp",
            "arith.fptosi", "arith.fptoui", "arith.extf", "arith.truncf", "arith.extsi",
            "arith.extui", "arith.trunci", "arith.bitcast"}
_LINE_LOC = re.compile(r'loc\("([^"]*)":(\d+):(\d+)\)')
KEYWORD_OPERANDS = {
    "pto.alloc_tile": ("addr", "valid_row", "valid_col"),
    "pto.alloc_multi_tile": ("addr", "valid_row", "valid_col"),
}


class Parser:
    def __init__(self, text: str, source_name: str = "<pto>"):
        self.source_name = source_name
        self.lines = text.splitlines()
        try:
            self.toks = tokenize(text)
        except PtoasError as e:
            raise PtoasError(e.message, line=e.line, col=e.col, source_name=source_name) from None
        self.i = 0
        self.scopes: list[dict[str, Value]] = []
        self.loc_aliases: dict[str, SrcLoc | None] = {}
        self.pending_alias_locs: list[tuple[Op, str]] = []

    # ------------------------------------------------------------ token helpers
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def error(self, msg: str, tok: Token | None = None) -> PtoasError:
        """Located at the token; also at the source loc(...) written on the same line, if any."""
        t = tok or self.tok
        line = self.lines[t.line - 1] if 0 < t.line <= len(self.lines) else ""
        m = _LINE_LOC.search(line)
        loc = f"{m.group(1)}:{m.group(2)}:{m.group(3)}" if m else None
        return PtoasError(msg, line=t.line, col=t.col, loc=loc, source_name=self.source_name)

    def next(self) -> Token:
        t = self.tok
        self.i += 1
        return t

    def at(self, text: str) -> bool:
        return self.tok.text == text and self.tok.kind in ("punct", "ident")

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> Token:
        if not self.at(text):
            got = self.tok.text or "end of input"
            raise self.error(f"expected '{text}', got '{got}'")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Token:
        if self.tok.kind != kind:
            got = self.tok.text or "end of input"
            raise self.error(f"expected {what}, got '{got}'")
        return self.next()

    # ------------------------------------------------------------ SSA scopes
    def define(self, tok: Token, type_, kind: str = "result") -> Value:
        name = tok.text[1:]
        for scope in self.scopes:
            if name in scope:
                raise self.error(f"redefinition of SSA value %{name}", tok)
        v = Value(name, type_, kind)
        self.scopes[-1][name] = v
        return v

    def use(self, tok: Token) -> Value:
        name = tok.text[1:]
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return Value(name, None, "undefined")

    def ssa(self) -> Value:
        return self.use(self.expect_kind("ssa", "an SSA value (%name)"))

    def ssa_list(self, close: str) -> list[Value]:
        vals: list[Value] = []
        if self.at(close):
            return vals
        vals.append(self.ssa())
        while self.accept(","):
            vals.append(self.ssa())
        return vals

    # ------------------------------------------------------------ types and attributes
    def type(self):
        t = self.tok
        if t.kind == "type" or (t.kind == "ident" and t.text in SCALAR_NAMES):
            self.next()
            try:
                return parse_type(t.text)
            except ValueError as e:
                raise self.error(str(e), t) from None
        raise self.error(f"expected a type, got '{t.text or 'end of input'}'")

    def type_list(self) -> list:
        types = [self.type()]
        while self.accept(","):
            types.append(self.type())
        return types

    def paren_type_list(self) -> list:
        if self.accept("("):
            types = [] if self.at(")") else self.type_list()
            self.expect(")")
            return types
        return [self.type()]

    def attr_value(self) -> str:
        """Raw text of one attribute value, up to ',' or '}' at depth 0."""
        parts: list[str] = []
        depth = 0
        while True:
            t = self.tok
            if t.kind == "eof":
                raise self.error("unterminated attribute dictionary")
            if depth == 0 and t.kind == "punct" and t.text in (",", "}"):
                break
            if t.kind == "punct" and t.text in "([{":
                depth += 1
            elif t.kind == "punct" and t.text in ")]}":
                depth -= 1
            parts.append(t.text)
            self.next()
        if not parts:
            raise self.error("expected an attribute value")
        return " ".join(parts)

    def attr_dict(self) -> dict[str, str]:
        self.expect("{")
        attrs: dict[str, str] = {}
        while not self.at("}"):
            key = self.next()
            if key.kind not in ("ident", "string"):
                raise self.error(f"expected an attribute name, got '{key.text}'", key)
            attrs[key.text] = self.attr_value() if self.accept("=") else "unit"
            if not self.accept(","):
                break
        self.expect("}")
        return attrs

    def int_literal(self) -> int:
        t = self.expect_kind("int", "an integer")
        return int(t.text, 0)

    # ------------------------------------------------------------ locations
    def opt_loc(self, op: Op | None = None) -> SrcLoc | None:
        if not (self.tok.kind == "ident" and self.tok.text == "loc" and self.peek().text == "("):
            return None
        self.next()
        self.expect("(")
        loc = None
        if self.tok.kind == "string" and self.peek().text == ":":
            file = self.next().text[1:-1]
            self.expect(":")
            line = self.int_literal()
            self.expect(":")
            col = self.int_literal()
            loc = SrcLoc(file, line, col)
        elif self.tok.kind == "attr" and op is not None:  # loc(#loc3), resolved at the end
            self.pending_alias_locs.append((op, self.next().text))
        depth = 1
        while depth:  # skip anything else: unknown, fused[...], callsite(...)
            t = self.next()
            if t.kind == "eof":
                raise self.error("unterminated loc(...)")
            if t.text == "(":
                depth += 1
            elif t.text == ")":
                depth -= 1
        return loc

    # ------------------------------------------------------------ module / func
    def module(self) -> Module:
        mod = Module(funcs=[])
        self.scopes.append({})
        self.top_level_aliases()
        if self.accept("module"):
            if self.tok.kind == "sym":
                self.next()
            if self.accept("attributes"):
                mod.attrs = self.attr_dict()
            self.expect("{")
            while not self.at("}"):
                if self.tok.kind == "eof":
                    raise self.error("missing '}' closing the module")
                mod.funcs.append(self.func())
            self.expect("}")
            self.opt_loc()
        else:
            while self.at("func.func"):
                mod.funcs.append(self.func())
        self.top_level_aliases()
        if self.tok.kind != "eof":
            raise self.error(f"unexpected '{self.tok.text}' after the module")
        for op, alias in self.pending_alias_locs:
            op.loc = self.loc_aliases.get(alias)
        return mod

    def top_level_aliases(self) -> None:
        """`#loc3 = loc("f.py":1:2)` lines that MLIR prints around the module."""
        while self.tok.kind == "attr" and self.peek().text == "=":
            name = self.next().text
            self.expect("=")
            self.loc_aliases[name] = self.opt_loc()

    def func(self) -> Func:
        start = self.expect("func.func")
        if self.tok.kind == "ident" and self.tok.text in ("private", "public", "nested"):
            self.next()
        name = self.expect_kind("sym", "a function name (@name)").text[1:].strip('"')
        self.scopes.append({})
        self.expect("(")
        args: list[Value] = []
        while not self.at(")"):
            arg_tok = self.expect_kind("ssa", "an argument (%name)")
            self.expect(":")
            args.append(self.define(arg_tok, self.type(), "arg"))
            if self.tok.kind == "punct" and self.tok.text == "{":
                self.attr_dict()  # argument attributes are not used
            if not self.accept(","):
                break
        self.expect(")")
        result_types = self.paren_type_list() if self.accept("->") else []
        attrs = self.attr_dict() if self.accept("attributes") else {}
        body = self.region()
        self.scopes.pop()
        self.opt_loc()
        return Func(name, args, body, attrs, result_types, start.line, start.col)

    def region(self) -> list[Op]:
        self.expect("{")
        self.scopes.append({})
        ops: list[Op] = []
        while not self.at("}"):
            if self.tok.kind == "eof":
                raise self.error("missing '}' at the end of a region")
            ops.append(self.op())
        self.expect("}")
        self.scopes.pop()
        return ops

    # ------------------------------------------------------------ ops
    def op(self) -> Op:
        result_toks: list[Token] = []
        if self.tok.kind == "ssa":
            result_toks.append(self.next())
            count = None
            if self.accept(":"):
                count = self.int_literal()
            while self.accept(","):
                result_toks.append(self.expect_kind("ssa", "a result name"))
            self.expect("=")
            if count is not None:  # %r:2 = ... defines %r#0, %r#1
                base = result_toks[0]
                result_toks = [Token("ssa", f"{base.text}#{k}", base.line, base.col) for k in range(count)]
        name_tok = self.tok
        if name_tok.kind not in ("ident", "string"):
            raise self.error(f"expected an operation name, got '{name_tok.text or 'end of input'}'")
        self.next()
        op = Op(name=name_tok.text.strip('"'), line=name_tok.line, col=name_tok.col)
        handler = self.HANDLERS.get(op.name)
        if handler is None:
            if op.name.startswith("arith."):
                handler = Parser.p_arith_generic
            else:
                handler = Parser.p_generic
        result_types = handler(self, op) or []
        if self.tok.kind == "ident" and self.tok.text == "loc":
            op.loc = self.opt_loc(op)
        self.bind_results(op, result_toks, result_types, name_tok)
        return op

    def bind_results(self, op: Op, toks: list[Token], types: list, name_tok: Token) -> None:
        if toks and len(types) != len(toks):
            raise self.error(f"{op.name} defines {len(types)} result(s) but {len(toks)} name(s) are given",
                             name_tok)
        op.results = [self.define(t, ty) for t, ty in zip(toks, types)]

    # arith -------------------------------------------------------------
    def p_constant(self, op: Op):
        t = self.next()
        if t.kind == "int":
            op.value = int(t.text, 0)
        elif t.kind == "float":
            op.value = float(t.text)
        elif t.kind == "ident" and t.text in ("true", "false"):
            op.value = t.text == "true"
        elif t.kind == "attr" and t.text.startswith("dense<"):
            op.value = t.text                       # a splat of a vector (tmrgsort's status)
        else:
            raise self.error(f"unsupported constant literal '{t.text}'", t)
        if self.accept(":"):
            ty = self.type()
        elif isinstance(op.value, bool):
            ty = parse_type("i1")
        else:
            raise self.error("arith.constant needs ': type'")
        op.types["result"] = [ty]
        return [ty]

    def p_arith_generic(self, op: Op):
        op.operands["args"] = self.ssa_list(":")
        if self.tok.kind == "punct" and self.tok.text == "{":
            op.attrs = self.attr_dict()
        self.expect(":")
        ty = self.type()
        op.types["args"] = [ty] * len(op.operands["args"])
        return [ty]

    def p_cast(self, op: Op):
        op.operands["args"] = [self.ssa()]
        self.expect(":")
        src = self.type()
        self.expect("to")
        dst = self.type()
        op.types["args"] = [src]
        return [dst]

    def p_cmp(self, op: Op):
        pred = self.next()
        if pred.kind not in ("ident", "string"):
            raise self.error("expected a comparison predicate", pred)
        op.value = pred.text.strip('"')
        self.expect(",")
        op.operands["args"] = self.ssa_list(":")
        self.expect(":")
        ty = self.type()
        op.types["args"] = [ty] * len(op.operands["args"])
        return [parse_type("i1")]

    def p_select(self, op: Op):
        op.operands["args"] = self.ssa_list(":")
        self.expect(":")
        ty = self.type()
        if self.accept(","):  # full form: `: i1, T`
            ty = self.type()
        op.types["args"] = [parse_type("i1"), ty, ty]
        return [ty]

    # scf / func --------------------------------------------------------
    def p_for(self, op: Op):
        iv_tok = self.expect_kind("ssa", "the loop induction variable")
        self.expect("=")
        lb = self.ssa()
        self.expect("to")
        ub = self.ssa()
        self.expect("step")
        step = self.ssa()
        op.operands["bounds"] = [lb, ub, step]
        carried = self.carried_list("an iter_args name") if self.accept("iter_args") else []
        op.operands["inits"] = [v for _, v in carried]
        result_types = self.paren_type_list() if self.accept("->") else []
        if len(result_types) != len(carried):
            raise self.error(f"scf.for has {len(carried)} iter_args but {len(result_types)} result type(s)")
        iv_type = parse_type("index")
        if self.accept(":"):
            iv_type = self.type()
        op.types["inits"] = list(result_types)
        # the region's arguments live in the body's scope
        self.expect("{")
        self.scopes.append({})
        args = [self.define(iv_tok, iv_type, "arg")]
        args += [self.define(t, ty, "arg") for (t, _), ty in zip(carried, result_types)]
        body: list[Op] = []
        while not self.at("}"):
            if self.tok.kind == "eof":
                raise self.error("missing '}' closing scf.for")
            body.append(self.op())
        self.expect("}")
        self.scopes.pop()
        op.regions = [body]
        op.region_args = [args]
        return result_types

    def carried_list(self, what: str) -> list[tuple[Token, Value]]:
        """`(%a = %init, ...)`: a loop's carried values, their names and initial values."""
        carried: list[tuple[Token, Value]] = []
        self.expect("(")
        while not self.at(")"):
            arg_tok = self.expect_kind("ssa", what)
            self.expect("=")
            carried.append((arg_tok, self.ssa()))
            if not self.accept(","):
                break
        self.expect(")")
        return carried

    def p_while(self, op: Op):
        """`[%r = ] scf.while ([%b = %init, ...]) : (T...) -> (T...) { before ...
        scf.condition(%c) [%b... : T...] } do { [^bb0(%a : T, ...):] after ... scf.yield }`."""
        carried = self.carried_list("a while argument name") if self.at("(") else []
        self.expect(":")
        arg_types = self.paren_type_list()
        self.expect("->")
        result_types = self.paren_type_list()
        if len(arg_types) != len(carried):
            raise self.error(f"scf.while has {len(carried)} argument(s) but {len(arg_types)} type(s)")
        op.operands["inits"] = [v for _, v in carried]
        op.types["inits"] = list(arg_types)
        self.expect("{")
        self.scopes.append({})
        before_args = [self.define(t, ty, "arg") for (t, _), ty in zip(carried, arg_types)]
        before = self.region_ops("scf.while's condition region")
        self.scopes.pop()
        if not self.accept("do"):
            raise self.error("scf.while needs `} do {` before its body")
        self.expect("{")
        self.scopes.append({})
        after_args = []
        if self.accept("^"):
            self.expect_kind("ident", "a block label")
            self.expect("(")
            while not self.at(")"):
                tok = self.expect_kind("ssa", "a block argument")
                self.expect(":")
                after_args.append(self.define(tok, self.type(), "arg"))
                if not self.accept(","):
                    break
            self.expect(")")
            self.expect(":")
        after = self.region_ops("scf.while's body")
        self.scopes.pop()
        op.regions = [before, after]
        op.region_args = [before_args, after_args]
        return result_types

    def region_ops(self, what: str) -> list[Op]:
        """The ops up to the `}` that closes the region (consumed)."""
        ops: list[Op] = []
        while not self.at("}"):
            if self.tok.kind == "eof":
                raise self.error(f"missing '}}' closing {what}")
            ops.append(self.op())
        self.expect("}")
        return ops

    def p_condition(self, op: Op):
        """`scf.condition(%c) [%a, ... : T, ...]`: ends scf.while's condition region."""
        self.expect("(")
        op.operands["cond"] = [self.ssa()]
        self.expect(")")
        return self.p_terminator(op)

    def p_declare_array(self, op: Op):
        """`%a = pto.declare_local_array -> !pto.local_array<NxT>`."""
        self.expect("->")
        return [self.type()]

    def p_array_element(self, op: Op):
        """`pto.local_array_get %a[%i] : A -> T` / `pto.local_array_set %a[%i], %v : A, T`."""
        op.operands["array"] = [self.ssa()]
        self.expect("[")
        op.operands["index"] = [self.ssa()]
        self.expect("]")
        if op.name == "pto.local_array_set":
            self.expect(",")
            op.operands["value"] = [self.ssa()]
            self.expect(":")
            op.types["array"] = [self.type()]
            self.expect(",")
            op.types["value"] = [self.type()]
            return []
        self.expect(":")
        op.types["array"] = [self.type()]
        self.expect("->")
        return [self.type()]

    def p_if(self, op: Op):
        op.operands["cond"] = [self.ssa()]
        result_types = self.paren_type_list() if self.accept("->") else []
        op.regions = [self.region()]
        op.region_args = [[]]
        if self.accept("else"):
            op.regions.append(self.region())
            op.region_args.append([])
        return result_types

    def p_terminator(self, op: Op):
        """scf.yield / return / func.return: `[%a, %b : T, T]`."""
        if self.tok.kind == "ssa":
            op.operands["args"] = self.ssa_list(":")
            self.expect(":")
            op.types["args"] = self.type_list()
        else:
            op.operands["args"] = []
        return []

    # pto ---------------------------------------------------------------
    def keyword_list(self) -> list[Value]:
        self.expect("=")
        self.expect("[")
        vals = self.ssa_list("]")
        self.expect("]")
        return vals

    def p_make_tensor_view(self, op: Op):
        op.operands["source"] = [self.ssa()]
        while self.accept(","):
            key = self.expect_kind("ident", "'shape' or 'strides'").text
            op.operands[key] = self.keyword_list()
        if self.tok.kind == "punct" and self.tok.text == "{":
            op.attrs = self.attr_dict()
        self.expect(":")
        return [self.type()]

    def p_partition_view(self, op: Op):
        op.operands["source"] = [self.ssa()]
        while self.accept(","):
            key = self.expect_kind("ident", "'offsets' or 'sizes'").text
            op.operands[key] = self.keyword_list()
        if self.tok.kind == "punct" and self.tok.text == "{":
            op.attrs = self.attr_dict()
        self.expect(":")
        op.types["source"] = [self.type()]
        self.expect("->")
        return [self.type()]

    def p_alloc_tile(self, op: Op):
        keys = KEYWORD_OPERANDS[op.name]
        while self.tok.kind == "ident" and self.tok.text in keys:
            key = self.next().text
            self.expect("=")
            op.operands[key] = [self.ssa()]
        if self.tok.kind == "punct" and self.tok.text == "{":
            op.attrs = self.attr_dict()
        self.expect(":")
        return [self.type()]

    def p_multi_tile_get(self, op: Op):
        """`%t = pto.multi_tile_get %region[%slot] : !pto.multi_tile_buf<...> -> !pto.tile_buf<...>`."""
        op.operands["source"] = [self.ssa()]
        self.expect("[")
        op.operands["slot"] = [self.ssa()]
        self.expect("]")
        self.expect(":")
        op.types["source"] = [self.type()]
        self.expect("->")
        return [self.type()]

    def p_treshape(self, op: Op):
        op.operands["source"] = [self.ssa()]
        if self.tok.kind == "punct" and self.tok.text == "{":
            op.attrs = self.attr_dict()
        self.expect(":")
        op.types["source"] = [self.type()]
        self.expect("->")
        return [self.type()]

    def operand_group(self, group: str, op: Op) -> None:
        """`ins(%a{attrs}, %b : Ta, Tb)`."""
        self.expect("(")
        vals: list[Value] = []
        if self.tok.kind == "ssa":
            while True:
                vals.append(self.ssa())
                if self.tok.kind == "punct" and self.tok.text == "{":
                    op.operand_attrs[len(vals) - 1] = self.attr_dict()
                if not self.accept(","):
                    break
                # `ins(%src, {maskPattern = ...} : T, "row")`: the attrs of the operand before
                if self.tok.kind == "punct" and self.tok.text == "{":
                    op.operand_attrs[len(vals) - 1] = self.attr_dict()
                    if not self.accept(","):
                        break
        types = []
        if self.accept(":"):
            types = [self.type()]
            while self.accept(","):
                if self.tok.kind == "string":       # an axis tag: `..., "row")` (rows only here)
                    if self.next().text.strip('"') != "row":
                        raise self.error("only the \"row\" axis is supported")
                    break
                types.append(self.type())
        self.expect(")")
        if len(types) != len(vals):
            raise self.error(f"{group}(...) lists {len(vals)} operand(s) but {len(types)} type(s)")
        op.operands[group] = vals
        op.types[group] = types

    def p_generic(self, op: Op):
        """pto ops in destination-passing style, and a tolerant fallback for others:
        `[ins(...)] [outs(...)] [%operands] [{attrs}] [: types] [-> types]`."""
        start_line = self.toks[self.i - 1].line
        result_types: list = []
        if self.at("ins"):
            self.next()
            self.operand_group("ins", op)
        if self.at("outs"):
            self.next()
            self.operand_group("outs", op)
        if self.tok.kind == "ssa" and self.tok.line == start_line:
            op.operands["args"] = self.ssa_list(":")
        if self.tok.kind == "punct" and self.tok.text == "{" and self.tok.line == start_line:
            op.attrs = self.attr_dict()
        if self.at(":") and self.tok.line == start_line:
            self.next()
            op.types["args"] = self.type_list()
        if self.at("->") and self.tok.line == start_line:
            self.next()
            result_types = self.paren_type_list()
        return result_types

    def p_subview(self, op: Op):
        """`%v = pto.subview %tile[%row, %col] sizes [R, C] [valid [%vr, %vc]] : TB -> TB2`."""
        op.operands["source"] = [self.ssa()]
        self.expect("[")
        op.operands["offsets"] = self.ssa_list("]")
        self.expect("]")
        self.expect("sizes")
        self.expect("[")
        sizes = [int(self.expect_kind("int", "an integer size").text)]
        while self.accept(","):
            sizes.append(int(self.expect_kind("int", "an integer size").text))
        self.expect("]")
        op.value = sizes
        if self.accept("valid"):          # the part of the window that holds data (run-time values)
            self.expect("[")
            op.operands["valid"] = self.ssa_list("]")
            self.expect("]")
        self.expect(":")
        op.types["source"] = [self.type()]
        self.expect("->")
        return [self.type()]

    def p_getval(self, op: Op):
        """`%v = pto.tgetval ins(%tile, %off : TB, index) outs : T`."""
        self.expect("ins")
        self.operand_group("ins", op)
        self.expect("outs")
        self.expect(":")
        return [self.type()]

    def p_syncall(self, op: Op):
        """`pto.syncall ins(%barrier, %count : i64 | !pto.ptr<T>, i32) [{lanes = 2}]`."""
        self.expect("ins")
        self.operand_group("ins", op)
        if self.tok.kind == "punct" and self.tok.text == "{":
            op.attrs = self.attr_dict()
        return []

    def p_paren(self, op: Op):
        """`%r = pto.op(%a, %b : Ta, Tb) -> R` (the prefetch family)."""
        self.expect("(")
        op.operands["args"] = self.ssa_list(":")
        self.expect(":")
        op.types["args"] = self.type_list()
        self.expect(")")
        self.expect("->")
        return [self.type()]

    HANDLERS = {
        "arith.constant": p_constant,
        "arith.cmpi": p_cmp,
        "arith.cmpf": p_cmp,
        "arith.select": p_select,
        "scf.for": p_for,
        "scf.if": p_if,
        "scf.while": p_while,
        "pto.declare_local_array": p_declare_array,
        "pto.local_array_get": p_array_element,
        "pto.local_array_set": p_array_element,
        "scf.condition": p_condition,
        "scf.yield": p_terminator,
        "return": p_terminator,
        "func.return": p_terminator,
        "pto.make_tensor_view": p_make_tensor_view,
        "pto.partition_view": p_partition_view,
        "pto.alloc_tile": p_alloc_tile,
        "pto.alloc_multi_tile": p_alloc_tile,
        "pto.multi_tile_get": p_multi_tile_get,
        "pto.treshape": p_treshape,
        "pto.load_scalar": p_treshape,        # %v = pto.load_scalar %pview : P -> T
        "pto.tgetval": p_getval,
        "pto.syncall": p_syncall,
        "pto.make_prefetch_async_context": p_paren,
        "pto.tprefetch_async": p_paren,
        "pto.comm.wait_async_event": p_paren,
        "pto.get_prefetch_async_session": p_treshape,    # %s = ... %ctx : C -> S
        "pto.subview": p_subview,
    }
    HANDLERS.update(dict.fromkeys(CAST_OPS, p_cast))


def parse(text: str, source_name: str = "<pto>") -> Module:
    """Parse .pto text into a Module; raises PtoasError."""
    return Parser(text, source_name).module()
