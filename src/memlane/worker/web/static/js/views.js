// The four views: live feed, search, sessions (with timeline) and stats.
import { api } from "./api.js";
import { memoryCard, sessionCard } from "./cards.js";
import { barChart, columnChart } from "./charts.js";
import { openMemory } from "./detail.js";
import { injectionSection } from "./injections.js";
import { $, append, bdi, clear, el, fmtBytes, fmtDate, setText, toast } from "./dom.js";

export const state = { project: "" };

function scope() {
  return state.project ? { project: state.project } : {};
}

// Each view may be asked to load again before its last load finished (a click during
// start-up, a project switch): only the latest load may render, or lists duplicate.
const generation = {};
function begin(view) {
  generation[view] = (generation[view] || 0) + 1;
  const mine = generation[view];
  return () => generation[view] === mine;
}

// -- live feed ------------------------------------------------------------------------

const FEED_MAX = 200;

export async function loadFeed() {
  const current = begin("feed");
  // Cleared now, not when the answer comes: live events arriving meanwhile must stay.
  const list = clear($("feed"));
  try {
    const { memories } = await api.recent({ ...scope(), limit: 40 });
    if (!current()) return;
    for (const m of memories) {
      if (!list.querySelector(`[data-id="${CSS.escape(String(m.id))}"]`)) {
        list.append(memoryCard(m, openMemory));
      }
    }
  } catch (error) {
    if (error.status !== 401) toast(`Feed: ${error.message}`);
  }
  $("feed-empty").hidden = list.children.length > 0;
}

/** Put one SSE event at the top of the feed (if it belongs to the chosen project). */
export function pushEvent(name, data) {
  if (state.project && data.project !== state.project) return;
  const list = $("feed");
  if (name === "session") {
    list.prepend(sessionCard(data, (id) => { location.hash = `#/sessions/${encodeURIComponent(id)}`; }, { fresh: true }));
  } else {
    const old = list.querySelector(`[data-id="${CSS.escape(String(data.id))}"]`);
    if (old) old.remove();
    list.prepend(memoryCard(data, openMemory, { fresh: true, label: name === "memory" ? data.type : name }));
  }
  while (list.children.length > FEED_MAX) list.lastChild.remove();
  $("feed-empty").hidden = true;
}

export function removeFromLists(id) {
  document.querySelectorAll(`.card[data-id="${CSS.escape(String(id))}"]`).forEach((n) => n.remove());
}

// -- search ---------------------------------------------------------------------------

export async function runSearch() {
  const q = $("q").value.trim();
  if (!q) return;
  const current = begin("search");
  const params = { q, ...scope(), limit: 30, type: $("type").value };
  const since = $("since").value;
  if (since) params.since = since;
  const list = clear($("results"));
  const started = performance.now();
  try {
    const { hits } = await api.search(params, $("mode").value);
    if (!current()) return;
    clear(list);
    for (const hit of hits) list.append(memoryCard(hit, openMemory));
    const ms = Math.round(performance.now() - started);
    setText($("search-info"), `${hits.length} result${hits.length === 1 ? "" : "s"} in ${ms} ms`);
  } catch (error) {
    setText($("search-info"), `Search failed: ${error.message}`);
  }
}

// -- sessions -------------------------------------------------------------------------

export async function loadSessions(selected) {
  const current = begin("sessions");
  const list = $("sessions");
  let sessions = [];
  try {
    ({ sessions } = await api.sessions({ ...scope(), limit: 100 }));
  } catch (error) {
    if (error.status !== 401) toast(`Sessions: ${error.message}`);
    return;
  }
  if (!current()) return;
  clear(list);
  if (!sessions.length) list.append(el("li", { class: "empty" }, "No sessions yet."));
  for (const s of sessions) {
    const item = el(
      "li",
      { class: s.id === selected ? "active" : "", dataset: { sid: s.id } },
      el("div", {}, el("strong", {}, bdi(s.project)), " · ", s.status),
      el("div", { class: s.title ? "session-title" : "session-title none" }, s.title || "no prompt yet"),
      el("div", { class: "sid" }, s.id),
      el("div", { class: "muted" }, `${fmtDate(s.last_activity_at)} · ${s.prompt_count} prompts`),
    );
    item.addEventListener("click", () => { location.hash = `#/sessions/${encodeURIComponent(s.id)}`; });
    list.append(item);
  }
  if (selected) await showSession(selected);
}

function bulletList(title, items) {
  if (!items || !items.length) return null;
  return [el("h3", {}, title), el("ul", {}, items.map((t) => el("li", {}, t)))];
}

