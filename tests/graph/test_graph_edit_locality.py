"""Issue 10: an edit of one kernel re-runs that kernel's tasks, not its neighbours' nor
the orchestration's passes after outlining.
Versions (`x__ssa_v<k>`, `t__tmp_v<k>`) are counted over the whole orchestration before
outlining; each outlined kernel numbers its own from 0, so a version added in one region
does not rename the values of the regions after it."""
from graph_helpers import by_stage, import_file, kernel_of, ran, run_and_check, tasks, write_program


def test_a_new_temporary_in_one_kernel_leaves_later_kernels_alone(iso):
    from pypto import ir
    n = 12                               # k1 and k9 both compute pl.sub(ta, tb)
    prog = write_program(iso / "prog.py", n)
    ir.compile(import_file(prog).PROGRAM, output_dir=str(iso / "before"), platform="a2a3sim")
    # k3 now makes a pl.sub temporary too, ahead of k9's in the orchestration
    write_program(prog, n, ops={"k3": "pl.sub(ta, tb)"})
    compiled = ir.compile(import_file(prog).PROGRAM, output_dir=str(iso / "after"),
                          platform="a2a3sim")
    back = {(r["stage"], kernel_of(r, n)) for r in ran(by_stage(tasks(iso / "after"),
                                                                "pto", "ptoas", "kernel"))}
    assert back == {("pto", "k3"), ("ptoas", "k3"), ("kernel", "k3")}, sorted(back)
    per_function = {kernel_of(r, n) for r in ran(by_stage(tasks(iso / "after"), "pass"))} - {None}
    assert per_function == {"k3"}, sorted(per_function)
    # the orchestration after outlining calls k3 as before: its call directions and task
    # dependencies (per function, given its callees' signatures) are not derived again
    derive = {r["name"]: r["status"] for r in tasks(iso / "after") if r["name"].endswith(":main")
              and ("DeriveCallDirections" in r["name"] or "AutoDeriveTaskDependencies" in r["name"])}
    assert len(derive) == 2 and set(derive.values()) == {"cached"}, derive
    k9 = (iso / "after" / "ptoas" / "k9.pto").read_text()
    assert k9 == (iso / "before" / "ptoas" / "k9.pto").read_text()
    assert "sub__tmp_v0" in k9
    run_and_check(compiled, n, ops={"k3": "pl.sub(ta, tb)"})


def test_the_pass_dumps_are_joined_next_to_the_kernel_builds(iso):
    """Nothing waits for the whole-program dumps of the per-function passes: they are
    joined in the last phase, with the kernels' C++ compiles (records are in
    completion order, phase by phase), and they are the whole program all the same."""
    from pypto import ir
    prog = write_program(iso / "prog.py", 3)
    ir.compile(import_file(prog).PROGRAM, output_dir=str(iso / "out"), platform="a2a3sim")
    recs = tasks(iso / "out")
    names = [r["name"] for r in recs]
    joins = [i for i, r in enumerate(recs) if r["stage"] == "pass" and r["name"].count(":") == 2
             and int(r["name"].split(":")[2][:2]) >= 7]
    layouts = [i for i, r in enumerate(recs) if r["stage"] == "layout"]
    assert len(joins) == 13 and len(layouts) == 4, names
    assert min(joins) > max(layouts), names
    dump = (iso / "out" / "passes_dump" / "19_after_MaterializeRuntimeScopes.py").read_text()
    assert all(f"def {f}(" in dump for f in ("main", "k0", "k1", "k2")), dump
