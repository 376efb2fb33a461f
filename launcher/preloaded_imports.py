"""What the preloaded parent (launcher/preloaded_parent.py) imports, run by importing this module there: every
preloading role's modules, with the cyclic garbage collector off meanwhile and the objects they made frozen
after (``gc.freeze``), as the gc module's documentation advises for a parent that forks without exec.

Off: the imports make some 100k objects, and collecting while they are made took 8% of the parent's import
time (0.05 s on the Zen 3, the parent's imports being the longest stretch before READY). Frozen: no
collection in a forked role walks those objects again, and walking them would write to their headers, so
copy the pages the roles otherwise share with the parent. Nothing else imports this module.
"""

from __future__ import annotations

import gc
import importlib

from launcher.preloaded_parent import preload_modules
from launcher.role_list import ROLES


def _import_frozen() -> None:
    gc.disable()
    try:
        for name in preload_modules(ROLES):
            importlib.import_module(name)
    finally:
        gc.freeze()
        gc.enable()


_import_frozen()
