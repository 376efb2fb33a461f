import json
import re

from serve_command import run_serve

from launcher.derivations import LAUNCHER_RULES
from launcher.role_list import ROLES
from runtime_context import resolve
from tests.family_checkpoints import write_family_checkpoint
from tests.publish_as import projection_of


def test_inspect_json_per_role_matches_projection_and_fingerprint(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("schedule:\n  max_running_requests: 12\n")
    result = run_serve("roles", "inspect", "--config", str(cfg), "--format", "json")
    assert result.returncode == 0, result.stderr
    processes = json.loads(result.stdout)["processes"]
    assert [p["role"] for p in processes] == ROLES.names()  # the list itself is pinned in test_role_list
    fingerprint = resolve(str(cfg), environ={}, rules=LAUNCHER_RULES).fingerprint
    for process in processes:
        assert process["fingerprint"] == fingerprint
        assert set(process["projection"]) == projection_of(process["role"])
        assert {leaf["key"].rsplit(".", 1)[0] for leaf in process["leaves"]} <= set(process["projection"])
    scheduler = next(p for p in processes if p["role"] == "scheduler")
    leaf = next(item for item in scheduler["leaves"] if item["key"] == "schedule.max_running_requests")
    assert leaf == {"key": "schedule.max_running_requests", "value": 12, "source": f"file {cfg}:2:25"}


def test_inspect_one_role_as_table():
    result = run_serve("roles", "inspect", "--role", "dp_controller")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("== role dp_controller  mode enforce")
    assert "parallel.load_balance" in result.stdout
    assert "model.path" not in result.stdout


def test_inspect_in_record_mode_shows_every_namespace():
    result = run_serve(
        "roles", "inspect", "--role", "dp_controller", "--set", "roles.enforcement=record", "--format", "json"
    )
    entry = json.loads(result.stdout)["processes"][0]
    assert entry["mode"] == "record"
    assert any(leaf["key"] == "model.path" for leaf in entry["leaves"])


def test_inspect_unknown_role_is_a_usage_error():
    result = run_serve("roles", "inspect", "--role", "frontend")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_inspect_shows_what_the_tokenizer_serves_and_where_the_template_comes_from(tmp_path):
    template = tmp_path / "chat.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    result = run_serve(
        "roles", "inspect", "--role", "tokenizer", "--set", f"tokenizer.chat_template={template}"
    )
    assert result.returncode == 0, result.stderr
    leaf = rf"tokenizer\.chat_template +{re.escape(str(template))} +cli --set tokenizer\.chat_template"
    assert re.search(leaf, result.stdout), result.stdout
    rows = result.stdout.split("   tokenizer:\n", 1)[1]
    assert re.search(r"kind +gpt2 \(byte-level BPE\) +/\S+SmolLM2\S+\.gguf: tokenizer\.ggml\.model", rows)
    assert re.search(r"pre_tokenizer +smollm +\S+: tokenizer\.ggml\.pre", rows)
    assert re.search(r"vocab_size +49152 ", rows)
    assert re.search(
        rf"chat_template +from the setting tokenizer\.chat_template +tokenizer\.chat_template file {template}",
        rows,
    )
    json_result = run_serve("roles", "inspect", "--format", "json")
    processes = json.loads(json_result.stdout)["processes"]
    assert [p["role"] for p in processes if "tokenizer" in p["facts"]] == ["tokenizer"]


def test_inspect_shows_the_family_and_each_layers_attention_window(tmp_path):
    folder = write_family_checkpoint("gemma3", tmp_path / "gemma3")
    result = run_serve("roles", "inspect", "--model", str(folder), "--role", "scheduler")
    assert result.returncode == 0, result.stderr
    rows = result.stdout.split("   family:\n", 1)[1]
    assert re.search(rf"family +gemma3 \(Gemma 3 text.*\) +{folder}/config\.json: architectures", rows)
    assert re.search(r"attention_windows +0-4: 8, 5: full ", rows)


def test_speculative_decoding_settings_are_the_schedulers_and_a_contradiction_exits_2():
    sets = ["--set", "exec.speculative_method=ngram", "--set", "exec.speculative_num_draft_tokens=5"]
    result = run_serve("roles", "inspect", *sets, "--format", "json")
    assert result.returncode == 0, result.stderr
    processes = {p["role"]: p for p in json.loads(result.stdout)["processes"]}
    leaves = {leaf["key"]: leaf for leaf in processes["scheduler"]["leaves"]}
    assert leaves["exec.speculative_method"]["value"] == "ngram"
    assert leaves["exec.speculative_method"]["source"] == "cli --set exec.speculative_method"
    assert leaves["exec.speculative_num_draft_tokens"]["value"] == 5
    assert (leaves["exec.speculative_ngram_min"]["value"], leaves["exec.speculative_ngram_max"]["value"]) == (
        2,
        4,
    )
    assert not any(leaf["key"].startswith("exec.speculative") for leaf in processes["tokenizer"]["leaves"])
    refused = run_serve("roles", "inspect", "--set", "exec.speculative_ngram_min=5")
    assert refused.returncode == 2
    assert "exec.speculative_ngram_min" in refused.stderr and "exec.speculative_ngram_max=4" in refused.stderr
