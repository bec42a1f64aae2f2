"""`/healthz` (the process answers) and `/readyz` (the database answers, at the schema this version
of hivelore needs): what a load balancer and an orchestrator ask."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from hivelore.server.postgres import migrate

router = APIRouter(tags=["health"])
READY_TIMEOUT_S = 2.0


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", response_model=None)
def readyz(request: Request) -> JSONResponse | dict[str, object]:
    with request.app.state.pool.connection(timeout=READY_TIMEOUT_S) as conn:
        schema, lacking = migrate.applied_version(conn), migrate.missing(conn)
    if lacking:
        needed = ", ".join(str(version) for version in lacking)
        sentence = f"the database lacks the migrations {needed} this server needs: restart it to migrate."
        return JSONResponse({"error": sentence, "code": "not_ready"}, status_code=503)
    # Recall by meaning: off, loading, backfilling or ready (postgres/vectors.py `Meaning`); the team's
    # changes heard, or looked for every quarter second while they cannot be (postgres/teamwatch.py).
    return {
        "status": "ready",
        "schema": schema,
        "meaning": request.app.state.meaning.state,
        "team_changes": "heard" if request.app.state.teamwatch.listening else "polled",
    }
