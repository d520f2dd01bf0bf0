"""The JMX edge's text format (SidecarJmx.java) -> Python values, for what jmx_exporter tells
apart: a Float's and a BigDecimal's own text (rules match it), a null description."""
from kafka_jmx_sidecar.exporter.source.jmx.convert import decode_infos, decode_record
from kafka_jmx_sidecar.exporter.base.model import JavaNumber
from kafka_jmx_sidecar.exporter.rule_engine.leaves import Leaf


def test_numbers_keep_the_text_java_prints_for_them():
    status, values = decode_record("o\x1ff0.10000000149011612\x1fN1000.0 1E+3\x1fN1.1 1.10\x1fN2.5 2.5\x1ff1.5\x1fd0.5", [])
    assert status == "o"
    assert [(type(v).__name__, float(v), str(v)) for v in values] == [
        ("JavaNumber", 0.10000000149011612, "0.1"), ("JavaNumber", 1000.0, "1E+3"), ("JavaNumber", 1.1, "1.10"),
        ("float", 2.5, "2.5"), ("float", 1.5, "1.5"), ("float", 0.5, "0.5")]
    leaf = Leaf("d", (("type", "T"),), (), "A", None, values[2])
    assert leaf.match_string() == "d<type=T><>A: 1.10"
    assert values[0] == 0.10000000149011612 and isinstance(values[0], float)
    assert JavaNumber(1.0, "1.0000") == JavaNumber(1.0, "1.0000")


def test_a_null_description_is_not_an_empty_one():
    [(status, class_name, attrs)] = decode_infos("o\x1fC\x1fA\x1fint\x1fn\x1fB\x1fint\x1fs\x1fC\x1fint\x1fstext", 1)
    assert (status, class_name) == ("o", "C")
    assert attrs == (("A", "int", None), ("B", "int", ""), ("C", "int", "text"))
