"""pass: one pass of the Default pipeline (`pass` is a keyword, hence `pass_`).

Modes: "program" (the whole program in, the whole program out), "function" (only
options["function"] is rewritten; the other functions are signature stubs it may
call), "join" (per-function results in, whole program out; with no "pass" it only
joins, for the dump). The pass's module is loaded by the registry on first use, so
this stage's code is this module's closure plus that one pass's.
"""
from __future__ import annotations

from dataclasses import fields

from pypto.backend import BackendType
from pypto.errors import VerificationError
from pypto.ir.equal import assert_structural_equal
from pypto.ir.nodes import Program
from pypto.passes import by_name, run_pass
from pypto.passes.base import PassOptions
from pypto.stages.text import (join_functions, parse_bytes, parse_text, print_bytes, remember,
                               warnings_bytes)


def pass_stage(inputs: dict, options: dict) -> dict:
    mode = options.get("mode", "program")
    if mode == "join" and options.get("pass") is None and not options.get("explicit") \
            and "diag" not in options:
        # only the whole program for the dump: splice the printed functions, no parse
        return {"program": join_functions(options["program_name"],
                                          [(f, inputs[f"fn:{f}"]) for f in options["order"]])}
    if mode == "join":
        prog = _join(inputs, options["order"], options["program_name"], options["source"])
    else:
        prog = parse_bytes(inputs["program"])
    out = prog if options.get("pass") is None else _run(prog, mode, options)
    text = print_bytes(out)
    if options.get("verify") == "roundtrip":
        try:
            assert_structural_equal(out, parse_text(text))
        except AssertionError as e:
            raise VerificationError(f"after pass {options.get('pass')}: the printed IR does not "
                                    f"parse back to the same program: {e}") from None
    res = {"program": text}
    if options.get("explicit"):
        res["dump"] = print_bytes(out, explicit=True)
    if "diag" in options:          # post-pass warnings, on what this step rewrote
        fname = options.get("function")
        mine = Program(out.name, [out.get(fname)], out.source) if fname else out
        res["diagnostics"] = warnings_bytes(mine, options["diag"])
    remember(text, out)            # done with `out`: the next step may take it
    return res


def _run(prog, mode: str, options: dict):
    p = by_name(options["pass"])
    # the pass sees exactly the options it reads (they are in its key); the rest default
    kw = {f.name: options[f.name] for f in fields(PassOptions) if f.name in options}
    if "backend_type" in kw:
        kw["backend_type"] = BackendType(kw["backend_type"])
    opts = PassOptions(**kw)
    verify = options["verify"] != "none"
    done = list(options["done"])
    if mode != "function":
        return run_pass(p, prog, opts, verify, done, private=True)
    fname = options["function"]
    alone = Program(prog.name, [prog.get(fname)], prog.source)
    if getattr(p.module, "CALLEES", False):
        # the function with the signature stubs of what it calls, as the graph gave them
        # (taken where this run of per-function passes began): only it is checked
        one = run_pass(p, prog, opts, False, done, private=True).get(fname)
        if verify:
            from pypto.passes.verify import verify as check
            check(Program(prog.name, [one], prog.source), p.name, done + [p.name])
    else:
        one = run_pass(p, alone, opts, verify, done, private=True).functions[0]
    return Program(prog.name, [one if f.name == fname else f for f in prog.functions],
                   prog.source)


def _join(inputs: dict, order: list, name: str, source: str):
    """One program from per-function results: function f is taken from input "fn:f"."""
    return Program(name, [parse_bytes(inputs[f"fn:{f}"]).get(f) for f in order], source)
