"""Publish a resolved config as a named role with the projection the launcher would hand it.

`test` is a role for tests only: it projects every namespace and is not in the launcher's list.
"""

from launcher.role_list import ROLES
from runtime_context import publish
from runtime_context.settings import NAMESPACES

TEST_PROJECTION = frozenset(NAMESPACES)


def projection_of(role: str) -> frozenset[str]:
    return TEST_PROJECTION if role == "test" else ROLES.named(role).projection


def publish_as(resolved, role: str):
    return publish(resolved, role=role, projection=projection_of(role))
