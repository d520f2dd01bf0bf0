"""The differential tests' judge of unmoved values (harness/compare.py), on expositions written here."""
from harness import compare

FETCH_075 = ("kafka_network_requestmetrics_totaltimems", '{request="Fetch",quantile="0.75",}')


def _reads(count_before: str, count_after: str, count_name: str = "kafka_network_requestmetrics_totaltimems"):
    head = ("# TYPE kafka_network_requestmetrics_totaltimems untyped\n"
            'kafka_network_requestmetrics_totaltimems{request="Fetch",quantile="0.75",} 509.0\n'
            'kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.75",} 3.0\n')
    return (compare.parse(head + f'{count_name}{{request="Fetch",}} {count_before}\n'),
            compare.parse(head + f'{count_name}{{request="Fetch",}} {count_after}\n'))


def test_a_quantile_whose_histogram_took_samples_between_the_reads_counts_as_moved():
    # the CI case: jmx_exporter printed 509.0 before and after, the read between saw 509.75
    before, after = _reads("1200.0", "1204.0")
    assert FETCH_075 not in compare.unmoved(before, after)


def test_a_quantile_whose_histogram_count_did_not_move_counts_as_unmoved():
    before, after = _reads("1200.0", "1200.0")
    assert FETCH_075 in compare.unmoved(before, after)


def test_the_count_is_found_under_strimzis_and_1x_names():
    for name in ("kafka_network_requestmetrics_totaltimems_count", "kafka_network_requestmetrics_totaltimems_count_total"):
        assert FETCH_075 not in compare.unmoved(*_reads("1200.0", "1201.0", name))
        assert FETCH_075 in compare.unmoved(*_reads("1200.0", "1200.0", name))


def test_a_quantile_without_a_printed_count_cannot_be_known_unmoved():
    # Produce's count is not printed: whether its histogram took a sample between the reads is unknown
    before, after = _reads("1200.0", "1200.0")
    key = ("kafka_network_requestmetrics_totaltimems", '{request="Produce",quantile="0.75",}')
    assert key not in compare.unmoved(before, after)


def test_labels_in_another_order_and_without_trailing_comma_find_their_count():
    text = ('x{quantile="0.99",request="Fetch"} 1.0\n'
            'x_count{request="Fetch"} %s\n')
    assert ("x", '{quantile="0.99",request="Fetch"}') in compare.unmoved(compare.parse(text % 5), compare.parse(text % 5))
    assert ("x", '{quantile="0.99",request="Fetch"}') not in compare.unmoved(compare.parse(text % 5), compare.parse(text % 6))
