// The selected step: heading, facts, where it sits, its call's arguments, whether it failed, its content
// and the notes on it. Everything from the trace is set as text (textContent), never as HTML.
// Bundled after el.js and tree.js (ui/components.py): `el` and `jsonTree` are theirs.
function callView(call) {
  const part = el("div", "call"),
    head = el("div", "", "Calls ");
  head.append(el("strong", "", call.tool), " with:");
  part.append(head);
  if (call.tree !== undefined) part.append(jsonTree(call.tree));
  else part.append(el("pre", "", call.text));
  for (const [key, text] of call.long || []) part.append(el("div", "caption", `${key}, as recorded:`), el("pre", "", text));
  return part;
}

function contentView(content) {
  if (content.tree !== undefined) {
    const recorded = el("details", "recorded");
    recorded.append(el("summary", "", "As recorded"), el("pre", "", content.recorded));
    return [jsonTree(content.tree), recorded];
  }
  return content.box !== undefined ? [el("pre", "", content.box)] : [el("div", "line", content.line)];
}

export default function ({ parentElement, data }) {
  const parts = [el("h3", "", data.heading), el("div", "caption", data.facts)];
  for (const line of data.lines) parts.push(el("div", "caption", line));
  if (data.call) parts.push(callView(data.call));
  if (data.error) parts.push(el("div", "failed", `❌ ${data.error}`));
  if (data.content) parts.push(...contentView(data.content));
  for (const note of data.notes) parts.push(el("div", "note", note));
  parentElement.querySelector(".detail").replaceChildren(...parts);
}
