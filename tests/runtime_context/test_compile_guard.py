"""Config reads inside torch.compile(fullgraph=True) code trace without graph breaks in enforce mode."""

import pytest
import torch

from runtime_context import NamespaceNotProjected, get_exec, get_schedule, publish, resolve
from tests.publish_as import publish_as


class ScaledByConfig(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Reads through the accessor and a captured bag, both inside the compiled region.
        return x * get_schedule().max_running_requests + get_exec().threads


def test_fullgraph_compile_reads_config_in_enforce_mode():
    publish_as(resolve(sets=["exec.threads=3", "schedule.max_running_requests=5"], environ={}), "scheduler")
    torch._dynamo.reset()
    compiled = torch.compile(ScaledByConfig(), fullgraph=True, backend="eager")
    x = torch.ones(4)
    assert torch.equal(compiled(x), x * 5 + 3)


def test_compiled_read_outside_projection_still_fails_closed():
    publish_as(resolve(environ={}), "tokenizer")
    torch._dynamo.reset()
    strict = torch.compile(ScaledByConfig(), fullgraph=True, backend="eager")
    with pytest.raises(Exception, match=r"NamespaceNotProjected\('tokenizer', 'schedule'"):
        strict(torch.ones(2))
    torch._dynamo.reset()
    lenient = torch.compile(ScaledByConfig(), backend="eager")
    with pytest.raises(NamespaceNotProjected, match="role 'tokenizer' may not read namespace 'schedule'"):
        lenient(torch.ones(2))


def read_sub_namespace(x: torch.Tensor) -> torch.Tensor:
    return x * len(get_exec().moe.namespace)


def read_shell_leaf(x: torch.Tensor) -> torch.Tensor:
    return x * get_exec().threads


@pytest.mark.parametrize(
    ("projection", "read", "namespace"),
    [
        (("exec", "model"), read_sub_namespace, "exec.moe"),  # exec without exec.moe
        (("exec.moe", "model"), read_shell_leaf, "exec"),  # exec.moe without exec: exec is a shell
    ],
    ids=["sub-namespace", "shell leaf"],
)
def test_compiled_blocked_sub_namespace_or_leaf_names_role_namespace_and_allowed_set(
    projection, read, namespace
):
    publish(resolve(environ={}), role="narrow", projection=projection)
    torch._dynamo.reset()
    with pytest.raises(Exception) as caught:
        torch.compile(read, fullgraph=True, backend="eager")(torch.ones(2))
    message = str(caught.value)
    assert f"NamespaceNotProjected('narrow', {namespace!r}" in message
    for allowed in projection:
        assert repr(allowed) in message
