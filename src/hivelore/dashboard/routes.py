"""The dashboard's one router: the pages and their actions over injected services, so the same routes
serve this machine's stores (`hivelore dashboard`, app.py) and the team server's (server/dashboard.py,
which puts its session in front of them).

Every action is a POST form carrying the CSRF token (csrf.py); every text is escaped by the templates
(autoescape is on for all of them), so a lesson containing `<script>` shows as text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from importlib import resources
from typing import Protocol
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.params import Depends as Dependency
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape

from hivelore import __version__
from hivelore.dashboard import codemap, csrf, views
from hivelore.dashboard.services import TeamView
from hivelore.errors import BadInput, Forbidden, HiveloreError, NotFound
from hivelore.memory.model import KINDS, STATES, iso_from_epoch
from hivelore.memory.service import MemoryService
from hivelore.team.model import STATUSES

ACTIONS = ("archive", "restore", "forget", "commit")
DONE = {"archive": "archived", "restore": "restored", "forget": "forgot", "commit": "committed"}
STATIC = {"dashboard.css": "text/css", "dashboard.js": "text/javascript", "codemap.js": "text/javascript",
          "vendor/cytoscape.min.js": "text/javascript", "vendor/cytoscape.LICENSE": "text/plain"}  # fmt: skip
MAX_FORM_BYTES = 16_384  # an action's form is an address and a token


class Services(Protocol):
    """What a composition gives the router: context managers opening the services for one request
    (the team server's are the request's caller's), and the repositories a page may pick from."""

    def memory(self, request: Request) -> AbstractContextManager[MemoryService]: ...

    def coordination(self, request: Request) -> AbstractContextManager[TeamView]: ...

    def repos(self, request: Request) -> list[str]:
        """The repositories whose team the caller may pick (`?repo=`); [] where there is one to show."""
        ...


TEMPLATES = Environment(
    loader=PackageLoader("hivelore.dashboard", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
)
TEMPLATES.filters["when"] = iso_from_epoch


def mounted_at(base: str) -> Dependency:
    """The dependency that tells the pages where they are mounted (their links and redirects start with it)."""

    def mounted(request: Request) -> None:
        request.state.base = base

    return Depends(mounted)


def router(services: Services, base: str = "", guard: Sequence[Dependency] = ()) -> APIRouter:
    """The pages and actions under the path `base` ("" or e.g. "/dash" where the team server mounts
    them), reading and changing memory only through `services`. `guard` runs before every page and
    action (the team server's session); the static files are served without it."""
    routes = APIRouter(prefix=base, dependencies=[mounted_at(base)])
    pages = [*guard]
    routes.add_api_route("/", _home, methods=["GET"], include_in_schema=False, dependencies=pages)
    routes.add_api_route(
        "/memories", _memories(services), methods=["GET"], response_class=HTMLResponse, dependencies=pages
    )
    routes.add_api_route("/memory", _memory(services), methods=["GET"], response_class=HTMLResponse, dependencies=pages)
    routes.add_api_route("/memory/{action}", _act(services), methods=["POST"], dependencies=pages)
    routes.add_api_route("/tasks", _tasks(services), methods=["GET"], response_class=HTMLResponse, dependencies=pages)
    routes.add_api_route(
        "/tasks/{task_id}", _task(services), methods=["GET"], response_class=HTMLResponse, dependencies=pages
    )
    routes.include_router(codemap.router(services, render_page), dependencies=pages)
    routes.add_api_route("/static/{name:path}", _static, methods=["GET"], include_in_schema=False)
    return routes


def _home(request: Request) -> RedirectResponse:
    return RedirectResponse(f"{request.state.base}/memories", status_code=303)


def over_tls(request: Request) -> bool:
    """Whether the browser reached us over TLS, itself or through a load balancer that says so: then
    the cookies are `Secure`. A client that claims https over plain http only loses its own cookies."""
    return request.url.scheme == "https" or request.headers.get("x-forwarded-proto", "").lower() == "https"


def render_page(request: Request, template: str, code: int = 200, **values: object) -> HTMLResponse:
    """A rendered page (with who is signed in, on the team server); a browser without the CSRF cookie
    gets one with it."""
    token = request.cookies.get(csrf.COOKIE) or csrf.new_token()
    signed_in = getattr(request.state, "signed_in", None)
    body = TEMPLATES.get_template(template).render(
        csrf=token, version=__version__, base=request.state.base, signed_in=signed_in, **values
    )
    response = HTMLResponse(body, status_code=code)
    if request.cookies.get(csrf.COOKIE) != token:
        secure = over_tls(request)
        response.set_cookie(csrf.COOKIE, token, httponly=True, samesite="strict", secure=secure, path="/")
    return response


def _problem(request: Request, exc: Exception) -> HTMLResponse:
    status = exc.status if isinstance(exc, HiveloreError) else 400  # the team server's status for it too
    text = exc.sentence() if isinstance(exc, HiveloreError) else str(exc)
    return render_page(request, "problem.html", code=status, message=text)


def _memories(services: Services) -> Callable[..., HTMLResponse]:
    def page(
        request: Request,
        scope: str = "",
        q: str = "",
        tag: str = "",
        kind: str = "",
        state: str = "",
        tier: str = "",
        archived: bool = False,
        expiring: bool = False,
        page: int = 0,
        done: str = "",
    ) -> HTMLResponse:
        if not 0 <= page <= views.MAX_PAGE:
            return _problem(request, ValueError(f"page {page} does not exist: pages count from 0 (the first)."))
        filters = views.Filters(scope, q.strip(), tag.strip(), kind, state, tier, archived, expiring, page)
        with services.memory(request) as service:
            try:
                found = views.listing(service, filters)
            except (ValueError, HiveloreError) as exc:  # a scope or query that cannot be read, a damaged store
                return _problem(request, exc)
            chain, everywhere = service.scopes, service.scopes_known()
        return render_page(
            request,
            "memories.html",
            filters=filters,
            listing=found,
            chain=chain,
            scopes=list(dict.fromkeys([*chain, *everywhere])),
            kinds=KINDS,
            states=STATES,
            tiers=views.tier_choices(service),
            expiring_days=views.EXPIRING_DAYS,
            pages=views.page_links(filters, found),
            shown=views.SHOWN,
            done=done,
        )

    return page


def _memory(services: Services) -> Callable[..., HTMLResponse]:
    def page(request: Request, scope: str, key: str, done: str = "") -> HTMLResponse:
        with services.memory(request) as service:
            try:
                copies = views.copies_of(service, scope, key, ACTIONS)
            except (ValueError, HiveloreError) as exc:
                return _problem(request, exc)
        if not copies:
            return _problem(request, NotFound(f"no memory {scope}::{key}: it may have been forgotten."))
        return render_page(request, "memory.html", copies=copies, done=done)

    return page


def _act(services: Services) -> Callable[..., object]:
    async def act(request: Request, action: str) -> Response:
        if action not in ACTIONS:
            raise HTTPException(404)
        form = await read_form(request)
        if not csrf.valid(request.cookies.get(csrf.COOKIE), form.get(csrf.FIELD)):
            return render_page(
                request,
                "problem.html",
                code=403,
                message="this form is out of date or came from another site: reload the page and try again.",
            )
        scope, key, tier = form.get("scope", ""), form.get("key", ""), form.get("tier") or None
        try:
            with services.memory(request) as service:
                _change(service, action, scope, key, tier)
        except (ValueError, HiveloreError) as exc:  # not found, a bad address or tier, not allowed
            return _problem(request, exc)
        message = urlencode({"done": f"{DONE[action]} {scope}::{key}"})
        if action == "forget":
            return RedirectResponse(f"{request.state.base}/memories?{message}", status_code=303)
        address = urlencode({"scope": scope, "key": key})
        return RedirectResponse(f"{request.state.base}/memory?{address}&{message}", status_code=303)

    return act


def _change(service: MemoryService, action: str, scope: str, key: str, tier: str | None) -> None:
    if action == "archive":
        service.archive(scope, key, tier=tier)
    elif action == "restore":
        service.restore(scope, key, tier=tier)
    elif action == "forget":
        service.forget(scope, key, tier=tier)
    else:
        _may_commit(service, scope, key)
        refused = service.commit([(scope, key)]).not_committed
        if refused:  # the guard, or no longer staged: nothing was changed
            raise BadInput(f"{refused[0].address} was not committed: {refused[0].reason}")


def _may_commit(service: MemoryService, scope: str, key: str) -> None:
    """A commit the caller's role or token does not allow is refused as such (403), before the commit's
    report would fold that into its reasons (a 400, as for a note the guard refuses)."""
    visible = [copy for copy in service.copies([scope], key=key) if copy.memory.is_visible()]
    reason = service.refusal("commit", visible[0]) if visible else None
    if reason:
        raise Forbidden(reason)


async def read_form(request: Request) -> dict[str, str]:
    """The urlencoded form's fields (the first of each), read without a multipart parser."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise HTTPException(413, "the form is larger than an action needs")
    fields = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {name: values[0] for name, values in fields.items()}


def _tasks(services: Services) -> Callable[..., HTMLResponse]:
    def page(request: Request, owner: str = "", status: str = "") -> HTMLResponse:
        try:
            with services.coordination(request) as team:
                cards, repo = team.task_board(), team.repo
            repos = services.repos(request)
        except HiveloreError as exc:  # team.db unusable, no repository shared with the caller: it says what to do
            return _problem(request, exc)
        owners = sorted({card.intent.owner for card in cards})
        shown = [
            c for c in cards if (not owner or c.intent.owner == owner) and (not status or c.intent.status == status)
        ]
        by_status = {s: [c for c in shown if c.intent.status == s] for s in STATUSES}
        return render_page(
            request,
            "tasks.html",
            repo=repo,
            repos=repos,
            by_status=by_status,
            owners=owners,
            owner=owner,
            status=status,
            statuses=STATUSES,
        )

    return page


def _task(services: Services) -> Callable[..., HTMLResponse]:
    def page(request: Request, task_id: int) -> HTMLResponse:
        try:
            with services.coordination(request) as team:
                task = team.task(task_id)
        except HiveloreError as exc:  # no such task, team.db unusable, no team store here
            return _problem(request, exc)
        return render_page(request, "task.html", task=task)

    return page


def _static(name: str) -> Response:
    if name not in STATIC:
        raise HTTPException(404)
    body = resources.files("hivelore.dashboard").joinpath("static", name).read_bytes()
    return Response(body, media_type=STATIC[name], headers={"Cache-Control": "no-cache"})
