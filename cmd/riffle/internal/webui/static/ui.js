// riffle web UI: the only script. Copy buttons copy the text of the field
// they name; the network page updates itself from this UI's own JSON API.
// Nothing is fetched from anywhere else.
"use strict";
document.addEventListener("click", function (ev) {
  var b = ev.target.closest("button[data-copy]");
  if (!b) return;
  var field = document.getElementById(b.getAttribute("data-copy"));
  if (!field) return;
  field.select();
  var done = function () { b.textContent = "copied"; };
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(field.value).then(done, function () { document.execCommand("copy"); done(); });
  } else {
    document.execCommand("copy");
    done();
  }
});

// Live pages (data-api): every 2 s, the elements named by data-text take
// the strings the API formatted, the chart image reloads and the chain is
// rebuilt. textContent only: nicknames are strangers' strings. A failed
// request leaves the page as it was until the next one.
(function () {
  var live = document.getElementById("live");
  if (!live || !window.fetch) return;
  var api = live.getAttribute("data-api");
  function cell(tr, s, cls, code) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    var el = td;
    if (code) { el = document.createElement("code"); td.appendChild(el); }
    el.textContent = s;
    tr.appendChild(td);
  }
  function chain(servers) {
    var body = document.querySelector("#chain tbody");
    if (!body) return;
    var rows = document.createDocumentFragment();
    servers.forEach(function (s, i) {
      var tr = document.createElement("tr");
      cell(tr, String(i), "num");
      cell(tr, s.nick, "name");
      cell(tr, s.peer_id, "", true);
      cell(tr, (s.primary ? "primary " : "") + (s.pinned ? "pinned" : ""));
      rows.appendChild(tr);
    });
    if (!servers.length) {
      var tr = document.createElement("tr");
      cell(tr, "no chain yet", "empty");
      tr.firstChild.colSpan = 4;
      rows.appendChild(tr);
    }
    body.replaceChildren(rows);
  }
  function tick() {
    fetch(api, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error("status " + r.status);
      return r.json();
    }).then(function (v) {
      live.querySelectorAll("[data-text]").forEach(function (el) {
        var s = v.text && v.text[el.getAttribute("data-text")];
        if (typeof s === "string" && el.textContent !== s) el.textContent = s;
      });
      var epoch = document.getElementById("epoch"), waiting = document.getElementById("waiting");
      if (epoch) epoch.hidden = !v.in_epoch;
      if (waiting) waiting.hidden = !!v.in_epoch;
      var img = document.getElementById("chart");
      if (img) img.src = "/network/chart.svg?at=" + Date.now();
      chain(v.chain || []);
    }).catch(function () {}).then(function () { setTimeout(tick, 2000); });
  }
  setTimeout(tick, 2000);
})();
