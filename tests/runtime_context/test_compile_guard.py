"""Config reads inside torch.compile(fullgraph=True) code trace without graph breaks in enforce mode."""

import pytest
import torch

from runtime_context import NamespaceNotProjected, get_exec, get_schedule, publish, resolve


class ScaledByConfig(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Reads through the accessor and a captured bag, both inside the compiled region.
        return x * get_schedule().max_running_requests + get_exec().threads


def test_fullgraph_compile_reads_config_in_enforce_mode():
    publish(resolve(sets=["exec.threads=3", "schedule.max_running_requests=5"], environ={}), role="scheduler")
    torch._dynamo.reset()
    compiled = torch.compile(ScaledByConfig(), fullgraph=True, backend="eager")
    x = torch.ones(4)
    assert torch.equal(compiled(x), x * 5 + 3)


def test_compiled_read_outside_projection_still_fails_closed():
    publish(resolve(environ={}), role="tokenizer")
    torch._dynamo.reset()
    strict = torch.compile(ScaledByConfig(), fullgraph=True, backend="eager")
    with pytest.raises(Exception, match=r"NamespaceNotProjected\('tokenizer', 'schedule'"):
        strict(torch.ones(2))
    torch._dynamo.reset()
    lenient = torch.compile(ScaledByConfig(), backend="eager")
    with pytest.raises(NamespaceNotProjected, match="role 'tokenizer' may not read namespace 'schedule'"):
        lenient(torch.ones(2))
