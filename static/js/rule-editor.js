// The rule editor: CodeMirror (static/vendor/, no build step) over the form's textarea, with YAML highlighting and
// the line numbers of the whole text; the server's validation (htmx, #editor-errors) marked at its lines; find in
// the text; an error's link moves the cursor to its line. Without JavaScript the textarea and the error list work.
(function () {
  "use strict";

  function start() {
    var source = document.getElementById("rule-source");
    if (!source || !window.CodeMirror) return;
    var first = Number(source.getAttribute("data-first-line")) || 1;
    var editor = window.CodeMirror.fromTextArea(source, {
      mode: "yaml",
      lineNumbers: true,
      firstLineNumber: first,
      gutters: ["rule-marks", "CodeMirror-linenumbers"],
      indentUnit: 2,
      tabSize: 2,
      lineWrapping: false,
      extraKeys: { Tab: function (cm) { cm.execCommand("insertSoftTab"); } },
    });
    editor.getWrapperElement().setAttribute("aria-label", source.getAttribute("aria-label"));
    editor.getInputField().setAttribute("aria-label", source.getAttribute("aria-label"));
    var marked = [];

    // the textarea keeps the text: the form posts it, and its input event asks the server to check it
    editor.on("changes", function () {
      editor.save();
      source.dispatchEvent(new Event("input", { bubbles: true }));
    });

    function mark() {
      marked.forEach(function (handle) { editor.removeLineClass(handle, "background", "rule-bad-line"); });
      marked = [];
      editor.clearGutter("rule-marks");
      var reasons = {};
      document.querySelectorAll("#editor-errors .rule-error[data-here]").forEach(function (item) {
        var line = Number(item.getAttribute("data-line")) - first;
        (reasons[line] = reasons[line] || []).push(item.getAttribute("data-reason"));
      });
      Object.keys(reasons).forEach(function (key) {
        var line = Math.min(Number(key), editor.lineCount() - 1);
        var sign = document.createElement("span");
        sign.className = "rule-mark";
        sign.textContent = "!";
        sign.title = reasons[key].join("; ");
        editor.setGutterMarker(line, "rule-marks", sign);
        marked.push(editor.addLineClass(line, "background", "rule-bad-line"));
      });
    }

    function go(line) {
      var index = Math.max(0, Math.min(line - first, editor.lineCount() - 1));
      editor.focus();
      editor.setSelection({ line: index, ch: 0 }, { line: index, ch: editor.getLine(index).length });
      editor.scrollIntoView({ line: index, ch: 0 }, 80);
    }

    document.body.addEventListener("htmx:afterSettle", function (event) {
      if (event.target.id === "editor-errors") mark();
    });
    document.body.addEventListener("click", function (event) {
      var link = event.target.closest("#editor-errors a[data-line]");
      if (!link) return;
      event.preventDefault();
      go(Number(link.getAttribute("data-line")));
    });

    // find in the text, from the cursor on (or back), around the end
    var find = document.getElementById("editor-find");
    var query = document.getElementById("find-text");
    var result = document.getElementById("find-result");
    function seek(back) {
      var text = query.value;
      if (!text) return;
      var cursor = editor.getSearchCursor(text, back ? editor.getCursor("from") : editor.getCursor("to"), { caseFold: true });
      var found = back ? cursor.findPrevious() : cursor.findNext();
      if (!found) {
        cursor = editor.getSearchCursor(text, back ? { line: editor.lastLine() + 1, ch: 0 } : { line: 0, ch: 0 }, { caseFold: true });
        found = back ? cursor.findPrevious() : cursor.findNext();
      }
      if (!found) {
        result.textContent = "not found";
        return;
      }
      editor.setSelection(cursor.from(), cursor.to());
      editor.scrollIntoView({ from: cursor.from(), to: cursor.to() }, 80);
      result.textContent = "line " + (cursor.from().line + first);
    }
    find.hidden = false;
    query.addEventListener("keydown", function (event) {
      if (event.key === "Enter") {
        event.preventDefault();
        seek(event.shiftKey);
      }
    });
    document.getElementById("find-next").addEventListener("click", function () { seek(false); });
    document.getElementById("find-previous").addEventListener("click", function () { seek(true); });
    editor.setOption("extraKeys", Object.assign({}, editor.getOption("extraKeys"), {
      "Ctrl-F": function () { query.focus(); query.select(); },
      "Cmd-F": function () { query.focus(); query.select(); },
    }));

    mark();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
