// rocketq dashboard: live charts. Each <canvas class="chart" data-url=... data-series="a,b"
// data-live="id1,id2"> polls its JSON every 2 s, keeps the last 90 points of each series,
// draws them as lines, and writes the newest values into the elements named by data-live.
"use strict";
(function () {
  var COLORS = ["#2864d8", "#e0673a", "#1b7f3b", "#8a3ffc"];
  var KEEP = 90, PERIOD_MS = 2000;

  function draw(canvas, names, points) {
    var ctx = canvas.getContext("2d"), w = canvas.width, h = canvas.height, pad = 28;
    ctx.clearRect(0, 0, w, h);
    var max = 1;
    points.forEach(function (p) { names.forEach(function (n) { if (p[n] > max) max = p[n]; }); });
    ctx.strokeStyle = "#dde2ea"; ctx.fillStyle = "#6b7385"; ctx.font = "11px system-ui, sans-serif"; ctx.lineWidth = 1;
    for (var g = 0; g <= 4; g++) {
      var y = pad / 2 + (h - pad) * g / 4;
      ctx.beginPath(); ctx.moveTo(pad + 14, y); ctx.lineTo(w, y); ctx.stroke();
      ctx.fillText(String(Math.round(max * (4 - g) / 4 * 10) / 10), 0, y + 4);
    }
    names.forEach(function (n, i) {
      ctx.strokeStyle = COLORS[i % COLORS.length]; ctx.lineWidth = 2; ctx.beginPath();
      points.forEach(function (p, j) {
        var x = pad + 14 + (w - pad - 14) * (points.length < 2 ? 1 : j / (points.length - 1));
        var y = pad / 2 + (h - pad) * (1 - (p[n] || 0) / max);
        if (j === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
      });
      ctx.stroke();
    });
  }

  function legend(canvas, names) {
    var div = document.createElement("div");
    div.className = "legend";
    names.forEach(function (n, i) {
      var sw = document.createElement("i"); sw.style.background = COLORS[i % COLORS.length];
      div.appendChild(sw); div.appendChild(document.createTextNode(n));
    });
    canvas.parentNode.insertBefore(div, canvas.nextSibling);
  }

  function start(canvas) {
    var names = (canvas.dataset.series || "").split(",").filter(Boolean);
    var live = (canvas.dataset.live || "").split(",");
    var points = [];
    legend(canvas, names);
    function tick() {
      fetch(canvas.dataset.url, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (data) {
          if (!data) return;
          points.push(data);
          if (points.length > KEEP) points.shift();
          draw(canvas, names, points);
          names.forEach(function (n, i) {
            var el = live[i] && document.getElementById(live[i]);
            if (el && data[n] !== undefined) el.textContent = typeof data[n] === "number" && n.indexOf("tps") >= 0 ? data[n].toFixed(1) : String(data[n]);
          });
          canvas.dataset.updates = String(Number(canvas.dataset.updates || 0) + 1);
        })
        .catch(function () { /* the next tick tries again */ })
        .finally(function () { setTimeout(tick, PERIOD_MS); });
    }
    tick();
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("canvas.chart"), start);
  });
})();
