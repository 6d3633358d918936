// One card per memory, search hit or feed event. Every field is rendered as text.
import { bdi, el, fmtDate } from "./dom.js";

export function badge(text, kind) {
  return el("span", { class: `badge kind-${kind || text}` }, text);
}

/** A card for a memory-like object: {id, title, content|snippet, kind, type, project, created_at, score?}. */
export function memoryCard(item, onOpen, { fresh = false, label } = {}) {
  // A search hit shows the part that matches the query; a memory or feed event its text.
  const body = item.snippet || item.content || "";
  const title = item.title || body.split("\n")[0].slice(0, 120) || `#${item.id}`;
  const card = el(
    "li",
    { class: fresh ? "card fresh" : "card", dataset: { id: item.id }, tabindex: 0, "data-testid": "memory-card" },
    el(
      "div",
      { class: "card-head" },
      badge(label || item.type, item.kind),
      el("span", { class: "card-title" }, title),
      item.score !== undefined ? el("span", { class: "score" }, `score ${item.score.toFixed(3)}`) : null,
    ),
    el("div", { class: "card-body" }, body.slice(0, 400)),
    el(
      "div",
      { class: "card-foot" },
      el("span", {}, `#${item.id}`),
      el("span", {}, item.from_project ? ["from: ", bdi(item.from_project)] : item.project),
      el("span", {}, fmtDate(item.created_at)),
    ),
  );
  card.addEventListener("click", () => onOpen(item.id));
  card.addEventListener("keydown", (e) => { if (e.key === "Enter") onOpen(item.id); });
  return card;
}

export function sessionCard(session, onOpen, { fresh = false } = {}) {
  const card = el(
    "li",
    { class: fresh ? "card fresh" : "card", "data-testid": "session-card" },
    el(
      "div",
      { class: "card-head" },
      badge(`session ${session.status}`, "session"),
      el("span", { class: "card-title" }, session.project),
    ),
    el(
      "div",
      { class: "card-foot" },
      el("span", {}, session.id),
      el("span", {}, `${session.prompt_count} prompts`),
      el("span", {}, fmtDate(session.last_activity_at)),
    ),
  );
  card.addEventListener("click", () => onOpen(session.id));
  return card;
}
