// The live feed: Server-Sent Events read over fetch (EventSource cannot send the tab's
// session key), reconnecting as EventSource does: after the worker's `retry` (2 s) with the
// id of the last event seen, so the worker replays what was missed.
import { ApiError, openEvents } from "./api.js";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Follows /api/events until close(): onEvent(name, data) for each event, onOpen() when a
 * stream is accepted, onDown() when it drops or is refused. A refusal waits 5 s before the
 * next try (a 401 signs the page out first: its listener closes the feed).
 */
export function followEvents({ onEvent, onOpen, onDown }) {
  const controller = new AbortController();
  let lastId = "";
  let retry = 2000;

  function dispatch(fields) {
    if (fields.id !== undefined) lastId = fields.id;
    if (fields.data !== undefined) onEvent(fields.event || "message", fields.data);
  }

  function field(fields, line) {
    if (line.startsWith(":")) return; // a comment: the greeting, heartbeats
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") fields.data = fields.data === undefined ? value : `${fields.data}\n${value}`;
    else if (name === "event") fields.event = value;
    else if (name === "id" && !value.includes("\0")) fields.id = value;
    else if (name === "retry" && /^\d+$/.test(value)) retry = Number(value);
  }

  async function read(response) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let fields = {};
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, end).replace(/\r$/, "");
        buffer = buffer.slice(end + 1);
        if (line) field(fields, line);
        else {
          dispatch(fields);
          fields = {};
        }
      }
    }
  }

  async function run() {
    while (!controller.signal.aborted) {
      let wait = retry;
      try {
        const response = await openEvents(lastId, controller.signal);
        onOpen();
        await read(response);
      } catch (error) {
        if (error instanceof ApiError) wait = 5000;
      }
      if (controller.signal.aborted) return;
      onDown();
      await sleep(wait);
    }
  }

  run();
  return { close: () => controller.abort() };
}
