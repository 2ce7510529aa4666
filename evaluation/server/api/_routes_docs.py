"""The API's documentation as a plain page (``GET /docs``): no script, nothing from elsewhere.

FastAPI's own ``/docs`` loads Swagger UI's JavaScript from a CDN, which would put another
site's code on the leaderboard's origin; this page is rendered from the same OpenAPI document
(``/openapi.json``, for any OpenAPI tool) on the server, escaped.
"""

from html import escape

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

router = APIRouter()

_METHODS = ("get", "post", "put", "patch", "delete")


@router.get("/docs", response_class=HTMLResponse, include_in_schema=False)
def docs(request: Request) -> HTMLResponse:
    spec = request.app.openapi()
    info = spec.get("info", {})
    rows = []
    for path, operations in sorted(spec.get("paths", {}).items()):
        for method in _METHODS:
            if method in operations:
                operation = operations[method]
                codes = ", ".join(sorted(operation.get("responses", {})))
                rows.append(f"<tr><td><code>{method.upper()}</code></td><td><code>"
                            f"{escape(path)}</code></td><td>{escape(operation.get('summary', ''))}"
                            f"</td><td>{escape(codes)}</td></tr>")
    page = (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
            f"{escape(info.get('title', 'API'))}</title><style>body{{font-family:system-ui,"
            f"sans-serif;margin:2rem auto;max-width:60rem}}td{{padding:.2rem .6rem;"
            f"border-bottom:1px solid #ddd}}</style></head><body><h1>"
            f"{escape(info.get('title', 'API'))} <small>{escape(info.get('version', ''))}"
            f"</small></h1><p>{escape(info.get('description', ''))}</p><p>The full "
            f"description, for any OpenAPI tool: <a href=\"/openapi.json\">/openapi.json</a>."
            f"</p><table><tr><th>method</th><th>path</th><th>what</th><th>answers</th></tr>"
            f"{''.join(rows)}</table></body></html>")
    return HTMLResponse(page)
