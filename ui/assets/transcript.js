// How the messages were put together, then the chat messages as the agent had them, each saying where it came from.
// Everything from the trace is set as text (textContent), never as HTML.
export default function ({ parentElement, data }) {
  const list = parentElement.querySelector(".messages");
  list.replaceChildren(...data.notes.map((text) => {
    const note = document.createElement("div");
    note.className = "caption";
    note.textContent = text;
    return note;
  }), ...data.messages.map((message) => {
    const box = document.createElement("div");
    box.className = "message " + message.role;
    const origin = document.createElement("div");
    origin.className = "origin";
    origin.textContent = message.origin;
    box.append(origin);
    for (const [kind, text] of message.parts) {
      const part = document.createElement(kind === "line" ? "div" : "pre");
      part.className = kind;
      part.textContent = text;
      box.append(part);
    }
    return box;
  }));
}
