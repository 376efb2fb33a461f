"""The web page at GET /, in headless Chromium (Debian's, driven by Playwright) against a running server with
an API key: the page loads without the key and says so; the chat streams; the roles view shows what /roles
returns; the charts show figures. A screenshot of each view goes to $SCREENSHOT_DIR (build/screenshots)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import threading
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect, sync_playwright
from serve_harness import ServeProcess

from roles.tokenizer.web_page import STATIC_DIR

API_KEY = "sk-page-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(os.environ.get("SCREENSHOT_DIR") or ROOT / "build" / "screenshots")
WAIT_MS = 30_000  # every wait on the page; the bundled model answers 24 tokens in well under a second
MODEL = "smollm2"  # the bundled model: the screenshots in the README show a real answer


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = {
        "http": {"api_key": API_KEY},
        "memory": {"kv_cache_tokens": 4096},
        "schedule": {"max_running_requests": 8},
    }
    with ServeProcess(tmp_path_factory.mktemp("web-page"), config, ready_timeout_s=240) as running:
        yield running


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not on PATH: `make browser` installs Debian's (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, server):
    """A fresh browser tab on the server; `page.errors` collects uncaught script errors."""
    context = browser.new_context(viewport={"width": 1000, "height": 700}, base_url=server.url)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(error))
    yield page
    context.close()


def with_key(page: Page) -> Page:
    """The key as the key form stores it, before any script of the page runs."""
    page.add_init_script(f"sessionStorage.setItem('roleserve.apiKey', {json.dumps(API_KEY)})")
    return page


def screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"{name}.png")


def test_only_the_page_and_its_files_are_open_without_the_key(server):
    page = httpx.get(server.url + "/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for asset in sorted(STATIC_DIR.iterdir()):
        assert httpx.get(f"{server.url}/static/{asset.name}").status_code == 200, asset.name
    for path in ("/static/missing.js", "/roles", "/metrics", "/v1/models", "/openapi.json"):
        assert httpx.get(server.url + path).status_code == 401, path
    assert httpx.get(server.url + "/static/missing.js", headers=AUTH).status_code == 404
    spec = httpx.get(server.url + "/openapi.json", headers=AUTH).json()
    assert not [path for path in spec["paths"] if path == "/" or path.startswith("/static")]


def test_without_the_key_the_page_says_so_and_works_once_it_is_given(page, server):
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto("/#roles")
    banner = page.locator("#auth-message")
    expect(banner).to_be_visible(timeout=WAIT_MS)
    expect(banner).to_contain_text("This server needs an API key")
    expect(banner).to_contain_text("Missing API key")
    screenshot(page, "api-key")
    page.fill("#api-key", API_KEY)
    page.click("text=Use key")
    expect(page.locator("#roles-matrix tbody tr")).to_have_count(3, timeout=WAIT_MS)
    expect(page.locator("#chat-model")).to_have_value(MODEL, timeout=WAIT_MS)
    expect(banner).to_be_hidden()
    assert all(url.startswith(server.url + "/") for url in requested), requested  # nothing from elsewhere
    assert not page.errors


def test_a_chat_message_streams_its_reply(page):
    with_key(page).goto("/#chat")
    expect(page.locator("#chat-model")).to_have_value(MODEL, timeout=WAIT_MS)
    # Every chunk the page shows is one text node added to the reply: count them as they arrive.
    page.evaluate(
        """() => {
            window.chunksShown = 0;
            new MutationObserver((records) => {
                for (const record of records)
                    for (const node of record.addedNodes)
                        if (node.nodeType === Node.TEXT_NODE && node.data) window.chunksShown++;
            }).observe(document.getElementById("transcript"), { childList: true, subtree: true });
        }"""
    )
    page.fill("#chat-max-tokens", "24")
    page.fill("#chat-temperature", "0")
    page.fill("#chat-text", "What are the three primary colors?")
    page.press("#chat-text", "Enter")
    reply = page.locator(".message.assistant").last
    expect(page.locator(".message.user")).to_have_text("What are the three primary colors?")
    expect(page.locator("#chat-status")).to_have_text("", timeout=WAIT_MS)
    expect(reply).not_to_have_class(re.compile("failed"))
    assert reply.inner_text().strip(), "the reply is empty"
    assert page.evaluate("window.chunksShown") > 1, "the reply arrived in one piece, not streamed"
    screenshot(page, "chat")
    assert not page.errors


def test_the_roles_view_shows_every_process_and_its_fingerprint(page, server):
    processes = httpx.get(server.url + "/roles", headers=AUTH).json()["processes"]
    assert {process["role"] for process in processes} == {"launcher", "tokenizer", "scheduler"}
    with_key(page).goto("/#roles")
    cards = page.locator("#roles-processes details")
    expect(cards).to_have_count(len(processes), timeout=WAIT_MS)
    matrix = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll("#roles-matrix tbody tr")].map((row) => {
            const namespaces = [...document.querySelectorAll("#roles-matrix thead th")].map((th) => th.textContent);
            const covered = [...row.cells].slice(1).map((cell, i) => cell.textContent === "●" ? namespaces[i + 1] : null);
            return [row.cells[0].textContent, covered.filter(Boolean)];
        }))"""
    )
    for process in processes:
        who = process["role"] if process["instance"] is None else f"{process['role']}[{process['instance']}]"
        card = page.locator(f'#roles-processes details[data-role="{who}"]')
        expect(card.locator(".fingerprint")).to_have_text(process["fingerprint"])
        expect(card.locator("summary")).to_contain_text(f"pid {process['pid']}")
        assert card.locator(".leaves tr").count() == len(process["leaves"]) + 1  # and the header row
        assert matrix[who] == sorted(process["projection"]), who
    screenshot(page, "roles")
    assert not page.errors


