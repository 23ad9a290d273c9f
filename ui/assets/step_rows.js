// The steps around the timeline's cursor, one button a step, under a heading per decision cycle.
// Everything from the trace is set as text (textContent), never as HTML.
export default function ({ parentElement, data, setTriggerValue }) {
  const list = parentElement.querySelector(".rows");
  list.replaceChildren(
    ...data.rows.map((row) => {
      if (row.seq === undefined) {
        const line = document.createElement("div");
        line.className = row.kind;
        line.textContent = row.text;
        return line;
      }
      const button = document.createElement("button");
      button.type = "button";
      button.className = row.current ? "step current" : "step";
      button.dataset.seq = String(row.seq);
      button.textContent = row.text;
      if (row.current) button.setAttribute("aria-current", "step");
      return button;
    }),
  );
  list.onclick = (event) => {
    const button = event.target.closest("button.step");
    if (button && !button.classList.contains("current")) setTriggerValue("picked", Number(button.dataset.seq));
  };
}
