// Lines around a log line (the evidence trail's "Surrounding lines", a timeline mark's log): when htmx brings
// them in, scroll their box so the matched line sits in its middle, not at the bottom edge. No build step.
(function () {
  "use strict";

  function centre(list) {
    var hit = list.querySelector("li.hit");
    if (!hit) return;
    list.scrollTop = hit.offsetTop - (list.clientHeight - hit.offsetHeight) / 2;
  }

  document.addEventListener("htmx:afterSwap", function (event) {
    event.detail.target.querySelectorAll(".context-lines").forEach(centre);
  });
})();
