// Tiny DOM helpers. Stored text only ever goes through textContent / text nodes:
// nothing in the dashboard parses strings as HTML markup. And it is shown as it is:
// a control or bidi control character appears as its escape (see shown).
// escapes.js is written by the worker (app.py) from memlane.text.SHOWN_ESCAPED.
import { SHOWN_ESCAPED } from "./escapes.js";

/** `text` with each character that would act instead of show (a control character; a
 *  bidi control, which reorders the text around it: "invoice_\u202efdp.exe" showed as
 *  "invoice_exe.pdf") written as its escape, as the CLI writes it to a terminal. */
export function shown(text) {
  return String(text).replace(SHOWN_ESCAPED, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** Set an element's text to `value`, shown (see shown). */
export function setText(node, value) {
  node.textContent = shown(value);
  return node;
}

/** Create an element: el("div", {class: "x", dataset: {id: 1}}, "text", child). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

/** Append children: strings and numbers become text nodes (shown), never markup. */
export function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(shown(child)));
  }
  return node;
}

/** A stored value inside a line of other text, isolated (<bdi>): right-to-left text in
 *  it cannot reorder the words and numbers around it. */
export function bdi(value) {
  return el("bdi", {}, value);
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

export function $(id) {
  return document.getElementById(id);
}

export function fmtDate(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fmtBytes(n) {
  const units = ["B", "KB", "MB", "GB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

let toastTimer = 0;
export function toast(message) {
  const node = setText($("toast"), message);
  node.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { node.hidden = true; }, 2600);
}
