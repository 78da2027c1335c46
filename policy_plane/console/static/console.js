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
  // Reloads made here say so (auto=1): the plane does not count them as the operator's activity,
  // so an unattended console still signs out when its idle time is up.
  if (seconds > 0 && (!box || box.checked)) {
    window.setTimeout(function () {
      var url = new URL(window.location.href);
      url.searchParams.set("auto", "1");
      window.location.replace(url.toString());
    }, seconds * 1000);
  }
})();
