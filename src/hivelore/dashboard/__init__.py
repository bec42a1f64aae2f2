"""The dashboard: server-rendered pages over the memory and team services (`hivelore dashboard`).

`routes.router(services)` is the one router; `app.create_app` composes it over this machine's stores,
and the team server can include the same router over its own services (docs/dashboard.md).
"""
