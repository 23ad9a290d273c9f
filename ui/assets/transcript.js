// How the messages were put together, then the chat messages as the agent had them, each saying where it came from.
// Everything from the trace is set as text (textContent), never as HTML. Bundled after el.js (ui/components.py).
export default function ({ parentElement, data }) {
  const list = parentElement.querySelector(".messages");
  list.replaceChildren(
    ...data.notes.map((text) => el("div", "caption", text)),
    ...data.messages.map((message) => {
      const box = el("div", `message ${message.role}`);
      box.append(
        el("div", "origin", message.origin),
        ...message.parts.map(([kind, text]) => el(kind === "line" ? "div" : "pre", kind, text)),
      );
      return box;
    }),
  );
}
