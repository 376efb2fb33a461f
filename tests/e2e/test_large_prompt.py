"""A 10 MB prompt (http.max_request_bytes raised) never stalls the front: it is tokenized in one of
tokenizer.encode_threads threads while tokenizers releases the GIL, and /health answers all along."""

from __future__ import annotations

import threading
import time

import httpx
from serve_harness import ServeProcess
from server_probes import DEADLINE_S

from conftest import tiny_config

PROMPT_BYTES = 10_000_000


def test_health_answers_while_a_10_mb_prompt_is_tokenized(tiny_model, tmp_path):
    config = tiny_config(tiny_model, http={"max_request_bytes": PROMPT_BYTES + (1 << 20)})
    text = ("The quick brown fox jumps over the lazy dog. 12345 " * (PROMPT_BYTES // 50 + 1))[:PROMPT_BYTES]
    with ServeProcess(tmp_path, config) as server:
        big: dict = {}

        def send() -> None:
            big["sent"] = time.monotonic()
            body = {"model": "tiny", "prompt": text, "max_tokens": 1}
            big["response"] = httpx.post(server.url + "/v1/completions", json=body, timeout=600)
            big["answered"] = time.monotonic()

        sender = threading.Thread(target=send, daemon=True)
        answers: list[tuple[float, int]] = []  # (when answered, status) of each /health poll
        with httpx.Client(timeout=DEADLINE_S) as client:
            sender.start()
            while sender.is_alive():
                status = client.get(server.url + "/health").status_code
                answers.append((time.monotonic(), status))
                time.sleep(0.01)
        sender.join()
        response = big["response"]
        # Far beyond the context: refused once its tokens are counted, so it was tokenized in full.
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == "context_length_exceeded"
        during = [status for at, status in answers if big["sent"] < at < big["answered"]]
        assert set(during) == {200}
        # The front kept answering while the prompt was read, parsed and tokenized: many polls, not one or two
        # let through between stalls.
        assert len(during) >= 20, len(during)
