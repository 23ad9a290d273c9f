// How the messages were put together, then the chat messages as the agent had them, each saying where it came from.
// Everything from the trace is set as text (textContent), never as HTML. Bundled after el.js (ui/components.py).
export default function ({ parentElement, data }) {
  const list = parentElement.querySelector(".messages");
  list.replaceChildren(
    ...data.notes.map((text) => el("div", "caption", text)),
    ...data.messages.map((message) => {
      const box = el("div", `message ${message.role}`);
      box.append(el("div", "origin", message.origin), ...message.parts.flatMap(([kind, text]) => folded(kind, text)));
      return box;
    }),
  );
}

const FOLD_CHARS = 600;
const FOLD_LINES = 10;

function folded(kind, text) {
  // a long message shows its start, with "Show all": a long context made the page thousands of pixels tall
  const part = el(kind === "line" ? "div" : "pre", kind, text);
  if (text.length <= FOLD_CHARS && text.split("\n").length <= FOLD_LINES) return [part];
  part.classList.add("folded");
  const more = el("button", "show-all", "Show all");
  more.type = "button";
  more.onclick = () => {
    const closed = part.classList.toggle("folded");
    more.textContent = closed ? "Show all" : "Show less";
  };
  return [part, more];
}
