// The rule editor: keep the line numbers beside the text as it scrolls, and move the caret to an
// error's line when its link is followed. Everything else (validation) is server-side, over htmx.
document.addEventListener("DOMContentLoaded", () => {
  const source = document.getElementById("rule-source");
  if (!source) return;
  const sync = () => {
    const gutter = document.getElementById("editor-gutter");
    if (gutter) gutter.scrollTop = source.scrollTop;
  };
  source.addEventListener("scroll", sync);
  document.body.addEventListener("htmx:afterSwap", sync);
  document.body.addEventListener("click", (event) => {
    const link = event.target.closest("a[data-line]");
    if (!link) return;
    event.preventDefault();
    const line = Number(link.dataset.line);
    const lines = source.value.split("\n");
    const start = lines.slice(0, line - 1).reduce((sum, text) => sum + text.length + 1, 0);
    source.focus();
    source.setSelectionRange(start, start + (lines[line - 1] || "").length);
    source.scrollTop = (line - 3) * parseFloat(getComputedStyle(source).lineHeight);
    sync();
  });
});
