"""source/jmx/jvm.py cuts JPype's link between the collectors: a Java collection no longer runs a
full Python collection (on JPype's reference queue thread, holding the GIL). A real JVM in a
subprocess of its own, started as `serve` starts it, and one started by JPype alone beside it."""
import json
import subprocess
import sys

CASE = r"""
import gc, json, sys, time
import jpype
if sys.argv[1] == "sidecar":
    from kafka_jmx_sidecar.exporter.source.jmx import JmxSettings, start_jvm
    from kafka_jmx_sidecar.exporter.config.sidecar import DEFAULT_JVM_OPTIONS
    start_jvm(JmxSettings(jvm_options=DEFAULT_JVM_OPTIONS))
else:
    jpype.startJVM(convertStrings=False)
System = jpype.JClass("java.lang.System")
full = lambda: gc.get_stats()[2]["collections"]
System.gc()
time.sleep(0.6)  # JPype's queue thread looks every 250 ms
before = full()
for _ in range(4):
    garbage = [[] for _ in range(2000)]  # a young Python collection: JPype re-arms its trigger at its end
    del garbage
    System.gc()
    time.sleep(0.6)
print(json.dumps({"python_full_collections": full() - before}))
"""


def _run(how: str) -> int:
    out = subprocess.run([sys.executable, "-c", CASE, how], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])["python_full_collections"]


def test_a_java_collection_runs_no_python_collection_in_the_sidecar():
    assert _run("jpype") >= 3  # JPype's own link: one full Python collection per Java one
    assert _run("sidecar") == 0
