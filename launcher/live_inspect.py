"""`serve roles inspect|audit --url`: fetch what every running process published, via GET /roles."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


class LiveInspectError(Exception):
    pass


def fetch_live_entries(url: str, api_key: str | None, timeout_s: float = 15) -> list[dict]:
    request = urllib.request.Request(url.rstrip("/") + "/roles")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.loads(response.read())["processes"]
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace")[:300]
        raise LiveInspectError(f"{url}/roles answered {error.code}: {detail}") from None
    except (urllib.error.URLError, OSError, ValueError, KeyError) as error:
        raise LiveInspectError(f"cannot read {url}/roles: {error}") from None
