"""source/jmx/jvm.py's shrink_heap against a real JVM started as `serve` starts it (the sidecar's
default options), in a subprocess of its own: JVM options are fixed once a process starts one."""
import json
import subprocess
import sys

CASE = r"""
import json
import jpype
from kafka_jmx_sidecar.exporter.source.jmx import JmxSettings, start_jvm
from kafka_jmx_sidecar.exporter.source.jmx.jvm import shrink_heap
from kafka_jmx_sidecar.exporter.config.sidecar import DEFAULT_JVM_OPTIONS

start_jvm(JmxSettings(jvm_options=DEFAULT_JVM_OPTIONS))
bean = jpype.JClass("java.lang.management.ManagementFactory").getMemoryMXBean()
committed = lambda: int(bean.getHeapMemoryUsage().getCommitted())
start = committed()
# what a read leaves: 64 MiB of arrays that lived long enough to be promoted, now garbage
ArrayList, JByte = jpype.JClass("java.util.ArrayList"), jpype.JArray(jpype.JByte)
held = ArrayList()
for _ in range(64):
    held.add(JByte(1 << 20))
jpype.JClass("java.lang.System").gc()  # promoted, still held
held.clear()
grown = committed()
shrink_heap()
print(json.dumps({"start": start, "grown": grown, "shrunk": committed()}))
"""


def test_a_full_collection_gives_the_heap_a_read_grew_back():
    out = subprocess.run([sys.executable, "-c", CASE], capture_output=True, text=True, timeout=120, check=True)
    heap = json.loads(out.stdout.splitlines()[-1])
    assert heap["grown"] > 64 << 20  # the 64 MiB held made the heap grow past it
    assert heap["shrunk"] < 32 << 20  # -Xms16m and at most 30% free (-XX:MaxHeapFreeRatio=30) of almost nothing
