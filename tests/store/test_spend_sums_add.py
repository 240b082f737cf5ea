"""``_spend_sums.add`` leaves out zeros (a zero on either side: the other is the sum). Its
sums must be exactly those of adding every pair of fractions, zeros included, for the
vectors both ledgers really add (reservations, settlements, releases) and for random ones,
so the SQLite and Redis ledgers keep the same texts as before."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from fractions import Fraction

from backstay.store import _spend_sums as sums


def _every_pair(
    into: dict[str, sums.Vector], deltas: Iterable[Mapping[str, sums.Vector]]
) -> dict[str, sums.Vector]:
    changed: dict[str, sums.Vector] = {}
    for delta in deltas:
        for field, vector in delta.items():
            old = into.get(field)
            new = vector if old is None else tuple(a + b for a, b in zip(old, vector, strict=True))
            into[field] = changed[field] = new
    return changed


def _row(draw: random.Random, status: str) -> dict[str, object]:
    settled = status == "settled"
    return {
        "operation_id": f"op{draw.randrange(4)}",
        "tenant": draw.choice([None, "acme"]),
        "adapter": "anthropic-api",
        "model": draw.choice(["m1", "m2"]),
        "status": status,
        "estimate_usd": draw.choice([0.0, draw.random()]),
        "estimate_tokens": draw.randrange(0, 300),
        "usd": draw.choice([0.0, None, draw.random() / 7]) if settled else None,
        "tokens": draw.choice([0, draw.randrange(500)]) if settled else None,
        "prompt_tokens": draw.choice([None, draw.randrange(100)]) if settled else None,
        "output_tokens": draw.choice([None, 0, draw.randrange(100)]) if settled else None,
        "reported_usd": draw.choice([None, 0.0, draw.random() / 3]) if settled else None,
    }


def _same(left: dict[str, sums.Vector], right: dict[str, sums.Vector]) -> None:
    assert left == right
    assert {f: sums.encode(v) for f, v in left.items()} == {
        f: sums.encode(v) for f, v in right.items()
    }
    assert all(type(x) is Fraction for v in left.values() for x in v)


def test_adding_without_zeros_gives_the_sums_of_every_pair() -> None:
    draw = random.Random(11)
    fast: dict[str, sums.Vector] = {}
    slow: dict[str, sums.Vector] = {}
    for _ in range(2000):
        before = _row(draw, "reserved")
        after = _row(draw, draw.choice(["settled", "reserved"])) | {
            k: before[k] for k in ("operation_id", "tenant", "model")
        }
        deltas = draw.choice(
            [
                [sums.row_vectors(before)],  # reserved
                [sums.row_vectors(before, sign=-1), sums.row_vectors(after)],  # settled
                [sums.row_vectors(before, sign=-1)],  # released
            ]
        )
        _same(sums.add(fast, deltas), _every_pair(slow, deltas))
        _same(fast, slow)


def test_random_vectors_with_zeros_add_up_the_same() -> None:
    draw = random.Random(5)

    def vector() -> sums.Vector:
        return tuple(
            draw.choice([Fraction(0), Fraction(draw.randint(-9, 9), 2 ** draw.randrange(40))])
            for _ in range(4)
        )

    fast: dict[str, sums.Vector] = {}
    slow: dict[str, sums.Vector] = {}
    for _ in range(3000):
        deltas = [{f"f{draw.randrange(5)}": vector()} for _ in range(draw.randrange(1, 4))]
        _same(sums.add(fast, deltas), _every_pair(slow, deltas))
    _same(fast, slow)


def test_what_a_removed_row_takes_away_is_minus_what_it_adds() -> None:
    draw = random.Random(17)
    for _ in range(2000):
        row = _row(draw, draw.choice(["settled", "reserved", "released"]))
        added = sums.row_vectors(row)
        taken = sums.row_vectors(row, sign=-1)
        assert taken == {f: tuple(-1 * v for v in vector) for f, vector in added.items()}
        assert all(type(x) is Fraction for v in taken.values() for x in v)
        assert sums.row_vectors(row, sign=2) == {
            f: tuple(2 * v for v in vector) for f, vector in added.items()
        }


def test_a_use_field_is_its_adapter_and_model_as_json() -> None:
    for adapter, model in [("anthropic-api", "m1"), ('a"b', "é|x"), ("", "")]:
        assert sums.use_field(adapter, model) == "use|" + json.dumps([adapter, model])
