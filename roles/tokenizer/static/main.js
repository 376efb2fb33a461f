// The page's entry: the API key form, the tabs (#chat, #roles, #metrics) and each view's first load.

import { apiKey, setApiKey } from "./api.js";
import { initChat, loadModels } from "./chat.js";
import { initMetrics } from "./metrics_view.js";
import { initRoles, loadRoles } from "./roles_view.js";

const VIEWS = ["chat", "roles", "metrics"];
const $ = (id) => document.getElementById(id);

function currentView() {
  const name = location.hash.slice(1);
  return VIEWS.includes(name) ? name : "chat";
}

function showView() {
  const name = currentView();
  for (const view of VIEWS) $(`view-${view}`).hidden = view !== name;
  for (const tab of document.querySelectorAll(".tabs a")) {
    tab.classList.toggle("active", tab.dataset.view === name);
  }
  if (name === "roles") loadRoles();
}

function useKey(event) {
  event.preventDefault();
  setApiKey($("api-key").value.trim());
  loadModels();
  if (currentView() === "roles") loadRoles();
}

$("api-key").value = apiKey();
$("key-form").addEventListener("submit", useKey);
window.addEventListener("hashchange", showView);
initChat();
initMetrics();
loadModels();
showView();
