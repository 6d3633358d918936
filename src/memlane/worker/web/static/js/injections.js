// What memlane injected into a session: a timeline of prompts with their injections
// (expandable), a token meter (per injection and cumulative) and feedback buttons.
// Stored text is rendered as text only (el/append make text nodes).
import { api } from "./api.js";
import { meterChart } from "./charts.js";
import { bdi, el, fmtDate, toast } from "./dom.js";

function label(entry) {
  if (entry.event === "session-start") return "session start";
  return entry.prompt_number ? `prompt ${entry.prompt_number}` : "prompt";
}

function how(entry) {
  const mode = entry.mode === "context" ? "context pack" : entry.mode;
  return `${mode} · ${entry.relayed ? "worker" : "hook process"} · ${Math.round(entry.hook_ms)} ms`;
}

function markButton(entry, memory, mark, status) {
  const button = el(
    "button",
    { type: "button", class: "ghost mark", "data-testid": `mark-${mark}`, "aria-pressed": String(memory.feedback === mark) },
    mark,
  );
  button.addEventListener("click", async (event) => {
    event.stopPropagation();
    try {
      await api.feedback({ memory_id: memory.memory_id, injection_id: entry.id, mark });
      memory.feedback = mark;
      status.textContent = mark;
      status.dataset.mark = mark;
      for (const other of button.parentElement.querySelectorAll("button.mark")) {
        other.setAttribute("aria-pressed", String(other.textContent === mark));
      }
      toast(`Marked #${memory.memory_id} ${mark}: recall ${mark === "noise" ? "demotes" : "lifts"} it for similar prompts`);
    } catch (error) {
      toast(`Not marked: ${error.message}`);
    }
  });
  return button;
}

function memoryRow(entry, memory, onOpen) {
  const status = el("span", { class: "mark-state", dataset: { mark: memory.feedback || "" } }, memory.feedback || "");
  const link = el("a", { href: "#", class: "mid" }, `#${memory.memory_id}`);
  link.addEventListener("click", (event) => { event.preventDefault(); onOpen(memory.memory_id); });
  const score = memory.score === null ? "" : `score ${memory.score.toFixed(2)}`;
  const canMark = entry.event === "user-prompt-submit" && !entry.cleared;
  return el(
    "li",
    { "data-testid": "injected-memory", dataset: { mid: memory.memory_id } },
    link,
    el("span", { class: "muted" }, score),
    status,
    canMark ? markButton(entry, memory, "useful", status) : null,
    canMark ? markButton(entry, memory, "noise", status) : null,
  );
}

function injectionItem(entry, total, onOpen) {
  const body = el("div", { class: "injection-body" });
  if (entry.memories.length) {
    body.append(el("ol", { class: "injected-memories" }, entry.memories.map((m) => memoryRow(entry, m, onOpen))));
  }
  body.append(
    entry.cleared
      ? el("p", { class: "muted" }, "Text removed: a memory it showed was deleted or forgotten.")
      : el("pre", { class: "content", "data-testid": "injected-text" }, entry.text),
  );
  return el(
    "li",
    { class: "injection", "data-testid": "injection", dataset: { id: entry.id } },
    el(
      "details",
      {},
      el(
        "summary",
        {},
        el("time", {}, fmtDate(entry.created_at)),
        el("strong", {}, label(entry)),
        " ",
        bdi(entry.prompt || ""),
        el("span", { class: "tokens", "data-testid": "tokens" }, `${entry.tokens} tokens · Σ ${total}`),
        el("span", { class: "muted how" }, how(entry)),
      ),
      body,
    ),
  );
}

function quietItem(prompt) {
  const number = prompt.metadata && prompt.metadata.number;
  return el(
    "li",
    { class: "injection quiet", "data-testid": "quiet-prompt" },
    el("time", {}, fmtDate(prompt.created_at)),
    el("strong", {}, number ? `prompt ${number}` : "prompt"),
    " ",
    bdi(prompt.content.slice(0, 200)),
    el("span", { class: "tokens" }, "nothing injected"),
  );
}

/** The session's injections section: meter and timeline. `memories`: the session's timeline. */
export async function injectionSection(sessionId, memories, onOpen) {
  const { injections } = await api.injections({ session_id: sessionId, limit: 1000 });
  const injected = new Set(injections.filter((e) => e.prompt_number).map((e) => e.prompt_number));
  const quiet = memories.filter((m) => m.kind === "prompt" && !injected.has(m.metadata && m.metadata.number));
  const rows = [
    ...injections.map((entry) => ({ at: entry.created_at, entry })),
    ...quiet.map((prompt) => ({ at: prompt.created_at, prompt })),
  ].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  const total = injections.reduce((sum, e) => sum + e.tokens, 0);
  const section = el("section", { class: "injections", "data-testid": "injections" });
  section.append(el("h3", {}, `Injected context (${injections.length} injections · ${total} tokens)`));
  if (!rows.length) {
    section.append(el("p", { class: "muted" }, "Nothing injected in this session."));
    return section;
  }
  section.append(el("div", { class: "meter", "data-testid": "token-meter" }, meterChart(injections.map((e) => [label(e), e.tokens]))));
  const list = el("ol", { class: "injection-list" });
  let running = 0;
  for (const row of rows) {
    if (row.entry) {
      running += row.entry.tokens;
      list.append(injectionItem(row.entry, running, onOpen));
    } else {
      list.append(quietItem(row.prompt));
    }
  }
  section.append(list);
  return section;
}
