// tenantguard console: the little that needs a script (served from the plane, CSP script-src 'self').
"use strict";
(function () {
  var body = document.body;
  var seconds = parseInt(body.getAttribute("data-refresh") || "0", 10);
  var box = document.getElementById("auto-refresh");
  var key = "tg-console-refresh";
  if (box) {
    box.checked = window.sessionStorage.getItem(key) !== "off";
    box.addEventListener("change", function () {
      window.sessionStorage.setItem(key, box.checked ? "on" : "off");
      if (box.checked) { window.location.reload(); }
    });
  }
  if (seconds > 0 && (!box || box.checked)) {
    window.setTimeout(function () { window.location.reload(); }, seconds * 1000);
  }
})();
