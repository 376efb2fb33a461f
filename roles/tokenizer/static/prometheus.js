// The Prometheus text exposition format, read back into samples, and the few sums the charts need.

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"/g;
const SPECIAL = { "+Inf": Infinity, "-Inf": -Infinity, NaN: NaN };

// [{name, labels: {label: value}, value}] for every sample line; comments and blank lines skipped.
export function parseSamples(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    const match = SAMPLE.exec(line.trim());
    if (!match || line.trim().startsWith("#")) continue;
    const labels = {};
    for (const [, label, value] of (match[2] || "").matchAll(LABEL)) {
      labels[label] = value.replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
    }
    const value = match[3] in SPECIAL ? SPECIAL[match[3]] : Number(match[3]);
    samples.push({ name: match[1], labels, value });
  }
  return samples;
}

const named = (samples, name) => samples.filter((sample) => sample.name === name);
const sum = (samples) => samples.reduce((total, sample) => total + sample.value, 0);

// The sum over every series of one counter or gauge; null when it has no samples.
export function total(samples, name) {
  const found = named(samples, name);
  return found.length ? sum(found) : null;
}

// {sum, count} of a histogram over every series; null when it has no _count.
export function histogram(samples, family) {
  const counts = named(samples, `${family}_count`);
  return counts.length ? { sum: sum(named(samples, `${family}_sum`)), count: sum(counts) } : null;
}

// {labelValue: value} of one gauge's series by one label (a scheduler's instance).
export function byLabel(samples, name, label) {
  return Object.fromEntries(named(samples, name).map((sample) => [sample.labels[label], sample.value]));
}
