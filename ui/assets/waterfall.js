// The span waterfall: a row a step, indented by its depth, a bar from its start for its duration on the run's
// clock (a tick when it has no duration), coloured by its share of the run; the slowest steps named first.
// Only the rows in view are in the page: the scroll area is as tall as every row, the rows drawn are those the
// viewport shows, out of the window the page sent; scrolling past the window asks for the rows there.
// A click on a row (or a slow step) picks its step; the order toggle asks for the rows tree-ordered or longest first
// (the page sends them in that order: a row's index is its place in it). Everything from a trace is set as text.
// Bundled after el.js.
const ROW = 24, // pixels a row
  INDENT = 12, // pixels a level
  DEEPEST = 16, // levels indented; deeper rows say their depth
  MARGIN = 8; // rows drawn above and below the viewport

function bar(data, start, duration, heat, rank) {
  const lane = el("span", "lane");
  if (start === null || data.total_ms <= 0) return lane;
  const left = (start / data.total_ms) * 100;
  const mark = el("span", duration === null ? "tick" : `bar ${heat}`);
  mark.style.left = `${left}%`;
  if (duration !== null) mark.style.width = `max(2px, ${(duration / data.total_ms) * 100}%)`;
  lane.append(mark);
  if (rank) lane.append(Object.assign(el("span", "rank", `#${rank}`), { title: `slowest step #${rank}` }));
  return lane;
}

function rowButton(data, i) {
  const [seq, depth, start, duration, label, said, failed, heat, rank, title] = data.rows[i - data.first];
  const button = el("button", `wrow${failed ? " failed" : ""}${i === data.cursor ? " current" : ""}`);
  button.type = "button";
  button.dataset.seq = String(seq);
  button.dataset.row = String(i);
  button.title = title;
  button.style.top = `${i * ROW}px`;
  if (i === data.cursor) button.setAttribute("aria-current", "step");
  const name = el("span", "name", `${depth > DEEPEST ? `[${depth}] ` : ""}${failed ? "❗ " : ""}${label}`);
  name.style.paddingLeft = `${Math.min(depth, DEEPEST) * INDENT}px`;
  button.append(name, el("span", duration === null ? "took none" : "took", said), bar(data, start, duration, heat, rank));
  return button;
}

function drawRows(box) {
  const data = box.waterfall;
  const viewport = box.querySelector(".viewport");
  const top = Math.floor(viewport.scrollTop / ROW),
    bottom = Math.ceil((viewport.scrollTop + viewport.clientHeight) / ROW);
  const last = data.first + data.rows.length;
  const lo = Math.max(top - MARGIN, data.first),
    hi = Math.min(bottom + MARGIN, last);
  const short = (top < data.first && data.first > 0) || (bottom > last && last < data.total);
  const range = short ? `${lo}:${hi}:${top}` : `${lo}:${hi}`;
  if (box.range === range) return; // a scroll within the rows drawn
  box.range = range;
  // the rows kept from the last draw are the same elements: a click that began on one still lands on it
  const kept = box.drawn;
  box.drawn = new Map();
  const rows = [];
  for (let i = lo; i < hi; i++) {
    const row = kept.get(i) ?? rowButton(data, i);
    box.drawn.set(i, row);
    rows.push(row);
  }
  if (short) {
    const wait = el("div", "fetching", "Fetching the rows here…");
    wait.style.top = `${Math.max(top, top < data.first ? top : last) * ROW}px`;
    rows.push(wait);
  }
  box.querySelector(".space").replaceChildren(...rows);
  if (short && box.asked !== top) {
    box.asked = top; // once per place: the page answers with the rows there
    box.ask("scrolled", top);
  }
}

export default function ({ parentElement, data, setTriggerValue }) {
  const box = parentElement.querySelector(".waterfall");
  const viewport = box.querySelector(".viewport");
  box.waterfall = data;
  box.ask = setTriggerValue;
  box.asked = undefined;
  box.range = undefined; // new rows from the page: every row drawn again
  box.drawn = new Map();
  box.querySelector(".space").style.height = `${data.total * ROW}px`;
  viewport.style.height = `${Math.min(data.total, 18) * ROW + 2}px`;
  box.querySelector(".axis").replaceChildren(
    ...data.axis.map(([ms, label]) => {
      const mark = el("span", "", label);
      mark.style.left = `${(ms / data.total_ms) * 100}%`;
      return mark;
    }),
  );
  const slowest = box.querySelector(".slowest");
  slowest.replaceChildren();
  if (data.slowest.length) {
    slowest.append(el("span", "lead", "Slowest first:"));
    for (const [seq, text, title] of data.slowest) {
      const chip = el("button", "chip", text);
      chip.type = "button";
      chip.title = title;
      chip.dataset.seq = String(seq);
      slowest.append(chip);
    }
  }
  box.querySelector(".order").replaceChildren(
    ...data.orders.map(([key, label]) => {
      const choice = el("button", "sort", label);
      choice.type = "button";
      choice.dataset.order = key;
      choice.setAttribute("aria-pressed", String(key === data.order));
      return choice;
    }),
  );
  box.querySelector(".caption").textContent = data.caption;
  const shown = `${data.order}:${data.cursor}`;
  if (box.shownCursor !== shown) {
    // the cursor moved (or the run opened, or the order changed): bring its row into view unless it is in view
    box.shownCursor = shown;
    const y = data.cursor * ROW;
    if (y < viewport.scrollTop || y + ROW > viewport.scrollTop + viewport.clientHeight) {
      viewport.scrollTop = Math.max(0, y - viewport.clientHeight / 2);
    }
  }
  drawRows(box);
  let pending = false;
  viewport.onscroll = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      drawRows(box);
    });
  };
  box.onclick = (event) => {
    const sort = event.target.closest("button.sort");
    if (sort) {
      if (sort.dataset.order !== data.order) setTriggerValue("order", sort.dataset.order);
      return;
    }
    const button = event.target.closest("button.wrow, button.chip");
    if (button && !button.classList.contains("current")) setTriggerValue("picked", Number(button.dataset.seq));
  };
}
