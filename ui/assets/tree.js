// A JSON value as a tree of <details>, open two levels deep (as st.json(expanded=2) drew it): every key
// and value set as text. At most TREE_NODES nodes are drawn; the rest is said, not dropped silently.
const TREE_NODES = 2000;

function jsonTree(value) {
  const budget = { left: TREE_NODES };
  const root = node(null, value, 0, budget);
  const tree = document.createElement("div");
  tree.className = "tree";
  tree.append(root);
  if (budget.left < 0) {
    const more = document.createElement("div");
    more.className = "caption";
    more.textContent = `${(-budget.left).toLocaleString("en-US")} more values not drawn here: "Everything recorded for this step" has them all.`;
    tree.append(more);
  }
  return tree;
}

function node(key, value, depth, budget) {
  budget.left -= 1;
  const label = document.createElement("span");
  label.className = "key";
  label.textContent = key === null ? "" : `${key}: `;
  if (value === null || typeof value !== "object") {
    const leaf = document.createElement("div");
    const shown = document.createElement("span");
    shown.className = `value ${value === null ? "null" : typeof value}`;
    shown.textContent = JSON.stringify(value);
    leaf.append(label, shown);
    return leaf;
  }
  const list = Array.isArray(value), entries = list ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  const box = document.createElement("details");
  box.open = depth < 2;
  const summary = document.createElement("summary");
  summary.append(label, `${list ? "[" : "{"} ${entries.length} ${list ? "item" : "key"}${entries.length === 1 ? "" : "s"} ${list ? "]" : "}"}`);
  box.append(summary);
  for (const [k, v] of entries) {
    if (budget.left <= 0) { budget.left -= 1; continue; }
    box.append(node(k, v, depth + 1, budget));
  }
  return box;
}
