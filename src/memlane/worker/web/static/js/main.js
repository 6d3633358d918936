// Dashboard entry: hash routing, project switcher, the live SSE connection.
import { onApiError } from "./api.js";
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

function connectLive() {
  const live = $("live");
  const source = new EventSource("/api/events");
  source.addEventListener("open", () => { live.dataset.state = "on"; live.textContent = "live"; });
  source.addEventListener("error", () => { live.dataset.state = "off"; live.textContent = "reconnecting…"; });
  for (const name of ["memory", "summary", "checkpoint", "session"]) {
    source.addEventListener(name, (event) => pushEvent(name, JSON.parse(event.data)));
  }
  source.addEventListener("reset", () => loadFeed());
  return source;
}

// Signed out, the page only says how to sign in: no views, no empty feed, no live feed.
function showSignedOut() {
  document.body.dataset.auth = "out";
  $("signin").hidden = false;
  for (const v of VIEWS) $(`view-${v}`).hidden = true;
}

async function start() {
  initDetail();
  let signedOut = false;
  onApiError((error) => {
    if (error.status === 401 && !signedOut) {
      signedOut = true;
      showSignedOut();
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
