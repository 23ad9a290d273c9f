// The runs' filters (the runs and analytics pages' sidebar): every field shows what the link says, and a
// change sends the one filter changed ("set": {key, value}; "" or false lets it go) or "clear" for all.
// Fields are made once per set of fields and options; from run to run only their values are set.
// Bundled after el.js (ui/components.py).
function field(spec) {
  const wrap = el("label", `field ${spec.kind}`);
  const title = labelled("span", "label", spec.label, spec.help);
  let input;
  if (spec.kind === "choice") {
    input = el("select");
    input.append(
      ...spec.options.map(([value, label]) => {
        const o = el("option", "", label);
        o.value = value;
        return o;
      }),
    );
  } else {
    input = el("input");
    input.type = { text: "search", date: "date", toggle: "checkbox" }[spec.kind];
    if (spec.kind === "toggle") input.setAttribute("role", "switch");
    if (spec.placeholder) input.placeholder = spec.placeholder;
  }
  input.name = spec.key;
  wrap.append(...(spec.kind === "toggle" ? [input, title] : [title, input]));
  return wrap;
}

function build(box, data) {
  const fields = box.querySelector(".fields"),
    more = box.querySelector("details.more .fields");
  fields.replaceChildren(...data.fields.filter((f) => !data.more.includes(f.key) && f.kind !== "toggle").map(field));
  more.replaceChildren(...data.fields.filter((f) => data.more.includes(f.key)).map(field));
  box.querySelector(".toggles").replaceChildren(...data.fields.filter((f) => f.kind === "toggle").map(field));
}

function show(box, data) {
  // what the link says, except in the field being typed in
  for (const spec of data.fields) {
    const input = box.querySelector(`[name="${spec.key}"]`);
    if (spec.kind === "toggle") input.checked = spec.value;
    else if (input !== box.getRootNode().activeElement) input.value = spec.value;
  }
  if (data.fields.some((f) => data.more.includes(f.key) && f.value)) box.querySelector("details.more").open = true;
  box.querySelector("button.clear").disabled = !data.active;
}

export default function ({ parentElement, data, setTriggerValue }) {
  const box = parentElement.querySelector(".filters");
  const shape = JSON.stringify(data.fields.map(({ value, ...rest }) => rest));
  if (box.shape !== shape) {
    build(box, data);
    box.shape = shape;
  }
  show(box, data);
  box.onchange = (event) => {
    const input = event.target.closest("input, select");
    if (!input?.name) return;
    setTriggerValue("set", { key: input.name, value: input.type === "checkbox" ? input.checked : input.value.trim() });
  };
  box.querySelector("button.clear").onclick = () => setTriggerValue("clear", true);
  box.onsubmit = (event) => event.preventDefault(); // Enter in a field: its change is sent, nothing submitted
}
