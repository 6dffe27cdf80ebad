// The upload page (pages/templates/pages/upload.html): send the bundle with its progress shown, then go to the new
// attempt's page. Without this script the form posts as any form does; the server refuses with the same words.
(function () {
  "use strict";

  function megabytes(bytes) {
    return (bytes / 1048576).toFixed(1) + " MB";
  }

  function start() {
    var form = document.getElementById("upload-form");
    if (!form) return;
    var input = document.getElementById("upload-bundle");
    var submit = document.getElementById("upload-submit");
    var progress = document.getElementById("upload-progress");
    var bar = document.getElementById("upload-bar");
    var percent = document.getElementById("upload-percent");
    var status = document.getElementById("upload-status");
    var problem = document.getElementById("upload-problem");

    function refuse(message, storedUrl) {
      problem.textContent = "Refused: " + message;
      if (storedUrl) {
        var link = document.createElement("a");
        link.href = storedUrl;
        link.textContent = "The attempt already stored";
        problem.append(" ", link);
      }
      status.textContent = "";
      progress.hidden = true;
      submit.disabled = false;
      input.focus();
    }

    form.addEventListener("submit", function (event) {
      var file = input.files[0];
      if (!file) return; // the browser says the field is required
      event.preventDefault();
      problem.textContent = "";
      if (file.size > Number(form.dataset.maxBytes)) {
        refuse(form.dataset.tooLarge);
        return;
      }
      var request = new XMLHttpRequest();
      request.open("POST", form.action);
      request.setRequestHeader("Accept", "application/json");
      request.upload.addEventListener("progress", function (sent) {
        if (!sent.lengthComputable) return;
        var share = Math.round((100 * sent.loaded) / sent.total);
        bar.value = share;
        percent.textContent = share + " % (" + megabytes(sent.loaded) + " of " + megabytes(sent.total) + ")";
      });
      request.upload.addEventListener("load", function () {
        bar.value = 100;
        status.textContent = "Uploaded; checking and storing the bundle…";
      });
      request.addEventListener("load", function () {
        var answer = null;
        try {
          answer = JSON.parse(request.responseText);
        } catch (error) {
          refuse("the server answered " + request.status + " " + request.statusText);
          return;
        }
        if (request.status === 202 && answer.page_url) {
          status.textContent = "Stored; opening its page…";
          window.location.assign(answer.page_url);
        } else if (answer.error) {
          refuse(answer.error.message, answer.stored_url);
        } else {
          refuse("the server answered " + request.status + " " + request.statusText);
        }
      });
      request.addEventListener("error", function () {
        refuse("the upload did not reach the server (the connection failed)");
      });
      submit.disabled = true;
      progress.hidden = false;
      bar.value = 0;
      percent.textContent = "0 % (0.0 MB of " + megabytes(file.size) + ")";
      status.textContent = "Uploading " + file.name + "…";
      request.send(new FormData(form));
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
