"""The one ordered list of roles a server runs. A new role is added here and in its own package, nowhere else."""

from __future__ import annotations

from roles.dp_controller.role import ROLE as DP_CONTROLLER
from roles.encoder.role import ROLE as ENCODER
from roles.expert_backup.role import ROLE as EXPERT_BACKUP
from roles.role_description import RoleDescription
from roles.scheduler.role import ROLE as SCHEDULER
from roles.tokenizer.role import ROLE as TOKENIZER
from roles.weight_cache.role import ROLE as WEIGHT_CACHE_DAEMON
from runtime_context.projections import ordered

LAUNCHER = RoleDescription(
    "launcher",
    (
        "http",
        "tokenizer",
        "parallel",
        "encoder",
        "weight_cache",
        "expert_backup",
        "observability",
        "launcher",
    ),
    None,
    "the serve CLI: resolves the whole config, hands each child its projection, spawns and supervises",
)


class RoleList:
    """Roles in display order, looked up by name. Two roles with one name are refused."""

    def __init__(self, *roles: RoleDescription):
        self._by_name: dict[str, RoleDescription] = {}
        for role in roles:
            if role.name in self._by_name:
                raise ValueError(f"role {role.name!r} is described twice")
            self._by_name[role.name] = role

    def __iter__(self):
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def names(self) -> list[str]:
        return list(self._by_name)

    def named(self, name: str) -> RoleDescription:
        try:
            return self._by_name[name]
        except KeyError:
            raise ValueError(f"unknown role {name!r}; known roles: {', '.join(self._by_name)}") from None

    def markdown_table(self) -> str:
        """The README's role table, from the declarations themselves."""
        lines = ["| role | may read | does |", "|---|---|---|"]
        for role in self:
            lines.append(f"| {role.name} | {', '.join(ordered(role.projection))} | {role.summary} |")
        return "\n".join(lines) + "\n"

    def order(self, name: str) -> int:
        """Position for sorting; unknown names sort last."""
        names = self.names()
        return names.index(name) if name in names else len(names)


ROLES = RoleList(LAUNCHER, TOKENIZER, SCHEDULER, DP_CONTROLLER, ENCODER, WEIGHT_CACHE_DAEMON, EXPERT_BACKUP)
