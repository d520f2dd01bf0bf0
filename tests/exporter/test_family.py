"""exporter/source/family.py: serving every member of a family at once is serving each."""
from __future__ import annotations

from array import array

import pytest

from kafka_jmx_sidecar.exporter.base.model import BeanTable
from kafka_jmx_sidecar.exporter.source.family import Family


def family(integral: bool) -> Family:
    table = BeanTable("kafka.cluster", (("type", "Partition"), ("name", "InSyncReplicasCount")),
                      "com.yammer.metrics.reporting.JmxReporter$Gauge", "Value", "", "int" if integral else "double",
                      integral, ["a", "b"], array("i", [0, 0, 1]), array("i", [0, 1, 0]), array("I", [0, 1, 2]))
    table.present[1] = 0
    return Family(("kafka.cluster", "Partition", "InSyncReplicasCount"), None, table, 5)


@pytest.mark.parametrize("integral,value,at_once", [(True, 3, True), (False, 2.5, True), (True, 2.5, False),
                                                    (False, 3, False), (True, True, False)])
def test_serving_every_member_at_once_is_serving_each(integral, value, at_once):
    """serve_all serves what serve() of each member would, in the same column objects; a value
    the table cannot hold as it is (a float in an integral table, an int or a bool elsewhere) is
    left to serve()."""
    whole, each = family(integral), family(integral)
    columns = (whole.table.values, whole.table.present)
    assert whole.serve_all(value) is at_once
    if not at_once:
        for i in range(len(whole.table)):
            whole.serve(i, value)
    for i in range(len(each.table)):
        each.serve(i, value)
    for f in (whole, each):
        assert (f.table.values.tolist(), list(f.table.present), f.table.integral) == \
            (each.table.values.tolist(), list(each.table.present), each.table.integral)
    if at_once:
        assert (whole.table.values, whole.table.present) == columns and columns[0] is whole.table.values
        assert whole.table.values.tolist() == [value] * 3 and list(whole.table.present) == [1, 1, 1]
