// The selected step: heading, facts, where it sits, then what it holds as a conversation (the model's words as its
// bubble, its call's arguments or a tool's answer as a card), whether it failed and the notes on it; "Raw JSON" shows
// the step as stored. Everything from the trace is set as text (textContent), never as HTML.
// Bundled after el.js, tree.js and chat.js (ui/components.py): `el`, `jsonTree`, `folded`, `card`, `rawSwitch` are theirs.
function callView(call) {
  const part = card("call", "Calls ", call.tool);
  part.append(call.tree !== undefined ? jsonTree(call.tree) : el("pre", "", call.text));
  for (const [key, text] of call.long || []) part.append(el("div", "caption", `${key}, as recorded:`), ...folded("text", text));
  return part;
}

function contentView(content) {
  if (content.tree !== undefined) {
    const recorded = el("details", "recorded");
    recorded.append(el("summary", "", "As recorded"), el("pre", "", content.recorded));
    return [jsonTree(content.tree), recorded];
  }
  return content.box !== undefined ? folded("box", content.box) : [el("div", "line", content.line)];
}

function said(data) {
  // the step's call and content, in the bubble of who said it (none for a step that is no message)
  const parts = [];
  if (data.call) parts.push(callView(data.call));
  if (data.content) {
    const content = contentView(data.content);
    if (data.bubble === "tool") {
      const result = card("result", "Result of ", data.tool || "a tool");
      result.append(...content);
      parts.push(result);
    } else parts.push(...content);
  }
  if (!data.bubble || !parts.length) return parts;
  const box = el("div", `message ${data.bubble}`);
  box.append(el("div", "origin", data.bubble), ...parts);
  return [box];
}

export default function ({ parentElement, data }) {
  const detail = parentElement.querySelector(".detail");
  const body = el("div", "said");
  const [toggle, draw] = rawSwitch(detail, (raw) => body.replaceChildren(...(raw ? folded("box", data.raw) : said(data))));
  const facts = el("div", "facts");
  facts.append(el("div", "caption", data.facts));
  if (data.raw) facts.append(toggle);
  const parts = [el("h3", "", data.heading), facts];
  for (const line of data.lines) parts.push(el("div", "caption", line));
  if (data.error) parts.push(el("div", "failed", `❌ ${data.error}`));
  parts.push(body);
  for (const note of data.notes) parts.push(el("div", "note", note));
  detail.replaceChildren(...parts);
  draw();
}
