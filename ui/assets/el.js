// One element made with its class and text (set as text, never as HTML): shared by the scripts bundled
// after it (ui/components.py).
function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

