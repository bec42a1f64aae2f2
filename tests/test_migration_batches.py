"""How `migrate --to remote` cuts this machine's memories into import requests (remote/migration.py):
never more records than asked, never a body the server refuses for its size, counted as the client
sends it (JSON with non-ASCII text escaped, six bytes a character)."""

from __future__ import annotations

import json

import pytest

from hivelore.errors import BadInput
from hivelore.memory.model import Memory
from hivelore.remote.migration import BATCH, Pace, _batches
from hivelore.server.limits import MAX_BODY_BYTES


def memory(n: int, value: str) -> Memory:
    return Memory.from_dict(
        {"scope": "global", "key": f"k-{n}", "value": value, "created": "2026-01-02T03:04:05Z",
         "updated": "2026-01-02T03:04:05Z"}
    )  # fmt: skip


def test_requests_of_non_ascii_text_stay_under_the_servers_body_limit_and_keep_the_order() -> None:
    memories = [memory(n, "Grüße aus Köln — ünïcödé " * 100) for n in range(400)]
    batches = _batches(memories, BATCH)
    assert len(batches) > 1
    assert [m for b in batches for m in b] == memories
    for batch in batches:
        body = json.dumps({"records": [m.to_dict() for m in batch], "skip_invalid": True})
        assert len(body.encode()) < MAX_BODY_BYTES


def test_a_batch_holds_at_most_the_records_asked_for() -> None:
    batches = _batches([memory(n, "short") for n in range(7)], 3)
    assert [len(b) for b in batches] == [3, 3, 1]


@pytest.mark.parametrize(("batch", "per_minute"), [(0, None), (BATCH + 1, None), (None, 0.0)])
def test_a_pace_out_of_range_is_refused_with_what_is_allowed(batch: int | None, per_minute: float | None) -> None:
    with pytest.raises(BadInput):
        Pace.of(batch, per_minute)
