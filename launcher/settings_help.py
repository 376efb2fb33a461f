"""The settings reference printed by `serve --help`, generated from the declarations."""

from __future__ import annotations

import json

from runtime_context.setting import plain
from runtime_context.settings import SETTINGS


def settings_reference() -> str:
    lines = [
        "settings (YAML `namespace: {key: value}`, env ROLESERVE_<NS>__<KEY>, or --set namespace.key=value):",
    ]
    width = max(len(key) for key in SETTINGS)
    for key, setting in SETTINGS.items():
        default = setting.default
        shown = json.dumps(plain(default))
        bounds = setting.describe_bounds()
        extra = f"; {bounds}" if bounds else ""
        secret = "; secret" if setting.secret else ""
        lines.append(f"  {key:<{width}}  {setting.type_name} = {shown}{extra}{secret}")
        lines.append(f"  {'':<{width}}    {setting.doc}")
    return "\n".join(lines)
