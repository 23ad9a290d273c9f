// One element made with its class and text (set as text, never as HTML), and a label with its help:
// shared by the scripts bundled after it (ui/components.py).
function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function labelled(tag, className, text, help) {
  // a label, with a "?" that shows `help` on hover when given
  const label = el(tag, className, text);
  if (help) {
    const mark = el("span", "help", "?");
    mark.title = help;
    mark.setAttribute("aria-label", help);
    label.append(" ", mark);
  }
  return label;
}
