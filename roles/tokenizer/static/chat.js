// The chat playground: the conversation so far goes to /v1/chat/completions with stream: true, and the
// reply grows in place, one text node per streamed chunk.

import { apiFetch, Unauthorized } from "./api.js";
import { sseData } from "./sse.js";

const $ = (id) => document.getElementById(id);
let messages = []; // [{role, content}] sent with every request

function addBubble(role, text) {
  const bubble = document.createElement("div");
  bubble.className = `message ${role}`;
  bubble.textContent = text;
  $("transcript").append(bubble);
  return bubble;
}

export async function loadModels() {
  const select = $("chat-model");
  try {
    const models = (await (await apiFetch("/v1/models")).json()).data;
    // An encoder's model (it has dimensions) embeds; it does not chat.
    const names = models.filter((model) => model.dimensions === undefined).map((model) => model.id);
    select.replaceChildren(...names.map((name) => new Option(name, name)));
    $("chat-status").textContent = "";
  } catch (error) {
    if (!(error instanceof Unauthorized)) $("chat-status").textContent = error.message;
  }
}

async function streamReply(reply) {
  const body = {
    model: $("chat-model").value,
    messages,
    stream: true,
    max_tokens: Number($("chat-max-tokens").value) || 64,
    temperature: Number($("chat-temperature").value),
  };
  const response = await apiFetch("/v1/chat/completions", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  let text = "";
  for await (const data of sseData(response)) {
    if (data === "[DONE]") break;
    const chunk = JSON.parse(data);
    if (chunk.error) throw new Error(chunk.error.message);
    const delta = chunk.choices?.[0]?.delta?.content;
    if (delta) {
      reply.append(delta);
      text += delta;
      $("transcript").scrollTop = $("transcript").scrollHeight;
    }
  }
  return text;
}

async function send(event) {
  event.preventDefault();
  const content = $("chat-text").value.trim();
  if (!content || $("chat-send").disabled) return;
  $("chat-text").value = "";
  $("chat-send").disabled = true;
  $("chat-status").textContent = "streaming…";
  messages.push({ role: "user", content });
  addBubble("user", content);
  const reply = addBubble("assistant reply", "");
  try {
    messages.push({ role: "assistant", content: await streamReply(reply) });
    $("chat-status").textContent = "";
  } catch (error) {
    messages.pop(); // the question stays on screen but is not resent without its answer
    reply.classList.add("failed");
    reply.textContent = error.message;
    $("chat-status").textContent = "";
  } finally {
    $("chat-send").disabled = false;
  }
}

export function initChat() {
  $("chat-form").addEventListener("submit", send);
  $("chat-text").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) send(event);
  });
  $("chat-clear").addEventListener("click", () => {
    messages = [];
    $("transcript").replaceChildren();
  });
}
