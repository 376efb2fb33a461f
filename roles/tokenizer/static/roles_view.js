// The roles view, from GET /roles: the role x namespace projection matrix, then one card per process with
// its pid, fingerprint, mode and every published leaf with its value and source.

import { apiFetch, Unauthorized } from "./api.js";

const $ = (id) => document.getElementById(id);

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function row(tag, cells) {
  const tr = document.createElement("tr");
  tr.append(...cells.map((cell) => (cell instanceof Node ? cell : element(tag, "", cell))));
  return tr;
}

const who = (process) => (process.instance == null ? process.role : `${process.role}[${process.instance}]`);
const shown = (value) => (typeof value === "string" ? value : JSON.stringify(value));

function renderMatrix(processes) {
  const namespaces = [...new Set(processes.flatMap((process) => process.projection || []))].sort();
  const head = row("th", ["process", ...namespaces.map((namespace) => element("th", "namespace", namespace))]);
  const body = processes.map((process) => {
    const covered = new Set(process.projection || []);
    const cells = namespaces.map((namespace) =>
      covered.has(namespace) ? element("td", "on", "●") : element("td", "off", "·"),
    );
    return row("td", [element("th", "", who(process)), ...cells]);
  });
  $("roles-matrix").replaceChildren(element("thead"), element("tbody"));
  $("roles-matrix").tHead.append(head);
  $("roles-matrix").tBodies[0].append(...body);
}

function processCard(process, isOpen) {
  const card = element("details", "panel process");
  card.dataset.role = who(process);
  card.open = isOpen;
  const summary = element("summary");
  summary.append(element("span", "process-name", who(process)));
  if (process.error) {
    summary.append(element("span", "error", process.error));
    card.append(summary);
    return card;
  }
  summary.append(
    element("span", "meta", `pid ${process.pid}`),
    element("span", "meta", `mode ${process.mode}`),
    element("span", "meta", `${process.leaves.length} leaves`),
    element("code", "fingerprint", process.fingerprint),
  );
  const table = element("table", "leaves");
  table.append(row("th", ["key", "value", "source"]));
  for (const leaf of process.leaves) {
    table.append(row("td", [element("td", "key", leaf.key), shown(leaf.value), leaf.source]));
  }
  card.append(summary, table);
  return card;
}

export async function loadRoles() {
  try {
    const { processes, at } = await (await apiFetch("/roles")).json();
    renderMatrix(processes);
    $("roles-processes").replaceChildren(...processes.map((process, i) => processCard(process, i === 0)));
    $("roles-at").textContent = `${processes.length} processes, read ${new Date(at * 1000).toLocaleTimeString()}`;
  } catch (error) {
    if (!(error instanceof Unauthorized)) $("roles-at").textContent = error.message;
  }
}

export function initRoles() {
  $("roles-refresh").addEventListener("click", loadRoles);
}
