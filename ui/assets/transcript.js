// How the messages were put together, then the chat messages as the agent had them: a bubble per role, each saying
// where it came from, tool calls and results as cards; "Raw JSON" shows each message as stored.
// Everything from the trace is set as text (textContent), never as HTML. Bundled after el.js and chat.js (ui/components.py).
export default function ({ parentElement, data }) {
  const list = parentElement.querySelector(".messages");
  const bubbles = el("div", "bubbles");
  const [toggle, draw] = rawSwitch(list, (raw) =>
    bubbles.replaceChildren(...data.messages.map((message) => (raw ? rawMessage(message) : bubble(message)))),
  );
  const head = el("div", "chat-head");
  head.append(...data.notes.map((text) => el("div", "caption", text)));
  if (data.messages.length) head.append(toggle);
  list.replaceChildren(head, bubbles);
  draw();
}

function bubble(message) {
  // a tool's answer is itself the card: "Result of <tool>" heads it, beside where it came from
  const box = el("div", `message ${message.role}${message.role === "tool" ? " card result" : ""}`);
  const origin = el("div", "origin");
  if (message.role === "tool") {
    origin.append("Result of ", el("strong", "", message.tool || "a tool"));
    if (message.call_id) origin.append(" ", el("span", "call-id", message.call_id));
    origin.append(` · ${message.origin}`);
  } else origin.textContent = message.origin;
  box.append(origin, ...message.parts.flatMap(([kind, text]) => folded(kind, text)));
  for (const call of message.calls || []) {
    const part = card("call", "Calls ", call.name, call.id);
    part.append(...folded("text", call.arguments));
    box.append(part);
  }
  return box;
}

function rawMessage(message) {
  const box = el("div", `message raw ${message.role}`);
  box.append(el("div", "origin", message.origin), ...folded("text", message.json));
  return box;
}
