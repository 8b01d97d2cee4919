"""``TraceService``: who may read which trace, decided once for every handler."""

from __future__ import annotations

import pytest

from hybridinfer.control.keys import Principal
from hybridinfer.control.traces import TraceService
from hybridinfer.core.trace import Trace
from hybridinfer.errors import NotFound
from hybridinfer.store.sql import SqlStore
from hybridinfer.store.tracesink import TraceSink

ADMIN = Principal("admin-key", frozenset({"admin"}))
OWNER = Principal("app-key", frozenset({"infer"}))
OTHER = Principal("other-key", frozenset({"infer"}))


def finished(request_id: str, key_id: str, status: str = "ok") -> Trace:
    trace = Trace(request_id=request_id, key_id=key_id)
    trace.finish(status)
    return trace


async def test_the_owner_and_admins_read_a_trace_others_get_404(store: SqlStore) -> None:
    sink = TraceSink(store)
    sink.record(finished("r-1", "app-key"))
    traces = TraceService(sink)

    assert (await traces.get("r-1", OWNER))["request_id"] == "r-1"
    assert (await traces.get("r-1", ADMIN))["key_id"] == "app-key"
    with pytest.raises(NotFound) as hidden:
        await traces.get("r-1", OTHER)
    with pytest.raises(NotFound) as missing:
        await traces.get("r-2", ADMIN)
    assert hidden.value.error_code == missing.value.error_code == "unknown_trace"
    assert hidden.value.message == missing.value.message  # an id cannot be probed


async def test_recent_reads_through_the_buffer_and_filters_by_status(store: SqlStore) -> None:
    sink = TraceSink(store)
    sink.record(finished("r-1", "app-key"))
    sink.record(finished("r-2", "app-key", status="error"))
    traces = TraceService(sink)

    assert {t["request_id"] for t in await traces.recent(10)} == {"r-1", "r-2"}
    assert [t["request_id"] for t in await traces.recent(10, "error")] == ["r-2"]
    assert len(await traces.recent(1)) == 1
