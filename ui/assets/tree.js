// A JSON value as a tree of <details>, open two levels deep (as st.json(expanded=2) drew it): every key
// and value set as text. At most TREE_NODES nodes are drawn; the rest is said, not dropped silently.
// Bundled after el.js (ui/components.py).
const TREE_NODES = 2000;

function jsonTree(value) {
  const budget = { left: TREE_NODES };
  const tree = el("div", "tree");
  tree.append(node(null, value, 0, budget));
  if (budget.left < 0) {
    tree.append(
      el(
        "div",
        "caption",
        `${(-budget.left).toLocaleString("en-US")} more entries not drawn here: ` +
          `"Everything recorded for this step" has them all.`,
      ),
    );
  }
  return tree;
}

function node(key, value, depth, budget) {
  budget.left -= 1;
  const label = el("span", "key", key === null ? "" : `${key}: `);
  if (value === null || typeof value !== "object") {
    const leaf = el("div");
    leaf.append(label, el("span", `value ${value === null ? "null" : typeof value}`, JSON.stringify(value)));
    return leaf;
  }
  const list = Array.isArray(value),
    entries = list ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  const box = el("details");
  box.open = depth < 2;
  const summary = el("summary");
  summary.append(
    label,
    `${list ? "[" : "{"} ${entries.length} ${list ? "item" : "key"}${entries.length === 1 ? "" : "s"} ${list ? "]" : "}"}`,
  );
  box.append(summary);
  for (const [k, v] of entries) {
    if (budget.left <= 0) {
      budget.left -= 1;
      continue;
    }
    box.append(node(k, v, depth + 1, budget));
  }
  return box;
}
