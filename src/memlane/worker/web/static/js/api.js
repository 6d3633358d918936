// The dashboard's HTTP client: same-origin fetch with the HttpOnly session cookie and this
// tab's session key. The browser sends the cookie to every port of the host (another local
// user's server too), so the worker wants the key with it: the sign-in hands it over in the
// URL fragment (no server sees it) and the tab keeps it in sessionStorage, which belongs to
// this origin, port included, and lasts as long as the tab (reloads too; a new tab signs in).

const KEY_STORE = "memlane.session";
const signedIn = /^#session=([0-9a-f]+)$/.exec(window.location.hash);
if (signedIn) {
  sessionStorage.setItem(KEY_STORE, signedIn[1]);
  history.replaceState(null, "", window.location.pathname + window.location.search);
}

/** The headers that say this tab is signed in (with the cookie the browser adds). */
function sessionHeaders() {
  const key = sessionStorage.getItem(KEY_STORE);
  return key ? { "X-Memlane-Session": key } : {};
}

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
  const headers = { Accept: "application/json", ...sessionHeaders() };
  const init = { method, credentials: "same-origin", headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(url, init);
  if (!response.ok) throw await failure(response);
  answered = true;
  return response.json().catch(() => null);
}

/** The ApiError of a refused request, after telling the listeners. */
async function failure(response) {
  const error = new ApiError(response.status, await response.json().catch(() => null));
  listeners.forEach((fn) => fn(error));
  return error;
}

/**
 * The live feed's stream (Server-Sent Events) read with fetch: EventSource cannot send the
 * session key. Resolves to the response once the worker accepted, throws an ApiError when
 * it refused (a 401 signs the page out, see onApiError) or a TypeError when unreachable.
 */
export async function openEvents(lastEventId, signal) {
  const headers = { Accept: "text/event-stream", ...sessionHeaders() };
  if (lastEventId) headers["Last-Event-ID"] = lastEventId;
  const response = await fetch("/api/events", { headers, credentials: "same-origin", cache: "no-store", signal });
  if (!response.ok) throw await failure(response);
  answered = true;
  return response;
}

export const api = {
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
