// Every request the page makes: the API key from sessionStorage as a Bearer token, a 401 as a banner.

const KEY_STORAGE = "roleserve.apiKey";
const banner = () => document.getElementById("auth-message");

export class Unauthorized extends Error {}

export function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE) || "";
}

export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
  banner().hidden = true;
}

// The error message of an OpenAI-shaped body ({"error": {"message": ...}}), else the status line.
async function errorMessage(response) {
  try {
    return (await response.json()).error.message;
  } catch {
    return `${response.status} ${response.statusText}`;
  }
}

function showUnauthorized(detail) {
  const hint = apiKey() ? "The API key is not accepted" : "This server needs an API key";
  banner().textContent = `${hint}: enter it in the API key field above. (${detail})`;
  banner().hidden = false;
}

// fetch() with the key; resolves to the response when it is ok, throws Unauthorized or Error otherwise.
export async function apiFetch(path, options = {}) {
  const headers = new Headers(options.headers || {});
  if (apiKey()) headers.set("Authorization", `Bearer ${apiKey()}`);
  const response = await fetch(path, { ...options, headers });
  if (response.ok) {
    banner().hidden = true;
    return response;
  }
  const detail = await errorMessage(response);
  if (response.status === 401) {
    showUnauthorized(detail);
    throw new Unauthorized(detail);
  }
  throw new Error(`${path}: ${detail}`);
}
