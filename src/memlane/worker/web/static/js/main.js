// Dashboard entry: hash routing, project switcher, the live SSE connection.
import { api, hadSession, onApiError } from "./api.js";
import { initDetail, onMemoryChanged } from "./detail.js";
import { $ } from "./dom.js";
import { loadFeed, loadProjects, loadSessions, loadStats, pushEvent, removeFromLists, runSearch, state } from "./views.js";

const VIEWS = ["feed", "search", "sessions", "stats"];

function route() {
  const [, view = "feed", arg] = location.hash.split("/");
  const name = VIEWS.includes(view) ? view : "feed";
  for (const v of VIEWS) $(`view-${v}`).hidden = v !== name;
  document.querySelectorAll(".tabs a").forEach((a) => a.classList.toggle("active", a.dataset.view === name));
  if (name === "feed") loadFeed();
  if (name === "sessions") loadSessions(arg ? decodeURIComponent(arg) : undefined);
  if (name === "stats") loadStats();
  if (name === "search") $("q").focus();
}

let live = null;

function connectLive() {
  const badge = $("live");
  const source = new EventSource("/api/events");
  live = source;
  source.addEventListener("open", () => { badge.dataset.state = "on"; badge.textContent = "live"; });
  source.addEventListener("error", () => {
    badge.dataset.state = "off";
    badge.textContent = "reconnecting…";
    // EventSource retries by itself after a network error, but gives up on an HTTP
    // error (a 401 once the worker restarted or the sign-in expired; a 503 when full).
    // Ask the API which: a 401 shows the sign-in notice (onApiError), else retry.
    if (source.readyState === EventSource.CLOSED) {
      api.check().then(() => setTimeout(reconnect, 5000), () => setTimeout(reconnect, 5000));
    }
  });
  for (const name of ["memory", "summary", "checkpoint", "session"]) {
    source.addEventListener(name, (event) => pushEvent(name, JSON.parse(event.data)));
  }
  source.addEventListener("reset", () => loadFeed());
  return source;
}

function reconnect() {
  if (document.body.dataset.auth !== "out") connectLive();
}

// Signed out, the page only says how to sign in: no views, no empty feed, no live feed.
// A page that was signed in also says why it no longer is.
function showSignedOut(ended) {
  document.body.dataset.auth = "out";
  if (live) live.close();
  if (ended) {
    $("signin-title").textContent = "Signed out.";
    $("signin-ended").hidden = false;
  }
  $("signin").hidden = false;
  for (const v of VIEWS) $(`view-${v}`).hidden = true;
}

async function start() {
  initDetail();
  let signedOut = false;
  onApiError((error) => {
    if (error.status === 401 && !signedOut) {
      signedOut = true;
      showSignedOut(hadSession() || (error.body && error.body.error === "session_ended"));
    }
  });
  onMemoryChanged(({ type, id }) => {
    if (type === "deleted") removeFromLists(id);
    else if (!$("view-search").hidden) runSearch();
    else route();
  });
  $("search-form").addEventListener("submit", (event) => { event.preventDefault(); runSearch(); });
  $("project").addEventListener("change", (event) => { state.project = event.target.value; route(); });
  await loadProjects();
  if (signedOut) return;
  window.addEventListener("hashchange", route);
  route();
  connectLive();
}

start();
