// The attempt timeline: hovering, focusing or selecting a mark shows its log line under the timeline;
// selecting a mark scrolls to that line in the evidence trail, or (no evidence row shows it) opens the
// lines around it in the log under the timeline. No build step.
(function () {
  "use strict";

  function show(mark) {
    var box = document.getElementById("timeline-line");
    if (!box) return;
    var where = document.createElement("span");
    where.className = "small muted";
    where.textContent = mark.getAttribute("data-where");
    var line = document.createElement("code");
    line.textContent = mark.getAttribute("data-line");  // text, never HTML
    box.replaceChildren(where, document.createElement("br"), line);
  }

  function select(mark, event) {
    show(mark);
    var context = mark.getAttribute("data-context");
    if (context && window.htmx) {
      // no evidence row shows this line: open it in the log, under the timeline
      event.preventDefault();
      var box = document.getElementById("timeline-line");
      var lines = document.createElement("div");
      lines.id = "timeline-context";
      box.appendChild(lines);
      window.htmx.ajax("GET", context, { target: "#timeline-context", swap: "innerHTML" });
      return;
    }
    var id = mark.getAttribute("data-evidence");
    var item = id && document.getElementById("evidence-" + id);
    if (!item) return;
    event.preventDefault();
    document.querySelectorAll(".evidence-item.is-selected").forEach(function (other) {
      other.classList.remove("is-selected");
    });
    item.classList.add("is-selected");
    item.scrollIntoView({ block: "center" });
    item.focus({ preventScroll: true });
    history.replaceState(null, "", "#evidence-" + id);
  }

  function markOf(event) {
    return event.target.closest ? event.target.closest(".timeline .mark") : null;
  }

  document.addEventListener("mouseover", function (event) {
    var mark = markOf(event);
    if (mark) show(mark);
  });
  document.addEventListener("focusin", function (event) {
    var mark = markOf(event);
    if (mark) show(mark);
  });
  document.addEventListener("click", function (event) {
    var mark = markOf(event);
    if (mark) select(mark, event);
  });
  document.addEventListener("keydown", function (event) {
    var mark = markOf(event);
    if (mark && event.key === " ") select(mark, event);  // Enter follows the link: the click above
  });
})();
