"""parallel.ep_size against the model, before anything starts: exit 2 naming the file, line and key."""

from serve_command import run_serve

from tests.moe_checkpoint import write_tiny_mixtral
from tests.tiny_checkpoint import write_tiny_llama


def validate(tmp_path, model, ep_size: int, dp_size: int = 1):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"model:\n  path: {model}\nparallel:\n  dp_size: {dp_size}\n  ep_size: {ep_size}\n")
    return cfg, run_serve("config", "validate", "--config", str(cfg))


def test_a_dense_model_cannot_be_split_into_expert_ranks(tmp_path):
    cfg, result = validate(tmp_path, write_tiny_llama(tmp_path / "dense"), 2)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{cfg}:5:12: parallel.ep_size: must be 1 for" in result.stderr
    assert "a dense model has no experts to split; got 2" in result.stderr


def test_ep_size_must_divide_the_experts_and_match_dp_size(tmp_path):
    model = write_tiny_mixtral(tmp_path / "mixtral")  # 4 experts per layer
    cfg, result = validate(tmp_path, model, 3)
    assert result.returncode == 2
    assert "must divide the model's 4 experts per layer evenly" in result.stderr
    cfg, result = validate(tmp_path, model, 2, dp_size=4)
    assert result.returncode == 2
    assert f"{cfg}:4:12: parallel.dp_size: must be 1 or equal parallel.ep_size=2" in result.stderr
    assert validate(tmp_path, model, 2, dp_size=2)[1].returncode == 0
    assert validate(tmp_path, model, 4)[1].returncode == 0
