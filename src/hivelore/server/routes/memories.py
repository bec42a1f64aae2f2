"""Memories on the team server (`/v1/memories…`): write, read, search, list, context, archive, restore,
forget, import, and the change feed a client's mirror follows.

Every route checks the token's power (`may_read`, `may_write`) and its scope allow-list, then calls
the memory service composed over the caller's spaces (server/memories.py): the rules are the ones a
machine runs. A read names the scopes it reads, narrowest first (a client sends its folder's chain);
with none, every scope the caller's spaces hold. Writes sent with an `Idempotency-Key` header are
applied once however often they are retried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

import psycopg
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError

from hivelore import errors
from hivelore.errors import BadInput
from hivelore.memory.model import Memory, now_iso
from hivelore.memory.scope import Chain, parse
from hivelore.memory.transfer import ImportRecord
from hivelore.records import replace
from hivelore.schemas import MemoryOut
from hivelore.server import auth
from hivelore.server.logs import request_id
from hivelore.server.memories import PROVENANCE_KEYS, Membership, TeamMemories, memberships
from hivelore.server.postgres import idempotency
from hivelore.server.routes.data import SwitchOut
from hivelore.server.routes.dependencies import Caller, Conn

router = APIRouter(prefix="/v1/memories", tags=["memories"])

MAX_IMPORT = 500  # records per import request
MAX_BATCH = 100  # writes per batch request: each is its own transaction, all on one pooled connection
WRITE_PATH = router.prefix  # what a write's idempotency fingerprint names, single or in a batch
MAX_CHANGES = 1000  # rows per page of the change feed
Scopes = Annotated[list[str] | None, Query(alias="scope", description="scopes to read, narrowest first")]
ChainScopes = Annotated[
    list[str] | None, Query(alias="chain", description="the folder's chain, narrowest first (default: the scopes)")
]
IdempotencyKey = Annotated[str | None, Header(description="a write retried with the same key is applied once")]


class Provenance(BaseModel):
    agent: str = ""
    session: str = ""
    repo: str = ""
    branch: str = ""
    commit: str = ""


class WriteIn(BaseModel):
    scope: str
    key: str
    value: str
    tags: list[str] = Field(default_factory=list)
    kind: str | None = None
    ttl_days: float | None = None
    state: str = "committed"
    space: str | None = Field(default=None, description="org:NAME or personal; by default the scope's sharing decides")
    provenance: Provenance = Field(default_factory=Provenance)
    when: str | None = Field(default=None, description="the symptoms in plain words, searched with the value")
    cites: dict[str, str] = Field(
        default_factory=dict,
        description="the code it cites (symbol id or file path) with its hash, as the writer's code graph resolved"
        " them: kept as sent (the server holds no code)",
    )


class Stored(BaseModel):
    memory: MemoryOut
    space: str = Field(description="org:NAME (an organisation's shared space) or personal")


class WriteOut(Stored):
    created: bool
    revived: bool
    notices: list[str]


class BatchWriteIn(BaseModel):
    write: dict[str, Any] = Field(description="what `POST /v1/memories` takes (checked per write, not per batch)")
    idempotency_key: str | None = Field(
        default=None, description="as the Idempotency-Key header of a single write: the same key, the same write"
    )


class BatchIn(BaseModel):
    writes: list[BatchWriteIn] = Field(description=f"at most {MAX_BATCH}, applied in order")


class BatchResultOut(BaseModel):
    status: int = Field(description="the HTTP status this write would have had alone")
    answer: WriteOut | None = Field(default=None, description="with status 200: what a single write answers")
    error: str | None = Field(default=None, description="otherwise: one sentence, as a single write's error")
    code: str | None = Field(default=None, description="otherwise: the error's code (docs/server.md)")
    request_id: str | None = None


class BatchOut(BaseModel):
    results: list[BatchResultOut] = Field(description="one per write, in the order sent")


class AddressIn(BaseModel):
    scope: str
    key: str
    space: str | None = Field(default=None, description="org:NAME or personal; by default the copy reads show")


class HitOut(Stored):
    score: float
    relevance: float


class SearchOut(BaseModel):
    scopes: list[str]
    hits: list[HitOut]


class ListOut(BaseModel):
    scopes: list[str]
    memories: list[Stored]


class ContextOut(BaseModel):
    scopes: list[str]
    text: str
    shown: list[Stored]
    total: int


class ForgetOut(BaseModel):
    forgotten: str
    space: str


class ImportIn(BaseModel):
    records: list[dict[str, object]] = Field(description=f"export records (JSONL lines), at most {MAX_IMPORT}")
    space: str | None = None
    skip_invalid: bool = False


class ImportOut(BaseModel):
    written: list[str]
    unchanged: list[str]
    rejected: list[str]


class Gone(BaseModel):
    space: str
    scope: str
    key: str


class Change(Stored):
    seq: int


class ChangesOut(BaseModel):
    cursor: int = Field(description="pass it as `since` to get what changes next")
    more: bool = Field(description="true when another page is waiting: ask again at once")
    spaces: list[str] = Field(description="every space the caller reads now; a mirror drops any other")
    shared: dict[str, list[str]] = Field(description="per organisation space, the scopes it shares")
    switched_off: list[SwitchOut] = Field(description="repositories the caller's organisations switched off")
    memories: list[Change]
    gone: list[Gone]


def _service(
    request: Request,
    conn: Conn,
    who: auth.Caller,
    scopes: list[str],
    provenance: Provenance | None = None,
    spaces: Sequence[Membership] | None = None,
) -> TeamMemories:
    return TeamMemories(
        conn,
        who,
        scopes,
        quota=request.app.state.limits.active_memories,
        provenance=provenance.model_dump() if provenance else None,
        meaning=request.app.state.meaning,
        known=spaces,
    )


def _reading(
    request: Request, conn: Conn, who: auth.Caller, scopes: list[str] | None, chain: list[str] | None
) -> tuple[TeamMemories, list[str]]:
    """The service for a read, and the scopes it reads: `scopes` (every scope the caller's spaces
    hold when none are given), seen from the folder `chain` (which decides which copy of a key
    shadows another; the scopes read when none is given). Only what the token may see is read."""
    who.may_read()
    asked = [str(parse(s)) for s in scopes or []]
    service = _service(request, conn, who, [str(parse(s)) for s in chain or []])
    if not asked:
        asked = service.scopes_in_vault()
    allowed = [s for s in asked if who.allows(s)]
    if asked and not allowed:
        who.may_use_scope(asked[0])
    if not chain:
        service.chain = Chain(tuple(parse(s) for s in allowed or ["global"]), None)
    return service, allowed


def _stored(service: TeamMemories, memory: Memory, space: str) -> Stored:
    return Stored(memory=MemoryOut.of(memory), space=service.part_of_space(space))


@router.post("", response_model=WriteOut)
def write(
    body: WriteIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    who.may_write()
    return JSONResponse(_written(request, conn, who, body, idempotency_key))


@router.post("/batch", response_model=BatchOut)
def write_batch(body: BatchIn, request: Request, who: Caller, conn: Conn) -> JSONResponse:
    """Each write as `POST /v1/memories` would answer it alone, in order: one refused (the guard, a
    scope, the quota) answers its status and sentence, and the writes after it go on. Each is its own
    transaction, so a batch cut short (the server or the database gone) kept the writes before the cut,
    and a client that sends it again with the same keys gets their first answers, writing nothing twice."""
    who.may_write()
    if len(body.writes) > MAX_BATCH:
        raise BadInput(f"a batch holds at most {MAX_BATCH} writes, not {len(body.writes)}: send the rest in another")
    spaces = memberships(conn, who.user_id)  # once a batch: what each write's service starts from
    results = [_batch_result(request, conn, who, item, spaces) for item in body.writes]
    return JSONResponse({"results": results})


def _batch_result(
    request: Request,
    conn: psycopg.Connection,
    who: auth.Caller,
    item: BatchWriteIn,
    spaces: Sequence[Membership],
) -> dict[str, object]:
    try:
        write_in = WriteIn.model_validate(item.write)
    except ValidationError as exc:
        return _failure(request, BadInput(_invalid(exc)))
    try:
        return {"status": 200, "answer": _written(request, conn, who, write_in, item.idempotency_key, spaces)}
    except psycopg.DataError as exc:  # a value out of the database's range, as app.py answers it alone
        reason = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else "it is out of range"
        return _failure(request, BadInput(f"the write holds a value the database cannot store: {reason}"))
    except (errors.HiveloreError, ValueError, LookupError) as exc:
        reported = errors.reported(exc)
        if reported is None or isinstance(reported, errors.Unavailable | errors.Busy):
            raise  # a bug, or the database: the whole batch is answered as a single write would be
        return _failure(request, reported)


def _failure(request: Request, error: errors.HiveloreError) -> dict[str, object]:
    """One write's error, as app.py's table would answer it alone."""
    status, code = errors.answer_of(error)
    return {"status": status, "error": error.sentence(), "code": code, "request_id": request_id(request)}


def _invalid(exc: ValidationError) -> str:
    found = exc.errors()
    where = ".".join(str(part) for part in found[0]["loc"]) if found else "the write"
    message = str(found[0]["msg"]).rstrip(".") if found else "is not valid"
    return f"{where}: {message[0].lower() + message[1:] if message else 'is not valid'}"


def _written(
    request: Request,
    conn: psycopg.Connection,
    who: auth.Caller,
    body: WriteIn,
    idempotency_key: str | None,
    spaces: Sequence[Membership] | None = None,
) -> dict[str, object]:
    """One write, alone or in a batch (the token's power is checked by the caller): WriteOut's fields."""
    who.may_use_scope(str(parse(body.scope)))

    def run() -> dict[str, object]:
        service = _service(request, conn, who, [body.scope], body.provenance, spaces)
        result = service.write(
            body.scope,
            body.key,
            body.value,
            tags=body.tags,
            kind=body.kind,
            ttl_days=body.ttl_days,
            state=body.state,
            tier=body.space,
            when=body.when,
            cited=body.cites,
        )
        # WriteOut's fields, built as JSON without validating the service's own memory into models again.
        return {
            "memory": result.memory.to_dict(),
            "space": result.tier,
            "created": result.created,
            "revived": result.revived,
            "notices": service.notices,
        }

    return _once(request, conn, who, body, idempotency_key, run, WRITE_PATH)


@router.get("/read")
def read(scope: str, key: str, request: Request, who: Caller, conn: Conn) -> Stored:
    who.may_read()
    who.may_use_scope(str(parse(scope)))
    service = _service(request, conn, who, [scope])
    copy = service.find(scope, key)
    return _stored(service, copy.memory, copy.origin)


@router.get("/search")
def search(
    q: str,
    request: Request,
    who: Caller,
    conn: Conn,
    scopes: Scopes = None,
    chain: ChainScopes = None,
    limit: int | None = None,
) -> SearchOut:
    service, read = _reading(request, conn, who, scopes, chain)
    hits = service.search(q, read, limit)
    return SearchOut(
        scopes=read,
        hits=[
            HitOut(**_stored(service, h.row.memory, h.row.origin).model_dump(), score=h.score, relevance=h.relevance)
            for h in hits
        ],
    )


@router.get("")
def list_memories(
    request: Request, who: Caller, conn: Conn, scopes: Scopes = None, include_hidden: bool = False
) -> ListOut:
    service, read = _reading(request, conn, who, scopes, None)
    copies = service.listed(read, include_hidden)
    return ListOut(scopes=read, memories=[_stored(service, c.memory, c.origin) for c in copies])


@router.get("/context")
def context(
    request: Request, who: Caller, conn: Conn, scopes: Scopes = None, budget_chars: int | None = None
) -> ContextOut:
    """The session-start block for a folder whose chain is `scopes`."""
    service, _ = _reading(request, conn, who, scopes, None)
    selection = service.context(budget_chars)
    return ContextOut(
        scopes=service.scopes,
        text=service.render_context(selection),
        shown=[_stored(service, r.row.memory, r.row.origin) for r in selection.shown],
        total=selection.total,
    )


def _changing(request: Request, conn: Conn, who: auth.Caller, body: AddressIn) -> TeamMemories:
    who.may_write()
    who.may_use_scope(str(parse(body.scope)))
    return _service(request, conn, who, [body.scope])


@router.post("/archive", response_model=Stored)
def archive(
    body: AddressIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    def run() -> dict[str, object]:
        service = _changing(request, conn, who, body)
        memory = service.archive(body.scope, body.key, tier=body.space)
        return Stored(memory=MemoryOut.of(memory), space=service.changed_part).model_dump(mode="json")

    return JSONResponse(_once(request, conn, who, body, idempotency_key, run))


@router.post("/restore", response_model=Stored)
def restore(
    body: AddressIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    def run() -> dict[str, object]:
        service = _changing(request, conn, who, body)
        memory = service.restore(body.scope, body.key, tier=body.space)
        return Stored(memory=MemoryOut.of(memory), space=service.changed_part).model_dump(mode="json")

    return JSONResponse(_once(request, conn, who, body, idempotency_key, run))


@router.post("/forget", response_model=ForgetOut)
def forget(
    body: AddressIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    def run() -> dict[str, object]:
        service = _changing(request, conn, who, body)
        service.forget(body.scope, body.key, tier=body.space)
        return ForgetOut(forgotten=f"{parse(body.scope)}::{body.key}", space=service.changed_part).model_dump()

    return JSONResponse(_once(request, conn, who, body, idempotency_key, run))


def _once(
    request: Request,
    conn: psycopg.Connection,
    who: auth.Caller,
    body: BaseModel,
    idempotency_key: str | None,
    run: Callable[[], dict[str, object]],
    path: str | None = None,
) -> dict[str, object]:
    """A change replayed with its key (its answer was lost) answers as the first time, and changes
    nothing again: a replayed forget must not remove what a teammate wrote since.

    The answer is `run()`'s model already dumped as JSON (the form a replay reads back), so the
    routes send it as it is (FastAPI validates no Response against `response_model`): validating it
    again into the model, then FastAPI once more, only spent a write's CPU. `path`: the route the
    fingerprint names (a write in a batch names the single write's, so either may replay the other)."""
    print_ = idempotency.fingerprint("POST", path or request.url.path, body.model_dump(mode="json"))
    return idempotency.once(conn, who.user_id, idempotency_key, print_, run)


@router.post("/import", response_model=ImportOut)
def import_records(
    body: ImportIn, request: Request, who: Caller, conn: Conn, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    """Records as `hivelore export` writes them. The server keeps `created`, and derives `updated` and
    `seen_count` itself; a record equal to what is stored changes nothing (a second run is a no-op)."""
    who.may_write()
    if len(body.records) > MAX_IMPORT:
        raise BadInput(f"an import request holds at most {MAX_IMPORT} records, not {len(body.records)}")

    def run() -> dict[str, object]:
        service = _service(request, conn, who, [])
        records, rejected = [], []
        for n, raw in enumerate(body.records, start=1):
            try:
                record = ImportRecord.from_json(raw, f"record {n}")
                who.may_use_scope(str(parse(record.scope)))
            except ValueError as exc:
                rejected.append(str(exc))
                continue
            except auth.Forbidden as exc:
                rejected.append(f"record {n}: {exc.sentence()}")
                continue
            provenance = {k: v for k, v in record.provenance.items() if k in PROVENANCE_KEYS}
            records.append(replace(record, updated=now_iso(), seen_count=None, provenance=provenance))
        report = service.import_records(
            records, skip_invalid=body.skip_invalid or not records, tier=body.space, unreadable=rejected
        )
        return ImportOut(written=report.written, unchanged=report.unchanged, rejected=report.rejected).model_dump()

    return JSONResponse(_once(request, conn, who, body, idempotency_key, run))


@router.get("/changes")
def changes(request: Request, who: Caller, conn: Conn, since: int = 0) -> ChangesOut:
    """What changed in the caller's spaces after `since` (0: everything), oldest first, a page at a time."""
    who.may_read()
    service = _service(request, conn, who, [])
    found = service.tier.changes(since, MAX_CHANGES)
    memories = [
        Change(**_stored(service, memory, space).model_dump(), seq=seq)
        for space, memory, seq in found.written
        if who.allows(str(memory.scope)) and service.switch_over(str(memory.scope)) is None
    ]
    return ChangesOut(
        cursor=found.cursor,
        more=found.more,
        spaces=list(service.tier.parts),
        shared={m.part: sorted(m.shared) for m in service.memberships},
        switched_off=[SwitchOut.of(s) for s in service.switched_off],
        memories=memories,
        gone=[
            Gone(space=service.part_of_space(space), scope=scope, key=key)
            for space, scope, key in found.gone
            if who.allows(scope)
        ],
    )
