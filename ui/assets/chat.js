// Messages as a conversation, shared by the transcript and the selected step: a bubble per role, a card per tool call
// or result, long text folded with how much is hidden, and a "Raw JSON" switch. Text is set as text, never as HTML.
// Bundled after el.js (ui/components.py).
const FOLD_CHARS = 600; // longer, or more lines, is folded…
const FOLD_LINES = 10;
const START_CHARS = 240; // …to its start: a context of long messages stays a screen or two tall
const START_LINES = 4;

function folded(kind, text) {
  // a long text shows its start and "Show all (n more …)": a long context made the page thousands of pixels tall
  const part = el(kind === "line" ? "div" : "pre", kind, text);
  const lines = text.split("\n");
  if (text.length <= FOLD_CHARS && lines.length <= FOLD_LINES) return [part];
  const start = lines.slice(0, START_LINES).join("\n").slice(0, START_CHARS);
  const hiddenLines = lines.length - start.split("\n").length;
  const hidden =
    hiddenLines > 0
      ? `${hiddenLines.toLocaleString("en-US")} more line${hiddenLines === 1 ? "" : "s"}`
      : `${(text.length - start.length).toLocaleString("en-US")} more characters`;
  const more = el("button", "show-all", `Show all (${hidden})`);
  more.type = "button";
  const show = (whole) => {
    part.textContent = whole ? text : `${start}…`;
    part.classList.toggle("folded", !whole);
    more.textContent = whole ? "Show less" : `Show all (${hidden})`;
  };
  part.classList.add("cut");
  show(false);
  more.onclick = () => show(part.classList.contains("folded"));
  return [part, more];
}

function card(kind, heading, name, id) {
  // a tool call or a tool's answer: "Calls <name>" / "Result of <name>", with its call id
  const box = el("div", `card ${kind}`),
    head = el("div", "card-head", heading);
  head.append(el("strong", "", name));
  if (id) head.append(" ", el("span", "call-id", id));
  box.append(head);
  return box;
}

function rawSwitch(root, draw) {
  // "Raw JSON": the exact stored JSON in place of the bubbles; the choice, kept on `root` (the component's own
  // element), outlives the next redraw
  const button = el("button", "raw-json", "Raw JSON");
  button.type = "button";
  const set = (raw) => {
    root.dataset.raw = raw ? "1" : "";
    button.setAttribute("aria-pressed", String(raw));
    draw(raw);
  };
  button.onclick = () => set(root.dataset.raw !== "1");
  return [button, () => set(root.dataset.raw === "1")];
}
