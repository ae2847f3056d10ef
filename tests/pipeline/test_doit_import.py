"""pipeline/doit_import.py: doit is imported without the modules it loads for what
our runs don't use, and each still works when something uses it."""
import json
import subprocess
import sys

_PROBE = r'''
import json, sys
import pypto_pipeline.run                  # imports doit through the stand-ins
from pypto_pipeline.doit_import import _LAZY
late = [m for m in _LAZY if m in sys.modules]
import doit.plugin, doit.runner, doit.dependency, doit.action, doit.reporter, doit.doit_cmd
md5 = doit.dependency.get_md5("abc")
debugger = doit.action.pdb.Pdb.__name__
utc = str(doit.reporter.datetime.timezone.utc)
cfg = type(doit.doit_cmd.DoitConfig.load_config_ini([])).__name__
# doit's own uses of the three, through what it bound while they were stand-ins
dumped = len(doit.runner.pickle_dumps(lambda x: x + 1))
q = doit.runner.MRunner.Queue()
q.put(7)
same_child = doit.runner.MRunner.Child == doit.runner.Process
points = doit.plugin.entry_points_impl()(group="console_scripts")
# and the real modules for everyone else
import importlib.metadata
print(json.dumps({"late": late, "dumped": dumped, "queued": q.get(timeout=5),
                  "same_child": same_child, "points": len(points) > 0,
                  "md5": md5, "pdb": debugger, "utc": utc, "cfg": cfg,
                  "version": importlib.metadata.version("doit"),
                  "real": type(sys.modules["importlib.metadata"]).__name__,
                  "attr_real": importlib.metadata is sys.modules["importlib.metadata"]}))
'''


def test_doit_imports_without_those_modules_and_they_work_when_used():
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["late"] == []
    assert got["dumped"] > 0 and got["queued"] == 7 and got["same_child"]
    assert got["points"]                  # a doit command line still sees installed plugins
    assert got["version"].count(".") >= 1
    assert got["real"] == "module" and got["attr_real"]
    assert got["md5"] == "900150983cd24fb0d6963f7d28e17f72"
    assert (got["pdb"], got["utc"], got["cfg"]) == ("Pdb", "UTC", "ConfigParser")


def test_a_module_already_imported_is_left_alone():
    probe = ("import sys, importlib.metadata as m; import pypto_pipeline.run; "
             "print(sys.modules['importlib.metadata'] is m and type(m).__name__ == 'module')")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"
