// A row of numbers, each a label, a value and, where given, its change against a period before (an arrow
// for its direction, a colour for whether that is good or bad). Bundled after el.js (ui/components.py).
export default function ({ parentElement, data }) {
  const row = parentElement.querySelector(".metrics");
  row.style.setProperty("--card-width", data.width ? `${data.width}px` : "");
  row.classList.toggle("fixed", !!data.width);
  row.style.setProperty("--columns", data.columns || "");
  row.replaceChildren(
    ...data.cards.map((card) => {
      const box = el("div", "metric");
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", card.label);
      box.append(labelled("div", "label", card.label, card.help), el("div", "value", card.value));
      if (card.delta) {
        box.append(el("div", `delta ${card.tone || "neutral"}`, `${card.delta.startsWith("-") ? "↓" : "↑"} ${card.delta}`));
      }
      return box;
    }),
  );
}
