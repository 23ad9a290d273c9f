// The timeline's strip: a slider over the run's steps, a tick per place worth going to, in lanes,
// and the cursor; then the jump buttons and a go-to box. Letting go of the slider, or a key on it,
// picks its step; so does clicking a tick (or near one, in its lane), a jump button or its key, or a
// step number entered in the box. The ticks are drawn again only when they change: from click to
// click only the cursor, the slider and the buttons' targets move. Bundled after el.js (ui/components.py).
const SVG = "http://www.w3.org/2000/svg";
const LANE = 20,
  TICK = 3,
  NEAR_PX = 8;

function laneRect(x, width, lane, color, label) {
  // a mark in its lane, from x for width pixels
  const rect = document.createElementNS(SVG, "rect");
  rect.setAttribute("x", x);
  rect.setAttribute("width", width);
  rect.setAttribute("y", lane * LANE + 3);
  rect.setAttribute("height", LANE - 6);
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

function roundStep(span) {
  // 1, 2 or 5 times a power of ten, a whole step at least: at most 10 labels on the axis
  const raw = span / 10,
    power = 10 ** Math.floor(Math.log10(raw));
  return Math.max(
    1,
    [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw),
  );
}

function draw(box, data, width) {
  const { first, last } = data,
    span = last - first;
  const x = (seq) => ((seq - first) / span) * width;
  const marks = box.querySelector(".marks");
  const byLane = data.lanes.map(() => []);
  const drawn = [];
  const [gapLane, gapColor] = data.kinds.missing;
  for (const [start, end] of data.gaps) {
    drawn.push(
      laneRect(
        x(start),
        Math.max(x(end) - x(start), 0.5),
        gapLane,
        gapColor,
        `what: missing; steps: ${start + 0.5}–${end - 0.5}`,
      ),
    );
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
  const axis = box.querySelector(".axis"),
    step = roundStep(span),
    labels = [];
  for (let at = Math.ceil(first / step) * step; at <= last; at += step) {
    const label = document.createElement("span");
    label.textContent = at.toLocaleString("en-US");
    label.style.left = `${(x(at) / width) * 100}%`;
    labels.push(label);
  }
  axis.replaceChildren(...labels);
  const legend = box.querySelector(".legend");
  legend.replaceChildren(
    "Ticks: ",
    ...data.legend.flatMap(([what, color], i) => {
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = color;
      return [...(i ? [" · "] : []), swatch, what];
    }),
    ` (hover for which) — drag the slider or click a tick to go to a step (the address bar keeps it: the link can be shared)${data.left_off}`,
  );
}

function nearest(seqs, seq) {
  // the seq in sorted `seqs` closest to `seq`
  let lo = 0,
    hi = seqs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (seqs[mid] < seq) lo = mid + 1;
    else hi = mid;
  }
  const around = [seqs[lo - 1], seqs[lo]].filter((s) => s !== undefined);
  return around.sort((a, b) => Math.abs(a - seq) - Math.abs(b - seq))[0];
}

function where(data, seq) {
  const n = (v) => v.toLocaleString("en-US");
  return `Step ${n(seq)} (of steps ${n(data.first)}–${n(data.last)})`;
}

function moveCursor(box, data, seq) {
  const svg = box.querySelector("svg"),
    [lane, color] = data.kinds["you are here"];
  const cursor = tick(
    ((seq - data.first) / (data.last - data.first)) * svg.clientWidth,
    lane,
    color,
    `what: you are here; step: ${seq}`,
  );
  cursor.setAttribute("class", "cursor");
  box.querySelector(".cursor").replaceWith(cursor);
  box.querySelector(".where").textContent = where(data, seq);
}

function jumps(box, data) {
  // the buttons made once, their targets set on every render
  const row = box.querySelector(".jumps");
  if (!row.childElementCount) {
    row.append(
      ...data.jumps.map(([name, label, , key]) => {
        const button = el("button", "jump", label);
        button.type = "button";
        button.dataset.jump = name;
        if (key) button.setAttribute("aria-keyshortcuts", key);
        return button;
      }),
    );
  }
  for (const [name, , seq, key] of data.jumps) {
    const button = row.querySelector(`[data-jump="${name}"]`);
    button.disabled = seq === null;
    button.title = seq === null ? "Nowhere to go" : `Step ${seq}${key ? ` (key: ${KEY_NAMES[key] || key})` : ""}`;
  }
  const goto = box.querySelector(".goto input");
  goto.min = data.first;
  goto.max = data.last;
}

const KEY_NAMES = { ArrowLeft: "←", ArrowRight: "→" };

// what takes keys itself: a field, a select, the slider, and the controls that move by arrow keys
const OWN_KEYS =
  "input, textarea, select, [contenteditable], [role=slider], [role=combobox], [role=textbox], [role=listbox], " +
  "[role=radiogroup], [role=radio], [role=tablist], [role=tab], [role=menu], [role=menuitem], [role=grid]";

function typing(event) {
  // a key meant for the control that has the focus: not a jump's
  const target = event.composedPath()[0];
  return event.altKey || event.ctrlKey || event.metaKey || (target instanceof Element && !!target.closest(OWN_KEYS));
}

function render(box, data) {
  jumps(box, data);
  const single = data.first === data.last; // one step: nothing to slide over
  box.classList.toggle("single", single);
  if (single) return;
  const svg = box.querySelector("svg"),
    width = svg.clientWidth;
  const key = JSON.stringify([width, data.first, data.last, data.ticks, data.gaps, data.left_off]);
  if (box.drawnFor !== key) {
    draw(box, data, width);
    box.drawnFor = key;
  }
  const range = box.querySelector("input");
  if (!box.dragging) {
    // the server's cursor; while a drag is under way, the hand's
    range.min = data.first;
    range.max = data.last;
    range.value = data.cursor;
    moveCursor(box, data, data.cursor);
  }
}

export default function ({ parentElement, data, setTriggerValue }) {
  const box = parentElement.querySelector(".strip");
  box.data = data;
  render(box, data);
  const pick = (seq) => {
    if (seq !== box.data.cursor) setTriggerValue("picked", seq);
  };
  box.querySelector(".jumps").onclick = (event) => {
    const button = event.target.closest("button.jump");
    const jump = button && box.data.jumps.find(([name]) => name === button.dataset.jump);
    if (jump && jump[2] !== null) pick(jump[2]);
  };
  box.querySelector(".goto").onsubmit = (event) => {
    event.preventDefault();
    const input = event.target.querySelector("input"),
      seq = Number(input.value);
    if (input.value !== "" && Number.isInteger(seq)) pick(seq); // the page takes one past the run to its nearer end
    input.value = ""; // the box asks again: an old number beside a new cursor reads as where you are
  };
  document.removeEventListener("keydown", box.onKey); // one listener, whichever render set it
  box.onKey = (event) => {
    if (!box.isConnected) {
      document.removeEventListener("keydown", box.onKey);
      return;
    } // the page moved on
    if (event.defaultPrevented || typing(event)) return;
    const jump = box.data.jumps.find(([, , seq, key]) => key && seq !== null && key.toLowerCase() === event.key.toLowerCase());
    if (jump) {
      event.preventDefault();
      pick(jump[2]);
    }
  };
  document.addEventListener("keydown", box.onKey);
  if (!box.resized) {
    // drawn in pixels: drawn again when the page's width changes
    box.resized = new ResizeObserver(() => render(box, box.data));
    box.resized.observe(box);
  }
  const range = box.querySelector("input");
  range.oninput = () => {
    // dragging: the cursor follows at once, the step is picked when let go
    box.dragging = true;
    moveCursor(box, box.data, Number(range.value));
  };
  range.onpointerup = range.onblur = () => {
    box.dragging = false;
  }; // let go where it started: no change
  range.onchange = () => {
    box.dragging = false;
    pick(Number(range.value));
  };
  const svg = box.querySelector("svg");
  svg.onclick = (event) => {
    let seq = event.target.dataset?.seq;
    if (seq === undefined) {
      // near a tick: the closest one in the lane clicked, within a few pixels
      const rect = svg.getBoundingClientRect();
      const seqs = box.lanes[Math.floor(((event.clientY - rect.top) / rect.height) * data.lanes.length)] || [];
      const at = data.first + ((event.clientX - rect.left) / rect.width) * (data.last - data.first);
      const found = seqs.length ? nearest(seqs, at) : undefined;
      if (found !== undefined && (Math.abs(found - at) / (data.last - data.first)) * rect.width <= NEAR_PX) seq = found;
    }
    if (seq !== undefined) pick(Number(seq));
  };
  return () => document.removeEventListener("keydown", box.onKey);
}
