// The dashboard's HTTP client: same-origin fetch with the HttpOnly session cookie.

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

const listeners = new Set();
/** Called with the status of every failed request (401 shows the sign-in notice). */
export function onApiError(fn) { listeners.add(fn); }

let answered = false;
/** True once this page got an answer from the API: signed in at some point. */
export function hadSession() { return answered; }

async function request(method, path, { params, body } = {}) {
  const url = new URL(path, window.location.origin);
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, String(v));
  }
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(url, init);
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = new ApiError(response.status, data);
    listeners.forEach((fn) => fn(error));
    throw error;
  }
  answered = true;
  return data;
}

export const api = {
  // The cheapest signed-in request (a prepared document): is this page still signed in?
  check: () => request("GET", "/api/openapi.json"),
  stats: () => request("GET", "/api/stats"),
  embeddings: () => request("GET", "/api/embeddings/stats"),
  recent: (params) => request("GET", "/api/observations", { params }),
  search: (params, mode) => request("GET", mode === "keyword" ? "/api/search" : "/api/hybrid-search", { params }),
  get: (id) => request("GET", `/api/observations/${id}`),
  update: (id, body) => request("PATCH", `/api/observations/${id}`, { body }),
  remove: (id) => request("DELETE", `/api/observations/${id}`),
  sessions: (params) => request("GET", "/api/sessions", { params }),
  // In the query string: a path segment cannot carry every id (URL normalisation drops
  // "." and "..", even as %2E%2E).
  session: (id) => request("GET", "/api/session", { params: { session_id: id } }),
  timeline: (params) => request("GET", "/api/timeline", { params }),
  report: (params) => request("GET", "/api/report", { params }),
  injections: (params) => request("GET", "/api/injections", { params }),
  feedback: (body) => request("POST", "/api/feedback", { body }),
};
