"""Greedy completions served over HTTP against the in-process engine on the same model file."""

from __future__ import annotations

from roles.protocol import SamplingFields
from roles.scheduler.engine.core import Engine
from roles.scheduler.engine.settings import engine_config
from roles.tokenizer.text_tokenizer import load_text_tokenizer


def assert_served_greedy_equals_engine(
    server, model_path: str, prompts: list[str], max_tokens: int = 16
) -> None:
    """Each prompt's served greedy completion (text and token count) equals the engine's on ``model_path``."""
    engine = Engine(engine_config(model_path=model_path, kv_cache_tokens=1024, max_running_requests=4))
    tokenizer = load_text_tokenizer(model_path)
    client = server.openai_client(timeout_s=60)
    name = client.models.list().data[0].id
    for prompt in prompts:
        served = client.completions.create(model=name, prompt=prompt, max_tokens=max_tokens, temperature=0)
        [ids] = engine.generate(
            [tokenizer.encode(prompt)], SamplingFields(temperature=0, max_tokens=max_tokens)
        )
        expected = tokenizer.decode([i for i in ids if i not in engine.eos_token_ids])
        assert served.choices[0].text == expected
        assert served.usage.completion_tokens == len(ids)