def keep_generating(server, stop: threading.Event) -> None:
    body = {"model": MODEL, "prompt": "Hello", "max_tokens": 16, "ignore_eos": True}
    while not stop.is_set():
        httpx.post(server.url + "/v1/completions", json=body, headers=AUTH, timeout=30).raise_for_status()


def test_the_charts_show_figures_while_requests_run(page, server):
    with_key(page).goto("/#metrics")
    stop = threading.Event()
    load = threading.Thread(target=keep_generating, args=(server, stop), daemon=True)
    load.start()
    try:
        expect(page.locator("#figure-throughput")).to_have_text(
            re.compile(r"[1-9][\d.]* tokens/s"), timeout=WAIT_MS
        )
        expect(page.locator("#figure-latency")).to_have_text(
            re.compile(r"e2e \d.* · TTFT \d"), timeout=WAIT_MS
        )
        expect(page.locator("#figure-kv")).to_have_text(
            re.compile(r"scheduler 0: \d+(\.\d)?%"), timeout=WAIT_MS
        )
        for chart in ("throughput", "latency", "kv"):  # two readings at least, joined by a line segment
            line = page.locator(f"#chart-{chart} path.line").first
            expect(line).to_have_attribute("d", re.compile(r"L"), timeout=WAIT_MS)
    finally:
        stop.set()
        load.join(30)
    screenshot(page, "metrics")
    assert not page.errors


# What /metrics shows once prometheus-client renders it: counters as *_total with *_created beside them,
# label values that need escaping.
CLIENT_SCRAPE = r"""# HELP roleserve_generation_tokens_total Tokens generated
# TYPE roleserve_generation_tokens_total counter
roleserve_generation_tokens_total{role="tokenizer",model="a \"b\", c"} 12.0
roleserve_generation_tokens_total{role="tokenizer",model="d"} 3.0
roleserve_generation_tokens_created{role="tokenizer",model="d"} 1.7e+09
roleserve_e2e_request_latency_seconds_bucket{endpoint="/v1/completions",le="+Inf"} 4.0
roleserve_e2e_request_latency_seconds_sum{endpoint="/v1/completions"} 2.0
roleserve_e2e_request_latency_seconds_count{endpoint="/v1/completions"} 4.0
roleserve_e2e_request_latency_seconds_created{endpoint="/v1/completions"} 1.7e+09
roleserve_time_to_first_token_seconds_sum 0.5
roleserve_time_to_first_token_seconds_count 5.0
roleserve_kv_cache_usage_ratio{role="scheduler",instance="0"} 0.25
roleserve_kv_cache_usage_ratio{role="scheduler",instance="1"} NaN
"""


def test_the_charts_read_the_metric_names_before_and_after_the_move_to_prometheus_client(page):
    page.goto("/")
    read = "(text) => import('/static/metrics_view.js').then((view) => view.readScrape(text))"
    scrape = page.evaluate(read, CLIENT_SCRAPE)
    assert scrape["tokens"] == 15
    assert scrape["e2e"] == {"sum": 2, "count": 4} and scrape["ttft"] == {"sum": 0.5, "count": 5}
    assert scrape["kv"]["0"] == 0.25 and math.isnan(scrape["kv"]["1"])
