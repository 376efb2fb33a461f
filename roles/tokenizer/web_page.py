"""The web page at GET /: a chat playground, the roles view and live charts, as plain files in static/.

The page holds no data: it reads /v1/models, /v1/chat/completions, /roles and /metrics in the browser with
the API key the user enters. So the page and its files load without the key (PAGE_PATHS, which the HTTP
guard leaves open) and every route it reads keeps asking for it. Not API: none of it is in /openapi.json.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from roles.tokenizer.operations import one_method_route

STATIC_DIR = Path(__file__).with_name("static")
STATIC_PREFIX = "/static"

# Exactly the page and the files it ships: any other path under /static still needs the key.
PAGE_PATHS = frozenset(
    {"/", *(f"{STATIC_PREFIX}/{path.name}" for path in STATIC_DIR.iterdir() if path.is_file())}
)


async def _web_page(request: Request) -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})


def web_page_routes() -> list[BaseRoute]:
    page = one_method_route("/", _web_page, "GET", include_in_schema=False)
    return [page, Mount(STATIC_PREFIX, StaticFiles(directory=STATIC_DIR), name="static")]
