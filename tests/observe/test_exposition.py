"""The text exposition format: families, escaping, cumulative histogram buckets."""

from __future__ import annotations

from backstay.observe._exposition import Exposition, Histogram


def test_a_family_has_help_type_and_one_line_per_label_set() -> None:
    out = Exposition()
    out.family("x_total", "counter", "Some things.", {(("a", "1"),): 2.0, (("a", "2"),): 0.5})
    assert out.text() == (
        "# HELP x_total Some things.\n# TYPE x_total counter\n"
        'x_total{a="1"} 2\nx_total{a="2"} 0.5\n'
    )


def test_label_values_are_escaped() -> None:
    out = Exposition()
    out.family("g", "gauge", "G.", {(("m", 'a"b\\c\nd'),): 1.0})
    assert 'g{m="a\\"b\\\\c\\nd"} 1' in out.text()


def test_histogram_buckets_are_cumulative_and_end_with_inf() -> None:
    hist = Histogram((1.0, 10.0))
    for value in (0.5, 5.0, 5.0, 50.0):
        hist.observe(value)
    out = Exposition()
    out.histogram("d_seconds", "D.", {(("f", "x"),): hist})
    lines = out.text().splitlines()
    assert 'd_seconds_bucket{f="x",le="1"} 1' in lines
    assert 'd_seconds_bucket{f="x",le="10"} 3' in lines
    assert 'd_seconds_bucket{f="x",le="+Inf"} 4' in lines
    assert 'd_seconds_sum{f="x"} 60.5' in lines
    assert 'd_seconds_count{f="x"} 4' in lines
