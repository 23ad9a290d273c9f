// The timeline's strip: a slider over the run's steps, a tick per place worth going to, in lanes,
// and the cursor. Letting go of the slider, or a key on it, picks its step; so does clicking a tick
// (or near one, in its lane). The ticks are drawn again only when they change: from click to click
// only the cursor and the slider move.
const SVG = "http://www.w3.org/2000/svg";
const LANE = 20, TICK = 3, NEAR_PX = 8;

function laneRect(x, width, lane, color, label) {  // a mark in its lane, from x for width pixels
  const rect = document.createElementNS(SVG, "rect");
  rect.setAttribute("x", x); rect.setAttribute("width", width);
  rect.setAttribute("y", lane * LANE + 3); rect.setAttribute("height", LANE - 6);
  rect.setAttribute("fill", color);
  rect.setAttribute("aria-label", label);
  return rect;
}

function tick(x, lane, color, label) {
  const mark = laneRect(x - TICK / 2, TICK, lane, color, label);
  const title = document.createElementNS(SVG, "title");
  title.textContent = label;
  mark.append(title);
  return mark;
}

function roundStep(span) {  // 1, 2 or 5 times a power of ten, a whole step at least: at most 10 labels on the axis
  const raw = span / 10, power = 10 ** Math.floor(Math.log10(raw));
  return Math.max(1, [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw));
}

function draw(box, data, width) {
  const { first, last } = data, span = last - first;
  const x = (seq) => ((seq - first) / span) * width;
  const marks = box.querySelector(".marks");
  const byLane = data.lanes.map(() => []);
  const drawn = [];
  const [gapLane, gapColor] = data.kinds.missing;
  for (const [start, end] of data.gaps) {
    drawn.push(laneRect(x(start), Math.max(x(end) - x(start), 0.5), gapLane, gapColor,
      `what: missing; steps: ${start + 0.5}–${end - 0.5}`));
  }
  for (const [seq, what] of data.ticks) {
    const [lane, color] = data.kinds[what];
    const mark = tick(x(seq), lane, color, `what: ${what}; step: ${seq}`);
    mark.dataset.seq = String(seq);
    drawn.push(mark);
    byLane[lane].push(seq);
  }
  marks.replaceChildren(...drawn);
  box.lanes = byLane.map((seqs) => seqs.sort((a, b) => a - b));
  const axis = box.querySelector(".axis"), step = roundStep(span), labels = [];
  for (let at = Math.ceil(first / step) * step; at <= last; at += step) {
    const label = document.createElement("span");
    label.textContent = at.toLocaleString("en-US");
    label.style.left = `${(x(at) / width) * 100}%`;
    labels.push(label);
  }
  axis.replaceChildren(...labels);
  const legend = box.querySelector(".legend");
  legend.replaceChildren("Ticks: ", ...data.legend.flatMap(([what, color], i) => {
    const swatch = document.createElement("span");
    swatch.className = "swatch"; swatch.style.background = color;
    return [...(i ? [" · "] : []), swatch, what];
  }), ` (hover for which) — drag the slider or click a tick to go to a step (the address bar keeps it: the link can be shared)${data.left_off}`);
}

function nearest(seqs, seq) {  // the seq in sorted `seqs` closest to `seq`
  let lo = 0, hi = seqs.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (seqs[mid] < seq) lo = mid + 1; else hi = mid; }
  const around = [seqs[lo - 1], seqs[lo]].filter((s) => s !== undefined);
  return around.sort((a, b) => Math.abs(a - seq) - Math.abs(b - seq))[0];
}

function where(data, seq) {
  const n = (v) => v.toLocaleString("en-US");
  return `Step ${n(seq)} (of steps ${n(data.first)}–${n(data.last)})`;
}

function moveCursor(box, data, seq) {
  const svg = box.querySelector("svg"), [lane, color] = data.kinds["you are here"];
  const cursor = tick(((seq - data.first) / (data.last - data.first)) * svg.clientWidth, lane, color,
    `what: you are here; step: ${seq}`);
  cursor.setAttribute("class", "cursor");
  box.querySelector(".cursor").replaceWith(cursor);
  box.querySelector(".where").textContent = where(data, seq);
}

function render(box, data) {
  const svg = box.querySelector("svg"), width = svg.clientWidth;
  const key = JSON.stringify([width, data.first, data.last, data.ticks, data.gaps, data.left_off]);
  if (box.drawnFor !== key) {
    draw(box, data, width);
    box.drawnFor = key;
  }
  const range = box.querySelector("input");
  if (!box.dragging) {  // the server's cursor; while a drag is under way, the hand's
    range.min = data.first; range.max = data.last; range.value = data.cursor;
    moveCursor(box, data, data.cursor);
  }
}

export default function ({ parentElement, data, setTriggerValue }) {
  const box = parentElement.querySelector(".strip");
  box.data = data;
  render(box, data);
  if (!box.resized) {  // drawn in pixels: drawn again when the page's width changes
    box.resized = new ResizeObserver(() => render(box, box.data));
    box.resized.observe(box);
  }
  const range = box.querySelector("input");
  range.oninput = () => {  // dragging: the cursor follows at once, the step is picked when let go
    box.dragging = true;
    moveCursor(box, box.data, Number(range.value));
  };
  range.onpointerup = range.onblur = () => { box.dragging = false; };  // let go where it started: no change
  range.onchange = () => {
    box.dragging = false;
    if (Number(range.value) !== box.data.cursor) setTriggerValue("picked", Number(range.value));
  };
  const svg = box.querySelector("svg");
  svg.onclick = (event) => {
    let seq = event.target.dataset?.seq;
    if (seq === undefined) {  // near a tick: the closest one in the lane clicked, within a few pixels
      const rect = svg.getBoundingClientRect();
      const seqs = box.lanes[Math.floor(((event.clientY - rect.top) / rect.height) * data.lanes.length)] || [];
      const at = data.first + ((event.clientX - rect.left) / rect.width) * (data.last - data.first);
      const found = seqs.length ? nearest(seqs, at) : undefined;
      if (found !== undefined && Math.abs(found - at) / (data.last - data.first) * rect.width <= NEAR_PX) seq = found;
    }
    if (seq !== undefined && Number(seq) !== data.cursor) setTriggerValue("picked", Number(seq));
  };
}
