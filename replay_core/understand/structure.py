"""The nesting of a run: agents, groups, fallback blocks and retry chains, from `parent_id`.

Pure functions over a timeline's step columns (no Streamlit), computed once per opened run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from replay_core.events import StepEvent


@dataclass
class Node:
    """A step that other steps hang under."""

    position: int
    depth: int
    first_seq: int
    last_seq: int
    steps: int = 0  # descendants
    errors: int = 0
    children: list[int] = field(default_factory=list)  # positions of child nodes


@dataclass
class Structure:
    nodes: dict[int, Node]  # by position, in run order
    parent: list[int | None]  # parent position of each step

    def ancestors(self, position: int) -> list[int]:
        """Enclosing node positions of a step, outermost first."""
        out = []
        current = self.parent[position]
        while current is not None and current not in out:
            out.append(current)
            current = self.parent[current]
        return out[::-1]

    def roots(self) -> list[int]:
        return [p for p in self.nodes if self.parent[p] is None or self.parent[p] not in self.nodes]

    def walk(self) -> list[Node]:
        """Nodes depth first, in run order."""
        out: list[Node] = []
        stack = list(reversed(self.roots()))
        while stack:
            node = self.nodes[stack.pop()]
            out.append(node)
            stack.extend(reversed(node.children))
        return out


def build_structure(columns: Mapping[str, Sequence]) -> Structure:
    """Nodes for every span and every step that has children; a parent_id naming no step is ignored.
    From the run's columns (Timeline.columns): opening a run builds no step object."""
    seqs, types, statuses = columns["seq"], columns["type"], columns["status"]
    named = set(columns["parent_id"]) - {None, ""}
    by_event = {e: i for i, e in enumerate(columns["event_id"]) if e in named}
    # a flat run (no parent_id naming a step) is only walked for its spans
    parent: list[int | None] = [by_event.get(p) for p in columns["parent_id"]] if by_event else [None] * len(seqs)
    children = [(i, p) for i, p in enumerate(parent) if p is not None] if by_event else []
    for i, p in children:
        if p == i:
            parent[i] = None
    holders = {held for i, _ in children if (held := parent[i]) is not None} | {
        i for i, kind in enumerate(types) if kind == "span"
    }
    nodes = {p: Node(position=p, depth=0, first_seq=seqs[p], last_seq=seqs[p]) for p in sorted(holders)}
    for i, _ in children:
        failed = types[i] == "error" or statuses[i] == "error"
        seen = set()
        current = parent[i]
        while current is not None and current not in seen:
            seen.add(current)
            node = nodes[current]
            node.steps += 1
            node.errors += failed
            node.last_seq = max(node.last_seq, seqs[i])
            current = parent[current]
    for p, node in nodes.items():
        up = parent[p]
        depth, seen = 0, set()
        while up is not None and up not in seen:
            seen.add(up)
            depth += 1
            up = parent[up]
        node.depth = depth
        if (owner := parent[p]) is not None:
            nodes[owner].children.append(p)
    return Structure(nodes=nodes, parent=parent)


def node_label(steps: list[StepEvent], node: Node) -> str:
    """'researcher: collect prices (steps 4–17, 13 steps, 1 error)' in plain words."""
    step = steps[node.position]
    if step.type == "span":
        head = (step.content or step.agent_id or "group").strip().split("\n", 1)[0]
        icon = "🧩"
    else:
        head = f"retries of step {step.seq}" + (f" ({step.tool_name})" if step.tool_name else "")
        icon = "🔁"
    span = f"steps {node.first_seq}–{node.last_seq}" if node.last_seq > node.first_seq else f"step {node.first_seq}"
    errors = f", {node.errors} error{'s' if node.errors != 1 else ''}" if node.errors else ""
    return f"{icon} {head} ({span}, {node.steps} step{'s' if node.steps != 1 else ''} inside{errors})"
