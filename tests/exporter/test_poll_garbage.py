"""`serve` freezes what each successful poll keeps, without a full collection first (after the
first), so a poll must leave no cyclic garbage: frozen garbage would never be freed. Real polls of
the simulator, as `serve` makes them (JMX through JPype, the rules, the recompute, the render), in
a subprocess of their own so that nothing else makes garbage meanwhile."""
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CASE = r"""
import gc, json, sys, tempfile, time
from pathlib import Path
from kafka_jmx_sidecar.exporter.commands.serve import make_collector
from kafka_jmx_sidecar.exporter.config.load import load
from kafka_jmx_sidecar.mbeans.simulator import Simulator
from kafka_jmx_sidecar.mbeans.simulator.values import LogValues

rules = Path(sys.argv[1]).read_text()
extra = ("sidecar:\n  connections: 2\n  namesRefreshSeconds: 0.5\n"
         "  recompute: {semantics: kafka-4.1, mode: all, minInsyncReplicas: {default: 2}}\n")
sim = Simulator.start(partitions=600, log_values=LogValues(seed=1))  # values that move between polls
try:
    cfg = Path(tempfile.mkdtemp()) / "sidecar.yml"
    cfg.write_text(f"jmxUrl: {sim.url}\n{rules}\n{extra}")
    c = make_collector(load(str(cfg)), str(cfg))
    c._freeze_gc = False  # measured here: what a freeze would have kept
    found = []
    for _ in range(3):
        gc.collect()
        gc.disable()
        assert c.poll_once(), c.last_error
        gc.set_debug(gc.DEBUG_SAVEALL)  # what it finds stays in gc.garbage, to be named
        unreachable = gc.collect()
        found.append([unreachable] + sorted({type(o).__name__ for o in gc.garbage}))
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
        time.sleep(0.6)  # the names are read again at the next poll
    c.stop()
    c.close()
finally:
    sim.stop()
print(json.dumps(found))
"""


def _polls(rules: Path) -> list:
    out = subprocess.run([sys.executable, "-c", CASE, str(rules)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_polls_with_strimzis_rules_leave_no_cyclic_garbage():
    assert _polls(REPO.parent / "shared" / "reference" / "rules" / "strimzi-kafka-metrics.yml") == [[0]] * 3  # unreachable objects found after each poll: none


def test_polls_with_the_health_rules_and_the_recompute_leave_no_cyclic_garbage():
    assert _polls(REPO / "rules" / "kafka-health.yml") == [[0]] * 3
