// Dashboard entry: hash routing, project switcher, the live feed.
import { hadSession, onApiError } from "./api.js";
import { initDetail, onMemoryChanged } from "./detail.js";
import { $ } from "./dom.js";
import { followEvents } from "./live.js";
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
  live = followEvents({
    onOpen: () => { badge.dataset.state = "on"; badge.textContent = "live"; },
    onDown: () => { badge.dataset.state = "off"; badge.textContent = "reconnecting…"; },
    onEvent: (name, data) => {
      if (name === "reset") loadFeed();
      else if (["memory", "summary", "checkpoint", "session"].includes(name)) pushEvent(name, JSON.parse(data));
    },
  });
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