async function showSession(id) {
  const current = begin("session");
  const box = $("session-detail");
  let detail;
  let timeline;
  try {
    [detail, timeline] = await Promise.all([
      api.session(id),
      api.timeline({ session_id: id, project: state.project, limit: 200 }),
    ]);
  } catch (error) {
    if (current()) clear(box).append(el("p", { class: "empty" }, `Cannot load session: ${error.message}`));
    return;
  }
  if (!current()) return;
  clear(box);
  const { session, summary, checkpoint } = detail;
  append(box, [
    el("h2", {}, bdi(session.project), ` · ${session.status}`),
    el("p", { class: "muted" }, bdi(session.id), " · ", bdi(session.agent), ` · started ${fmtDate(session.started_at)} · last activity ${fmtDate(session.last_activity_at)}`),
  ]);
  if (summary) {
    append(box, [
      el("h3", {}, summary.is_auto_generated ? "Summary (auto-generated)" : "Summary"),
      summary.request ? el("p", {}, summary.request) : null,
      bulletList("Completed", summary.completed),
      bulletList("Learned", summary.learned),
      bulletList("Next steps", summary.next_steps),
    ]);
  }
  if (checkpoint) {
    append(box, [
      el("h3", {}, "Checkpoint"),
      checkpoint.task ? el("p", {}, checkpoint.task) : null,
      bulletList("Progress", checkpoint.progress),
      bulletList("Next steps", checkpoint.next_steps),
      bulletList("Open questions", checkpoint.questions),
    ]);
  }
  try {
    const section = await injectionSection(id, timeline.memories, openMemory);
    if (!current()) return;
    box.append(section);
  } catch (error) {
    box.append(el("p", { class: "empty" }, `Cannot load the injections: ${error.message}`));
  }
  append(box, [el("h3", {}, `Timeline (${timeline.memories.length})`)]);
  const ol = el("ol", { class: "timeline" });
  for (const m of timeline.memories) {
    const item = el("li", {}, el("time", {}, fmtDate(m.created_at)), el("strong", {}, bdi(m.type)), " ", bdi(m.title || m.content.slice(0, 140)));
    item.addEventListener("click", () => openMemory(m.id));
    ol.append(item);
  }
  box.append(ol);
}

// -- stats ----------------------------------------------------------------------------

function statCard(label, value) {
  return el("div", { class: "stat" }, el("div", { class: "value" }, value), el("div", { class: "label" }, label));
}

export async function loadStats() {
  const current = begin("stats");
  const end = new Date();
  const start = new Date(end.getTime() - 30 * 86400e3);
  let stats;
  let report;
  let embeddings;
  try {
    [stats, report, embeddings] = await Promise.all([
      api.stats(),
      api.report({ start: start.toISOString(), end: end.toISOString(), ...scope() }),
      api.embeddings(),
    ]);
  } catch (error) {
    if (error.status !== 401) toast(`Stats: ${error.message}`);
    return;
  }
  if (!current()) return;
  const injected = stats.injections;
  append(clear($("stat-cards")), [
    statCard("memories", stats.memories.toLocaleString()),
    statCard("sessions", stats.sessions.toLocaleString()),
    statCard("projects", Object.keys(stats.projects).length),
    statCard(`embedded (${embeddings.model || "off"})`, `${embeddings.embedded.toLocaleString()} / ${embeddings.memories.toLocaleString()}`),
    statCard("database size", fmtBytes(stats.db_bytes)),
    statCard("prompts with an injection", `${Math.round(injected.injected_share * 100)}% of ${injected.prompts.toLocaleString()}`),
    statCard("injected tokens per session (median · p95)", `${injected.tokens_per_session_median} · ${injected.tokens_per_session_p95}`),
  ]);
  const days = [];
  for (let t = start.getTime(); t <= end.getTime(); t += 86400e3) {
    const day = new Date(t).toISOString().slice(0, 10);
    days.push([day, report.per_day[day] || 0]);
  }
  clear($("chart-days")).append(columnChart(days));
  const tokenDays = days.map(([day]) => [day, injected.per_day[day] || 0]);
  clear($("chart-injected")).append(columnChart(tokenDays, { label: "injected tokens per day" }));
  clear($("chart-types")).append(barChart(state.project ? report.per_type : stats.types));
  clear($("chart-projects")).append(barChart(stats.projects));
}

export async function loadProjects() {
  const select = $("project");
  try {
    const stats = await api.stats();
    const names = Object.keys(stats.projects).sort();
    for (const name of names) {
      if (![...select.options].some((o) => o.value === name)) select.append(el("option", { value: name }, name));
    }
    const types = $("type");
    for (const t of Object.keys(stats.types).sort()) {
      if (![...types.options].some((o) => o.value === t)) types.append(el("option", { value: t }, t));
    }
  } catch (error) {
    if (error.status !== 401) toast(`Projects: ${error.message}`);
  }
}
