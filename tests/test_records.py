"""`@record`: a named tuple built from a plain class body, and `replace`, the copy checkers can follow."""

from __future__ import annotations

from pathlib import Path

import mypy.api
import pytest

from hivelore.records import record, replace


@record
class Claim:
    """A claim on a symbol."""

    symbol: str
    developer: str
    lines: tuple[int, ...] = ()

    @property
    def file(self) -> str:
        return self.symbol.split("::")[0]


def test_a_record_has_its_fields_in_order_its_defaults_and_its_methods() -> None:
    claim = Claim("shop/cart.py::Cart.total", "ana")

    assert claim == Claim(symbol="shop/cart.py::Cart.total", developer="ana", lines=())
    assert Claim._fields == ("symbol", "developer", "lines")  # type: ignore[attr-defined]
    assert claim.file == "shop/cart.py"
    assert Claim.__doc__ == "A claim on a symbol."


def test_a_record_cannot_be_changed_in_place() -> None:
    claim = Claim("shop/cart.py::Cart.total", "ana")

    with pytest.raises(AttributeError):
        claim.developer = "bo"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        claim.note = "mine"  # type: ignore[attr-defined]


def test_replace_gives_a_copy_with_the_changes_and_leaves_the_record_as_it_was() -> None:
    claim = Claim("shop/cart.py::Cart.total", "ana")

    moved = replace(claim, developer="bo", lines=(3, 4))

    assert moved == Claim("shop/cart.py::Cart.total", "bo", (3, 4))
    assert type(moved) is Claim
    assert claim.developer == "ana"
    with pytest.raises(ValueError, match="owner"):
        replace(claim, owner="bo")


def test_a_checker_reads_a_record_class_as_a_frozen_dataclass(tmp_path: Path) -> None:
    source = tmp_path / "uses_a_record.py"
    source.write_text(
        "from hivelore.records import record\n\n"
        "@record\nclass Claim:\n    symbol: str\n    developer: str\n\n"
        'Claim("shop/cart.py::Cart.total")\n'
        'Claim("shop/cart.py::Cart.total", "ana").developer = "bo"\n'
    )

    report, _, status = mypy.api.run([str(source), "--cache-dir", str(tmp_path / "cache"), "--no-error-summary"])

    assert status == 1
    assert 'Missing positional argument "developer" in call to "Claim"' in report
    assert 'Property "developer" defined in "Claim" is read-only' in report
