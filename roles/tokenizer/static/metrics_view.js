// Live charts from GET /metrics, read every POLL_MS: tokens/s from the generated-tokens counter, mean
// end-to-end latency and time to first token from the histograms' _sum/_count deltas over the interval,
// and each scheduler's KV-cache usage.

import { apiFetch, Unauthorized } from "./api.js";
import { LineChart, WINDOW_MS } from "./line_chart.js";
import { byLabel, histogram, parseSamples, total } from "./prometheus.js";

const POLL_MS = 2000;
const TOKENS = "roleserve_generation_tokens_total";
const E2E_LATENCY = "roleserve_e2e_request_latency_seconds";
const TTFT = "roleserve_time_to_first_token_seconds";
const KV_USAGE = "roleserve_kv_cache_usage_ratio";

const $ = (id) => document.getElementById(id);
const seconds = (value) => (value >= 1 ? `${value.toFixed(2)} s` : `${Math.round(value * 1000)} ms`);
const percent = (ratio) => `${(ratio * 100).toFixed(ratio > 0 && ratio < 0.1 ? 1 : 0)}%`;

let charts = null;
let previous = null; // {at (ms), tokens, e2e, ttft} of the last reading
const history = { throughput: [], e2e: [], ttft: [], kv: {} }; // [{t, value}] per line

function rate(now, before, at) {
  if (now == null || before == null || now < before) return null; // absent, or the counter restarted
  return (now - before) / ((at - previous.at) / 1000);
}

// The mean of the observations made between two readings of a histogram; null when none were made.
function intervalMean(now, before) {
  if (!now || !before || now.count <= before.count) return null;
  return (now.sum - before.sum) / (now.count - before.count);
}

function lastValue(points) {
  const known = points.filter((point) => point.value != null);
  return known.length ? known[known.length - 1].value : null;
}

function record(points, t, value) {
  points.push({ t, value: Number.isFinite(value) ? value : null }); // NaN, an empty gauge, is a gap too
  while (points.length && points[0].t < t - WINDOW_MS) points.shift();
}

// What the charts read from one scrape: {tokens, e2e: {sum, count}, ttft: {sum, count}, kv: {instance: ratio}}.
export function readScrape(text) {
  const samples = parseSamples(text);
  return {
    tokens: total(samples, TOKENS),
    e2e: histogram(samples, E2E_LATENCY),
    ttft: histogram(samples, TTFT),
    kv: byLabel(samples, KV_USAGE, "instance"),
  };
}

function read(text, at) {
  const reading = { at, ...readScrape(text) };
  if (previous) {
    record(history.throughput, at, rate(reading.tokens, previous.tokens, at));
    record(history.e2e, at, intervalMean(reading.e2e, previous.e2e));
    record(history.ttft, at, intervalMean(reading.ttft, previous.ttft));
  }
  for (const [instance, ratio] of Object.entries(reading.kv)) {
    record((history.kv[`scheduler ${instance}`] ??= []), at, ratio);
  }
  previous = reading;
}

function drawFigures() {
  const throughput = lastValue(history.throughput);
  $("figure-throughput").textContent = throughput == null ? "—" : `${throughput.toFixed(1)} tokens/s`;
  const e2e = lastValue(history.e2e);
  const ttft = lastValue(history.ttft);
  $("figure-latency").textContent =
    e2e == null ? "—" : `e2e ${seconds(e2e)}` + (ttft == null ? "" : ` · TTFT ${seconds(ttft)}`);
  const kv = Object.entries(history.kv).map(([name, points]) => {
    const ratio = lastValue(points);
    return `${name}: ${ratio == null ? "—" : percent(ratio)}`;
  });
  $("figure-kv").textContent = kv.length ? kv.join(" · ") : "—";

  const now = Date.now();
  charts.throughput.draw({ "tokens/s": history.throughput }, now);
  charts.latency.draw({ "end to end": history.e2e, "time to first token": history.ttft }, now);
  charts.kv.draw(history.kv, now);
}

async function poll() {
  try {
    const text = await (await apiFetch("/metrics")).text();
    read(text, Date.now());
    drawFigures();
    $("metrics-message").textContent = "";
  } catch (error) {
    if (!(error instanceof Unauthorized)) $("metrics-message").textContent = error.message;
  }
}

export function initMetrics() {
  charts = {
    throughput: new LineChart($("chart-throughput"), (value) => String(+value.toPrecision(3))),
    latency: new LineChart($("chart-latency"), seconds),
    kv: new LineChart($("chart-kv"), percent),
  };
  poll();
  setInterval(poll, POLL_MS);
}
