"""The faults an operator and a load balancer depend on, against the real server with the bundled model.

    .venv/bin/python bench/faults.py [--only load kill stop big] [--requests 1000] [--concurrency 64]

- load: --requests completions at --concurrency while /health is polled: how often it answered 503, its
  slowest answer, whether the launcher took the busy scheduler for late or hung, requests lost.
- kill: SIGKILL of the scheduler with blocking and streamed requests in flight.
- stop: SIGSTOP of the scheduler (a hung process) with the same requests in flight.
- big: a 10 MB prompt (http.max_request_bytes raised) while /health is polled: its slowest answer.

For kill and stop: the time from the signal until /health first answers 503 (detect), until a new
request is first answered with a 503 (refuse), until the server exits; the in-flight requests answered
in the OpenAI error shape (a stream: a final error event and [DONE]) or lost (a plain-text error, a cut
stream, no answer); the new requests sent every 100 ms after the signal, the longest any waited and how
many hung (no answer within --probe-timeout). Loopback only; every wait is bounded: a request without an
answer after its deadline counts as hung or lost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

import httpx

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from serve_harness import ServeProcess  # noqa: E402
from server_probes import pid_of  # noqa: E402

MODEL = "smollm2"


def start_server(config: dict) -> ServeProcess:
    """`serve` with the bundled model on a free loopback port; its output is kept for the counts."""
    return ServeProcess(pathlib.Path(tempfile.mkdtemp()), config, ready_timeout_s=300).start()


class HealthPoller:
    """/health polled from a thread: answers by status, the slowest answer, the first 503 after a mark."""

    def __init__(self, url: str, every_s: float = 0.02):
        self.url, self.every_s = url, every_s
        self.statuses: dict[int, int] = {}
        self.slowest_s = 0.0
        self.first_503_at: float | None = None
        self.is_running = True
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        with httpx.Client(timeout=30) as client:
            while self.is_running:
                started = time.monotonic()
                try:
                    status = client.get(self.url + "/health").status_code
                except httpx.HTTPError:
                    status = 0  # no answer: the server is gone
                took = time.monotonic() - started
                self.slowest_s = max(self.slowest_s, took)
                self.statuses[status] = self.statuses.get(status, 0) + 1
                if status != 200 and self.first_503_at is None:
                    self.first_503_at = started
                if status == 0:
                    return
                time.sleep(self.every_s)

    def stop(self) -> str:
        """Stop polling; what /health answered meanwhile."""
        self.is_running = False
        self.thread.join(60)
        polls = sum(self.statuses.values())
        return (
            f"/health answered {polls} polls, {polls - self.statuses.get(200, 0)} not 200, slowest "
            f"{self.slowest_s * 1000:.0f} ms"
        )


def row(fault: str, answered: str, notes: str, detect="-", refuse="-", exit="-", **extra) -> dict:
    """One line of the table: times from the fault (detect, refuse new work, exit) and the in-flight outcome."""
    return {
        "fault": fault,
        "detect": detect,
        "refuse": refuse,
        "exit": exit,
        "answered": answered,
        "notes": notes,
        **extra,
    }


# -- load ---------------------------------------------------------------------------------------------
async def run_load(url: str, num_requests: int, concurrency: int, prompt_len: int, output_len: int) -> dict:
    rng = random.Random(0)
    outcomes = {"ok": 0, "failed": 0}
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(timeout=httpx.Timeout(600), limits=limits) as client:

        async def one() -> None:
            prompt = [rng.randrange(100, 20000) for _ in range(prompt_len)]
            body = {"model": MODEL, "prompt": prompt, "max_tokens": output_len, "ignore_eos": True}
            async with gate:
                try:
                    response = await client.post(url + "/v1/completions", json=body)
                    outcomes["ok" if response.status_code == 200 else "failed"] += 1
                except httpx.HTTPError:
                    outcomes["failed"] += 1

        await asyncio.gather(*(one() for _ in range(num_requests)))
    return outcomes


def bench_load(args) -> dict:
    launcher = {"late_after_s": args.late_after_s} if args.late_after_s else {}
    server = start_server({"launcher": launcher} if launcher else {})
    try:
        poller = HealthPoller(server.url)
        started = time.monotonic()
        outcomes = asyncio.run(
            run_load(server.url, args.requests, args.concurrency, args.prompt_len, args.output_len)
        )
        elapsed = time.monotonic() - started
        health = poller.stop()
        late_after = f", launcher.late_after_s {args.late_after_s:g}" if args.late_after_s else ""
        return row(
            f"{args.requests} completions at concurrency {args.concurrency}{late_after}",
            f"{outcomes['ok']} ok / {outcomes['failed']} lost",
            f"{elapsed:.0f} s; {health}; launcher: {server.output.count('(late)')} late, "
            f"{server.output.count('hung or stopped') + server.output.count(': stuck')} hung or stuck",
        )
    finally:
        server.stop()


# -- kill / stop ---------------------------------------------------------------------------------------
def long_body(stream: bool) -> dict:
    return {
        "model": MODEL,
        "prompt": "Once upon a time",
        "max_tokens": 4000,
        "ignore_eos": True,
        "stream": stream,
    }


def blocking_request(url: str, outcome: dict, deadline_s: float) -> None:
    try:
        response = httpx.post(url + "/v1/completions", json=long_body(False), timeout=deadline_s)
    except httpx.TimeoutException:
        outcome["result"] = "no answer"
        return
    except httpx.HTTPError as error:
        outcome["result"] = f"connection error ({type(error).__name__})"
        return
    try:
        error = response.json()["error"]
        outcome["result"] = f"{response.status_code} {error['type']}" if error.get("type") else "plain"
        outcome["answered"] = response.status_code >= 500 and error["type"] == "server_error"
        outcome["message"] = error.get("message")
    except (ValueError, KeyError, TypeError):
        outcome["result"] = f"{response.status_code} not OpenAI-shaped: {response.text[:60]!r}"


def streaming_request(url: str, outcome: dict, started: threading.Event, deadline_s: float) -> None:
    last_events: list[str] = []
    try:
        with httpx.stream(
            "POST", url + "/v1/completions", json=long_body(True), timeout=deadline_s
        ) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    started.set()
                    last_events = [*last_events[-1:], line[6:]]
    except httpx.TimeoutException:
        outcome["result"] = "no answer"
        return
    except httpx.HTTPError as error:
        outcome["result"] = f"stream cut ({type(error).__name__})"
        return
    if len(last_events) == 2 and last_events[1] == "[DONE]":
        try:
            error = json.loads(last_events[0]).get("error")
        except ValueError:
            error = None
        if error and error.get("type") == "server_error":
            outcome.update(result="error event + [DONE]", answered=True, message=error.get("message"))
            return
    outcome["result"] = f"stream ended without an error event and [DONE]: {last_events[-1:]}"


def probe_new_requests(url: str, probes: list, is_running: threading.Event, timeout_s: float) -> None:
    """A new short request every 100 ms, each on its own thread: (sent at, answered at, status), status None
    for no answer within timeout_s."""
    body = {"model": MODEL, "prompt": "Hi", "max_tokens": 1}

    def one() -> None:
        sent = time.monotonic()
        try:
            status = httpx.post(url + "/v1/completions", json=body, timeout=timeout_s).status_code
        except httpx.TimeoutException:
            status = None
        except httpx.HTTPError:
            return  # the server is gone: nothing more to refuse
        probes.append((sent, time.monotonic(), status))

    senders = []
    while is_running.is_set() and len(senders) < 600:
        senders.append(threading.Thread(target=one, daemon=True))
        senders[-1].start()
        time.sleep(0.1)
    for sender in senders:
        sender.join(timeout_s + 5)


def bench_signal(args, signum: signal.Signals) -> dict:
    server = start_server({})
    try:
        deadline_s = 180
        outcomes = [{} for _ in range(4)]
        streams_started = [threading.Event(), threading.Event()]
        workers = [
            threading.Thread(target=blocking_request, args=(server.url, outcomes[0], deadline_s)),
            threading.Thread(target=blocking_request, args=(server.url, outcomes[1], deadline_s)),
            threading.Thread(
                target=streaming_request, args=(server.url, outcomes[2], streams_started[0], deadline_s)
            ),
            threading.Thread(
                target=streaming_request, args=(server.url, outcomes[3], streams_started[1], deadline_s)
            ),
        ]
        for worker in workers:
            worker.start()
        for event in streams_started:
            if not event.wait(120):
                raise SystemExit("the streamed requests never started:\n" + server.output)
        time.sleep(0.5)  # the blocking ones were sent first: they run too
        scheduler = pid_of(server, "scheduler")
        poller = HealthPoller(server.url)
        probes: list = []
        probing = threading.Event()
        probing.set()
        prober = threading.Thread(
            target=probe_new_requests, args=(server.url, probes, probing, args.probe_timeout), daemon=True
        )
        signalled = time.monotonic()
        os.kill(scheduler, signum)
        prober.start()
        try:
            server.process.wait(deadline_s)
            exited = f"{time.monotonic() - signalled:.1f} s"
        except subprocess.TimeoutExpired:
            exited = f"not within {deadline_s} s"
        probing.clear()
        for worker in workers:
            worker.join(deadline_s)
        prober.join(60)
        poller.stop()
        refused = min((answered for _, answered, status in probes if status == 503), default=None)
        hung = sum(1 for _, _, status in probes if status is None)
        longest = max((answered - sent for sent, answered, _ in probes), default=0.0)
        num_answered = sum(1 for o in outcomes if o.get("answered"))
        detect = poller.first_503_at
        statuses = sorted({str(status) for _, _, status in probes})
        return row(
            f"{signum.name} of the scheduler, 2 blocking + 2 streamed requests in flight",
            f"{num_answered} answered / {4 - num_answered} lost",
            f"new requests: {len(probes)} sent ({', '.join(statuses)}), {hung} hung, longest wait "
            f"{longest:.1f} s; tracebacks in the log: {server.output.count('Traceback')}; in flight: "
            + "; ".join(o.get("result", "?") for o in outcomes),
            detect="-" if detect is None else f"{max(0.0, detect - signalled):.1f} s",
            refuse="never" if refused is None else f"{max(0.0, refused - signalled):.1f} s",
            exit=exited,
            messages=sorted({o["message"] for o in outcomes if o.get("message")}),
        )
    finally:
        server.stop()


# -- big prompt ----------------------------------------------------------------------------------------
def bench_big(args) -> dict:
    size = args.big_mb * 1_000_000
    server = start_server({"http": {"max_request_bytes": size + (1 << 20)}})
    try:
        text = ("The quick brown fox jumps over the lazy dog. 12345 " * (size // 50 + 1))[:size]
        result = {}

        def send() -> None:
            started = time.monotonic()
            body = {"model": MODEL, "prompt": text, "max_tokens": 1}
            response = httpx.post(server.url + "/v1/completions", json=body, timeout=600)
            result.update(status=response.status_code, seconds=time.monotonic() - started)

        sender = threading.Thread(target=send)
        poller = HealthPoller(server.url, every_s=0.01)
        sender.start()
        sender.join(600)
        return row(
            f"a {args.big_mb} MB prompt (http.max_request_bytes raised)",
            f"{result.get('status')} in {result.get('seconds', 0):.1f} s",
            f"meanwhile {poller.stop()}",
        )
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", nargs="+", choices=("load", "kill", "stop", "big"), default=None)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--prompt-len", type=int, default=256, help="prompt tokens of each load request")
    parser.add_argument("--output-len", type=int, default=16, help="tokens each load request generates")
    parser.add_argument(
        "--late-after-s",
        type=float,
        default=0,
        help="load: launcher.late_after_s (0: the default, 3 s); 1 shows the margin of the default",
    )
    parser.add_argument("--big-mb", type=int, default=10)
    parser.add_argument("--probe-timeout", type=float, default=30.0, help="a new request's deadline")
    args = parser.parse_args()
    chosen = args.only or ["load", "kill", "stop", "big"]
    rows = []
    for name in chosen:
        if name == "load":
            rows.append(bench_load(args))
        elif name == "kill":
            rows.append(bench_signal(args, signal.SIGKILL))
        elif name == "stop":
            rows.append(bench_signal(args, signal.SIGSTOP))
        else:
            rows.append(bench_big(args))
        print(json.dumps(rows[-1]), flush=True)
    print()
    print("| fault | detect | refuse new work | exit | in flight | notes |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['fault']} | {row['detect']} | {row['refuse']} | {row['exit']} | {row['answered']} | {row['notes']} |"
        )


if __name__ == "__main__":
    main()
