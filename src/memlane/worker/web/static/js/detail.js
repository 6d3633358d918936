// The memory detail dialog: view, edit (PATCH) and delete (DELETE, confirmed in-page).
import { api } from "./api.js";
import { $, append, bdi, clear, el, fmtDate, setText, toast } from "./dom.js";

let current = null;
const changed = new Set();

/** Register a callback run after an edit or delete: fn({type: "updated"|"deleted", id}). */
export function onMemoryChanged(fn) { changed.add(fn); }

function setEditing(editing) {
  $("detail-view").hidden = editing;
  $("detail-edit").hidden = !editing;
  $("btn-edit").hidden = editing;
  $("btn-save").hidden = !editing;
  $("btn-cancel").hidden = !editing;
  $("btn-confirm").hidden = true;
  $("btn-delete").hidden = false;
}

// Stored values in one line, each isolated (a right-to-left name cannot pull the commas).
function listed(values) {
  return values.length ? values.flatMap((v, i) => (i ? [", ", bdi(v)] : [bdi(v)])) : "—";
}

function render(memory) {
  current = memory;
  setText($("detail-title"), memory.title || `Memory #${memory.id}`);
  setText($("detail-content"), memory.content);
  const meta = clear($("detail-meta"));
  const rows = [
    ["id", `#${memory.id}`],
    ["kind / type", [memory.kind, " / ", bdi(memory.type)]],
    ["project", memory.project],
    ["session", memory.session_id || "—"],
    ["created", fmtDate(memory.created_at)],
    ["updated", `${fmtDate(memory.updated_at)} (revision ${memory.revision_count})`],
    ["files", listed(memory.files)],
    ["tags", listed(memory.tags)],
  ];
  for (const [k, v] of rows) append(meta, [el("dt", {}, k), el("dd", {}, v)]);
  $("edit-title").value = memory.title;
  $("edit-content").value = memory.content;
  setEditing(false);
}

export async function openMemory(id) {
  try {
    render(await api.get(id));
  } catch (error) {
    toast(`Cannot open #${id}: ${error.message}`);
    return;
  }
  const dialog = $("detail");
  if (!dialog.open) dialog.showModal();
}

export function initDetail() {
  const dialog = $("detail");
  $("detail-close").addEventListener("click", () => dialog.close());
  $("btn-edit").addEventListener("click", () => setEditing(true));
  $("btn-cancel").addEventListener("click", () => render(current));
  $("btn-save").addEventListener("click", async () => {
    const content = $("edit-content").value;
    if (!content.trim()) { toast("Content cannot be empty"); return; }
    try {
      const updated = await api.update(current.id, { content, title: $("edit-title").value });
      render(updated);
      toast(`Saved #${updated.id}`);
      changed.forEach((fn) => fn({ type: "updated", id: updated.id }));
    } catch (error) {
      toast(`Not saved: ${error.message}`);
    }
  });
  $("btn-delete").addEventListener("click", () => {
    $("btn-delete").hidden = true;
    $("btn-confirm").hidden = false;
  });
  $("btn-confirm").addEventListener("click", async () => {
    const id = current.id;
    try {
      await api.remove(id);
      dialog.close();
      toast(`Deleted #${id}`);
      changed.forEach((fn) => fn({ type: "deleted", id }));
    } catch (error) {
      toast(`Not deleted: ${error.message}`);
    }
  });
}
