// Progressive enhancement of the clip explorer: the page works as a plain form;
// with JavaScript the numbers follow the sliders (computed on the server, /api/clip).
(function () {
  var form = document.getElementById("clip-form");
  if (!form) return;
  var fmt = function (x, d) { return (x === 0 ? 0 : x).toFixed(d); };
  var update = function () {
    var q = "r=" + encodeURIComponent(form.r.value) + "&adv=" + encodeURIComponent(form.adv.value) +
            "&eps=" + encodeURIComponent(form.eps.value);
    fetch("/api/clip?" + q).then(function (res) { return res.json(); }).then(function (p) {
      if (p.error) { document.getElementById("out-case").textContent = p.error; return; }
      document.getElementById("out-r").textContent = fmt(p.r, 2);
      document.getElementById("out-adv").textContent = fmt(p.adv, 2);
      document.getElementById("out-unclipped").textContent = fmt(p.unclipped, 4);
      document.getElementById("out-clipped").textContent = fmt(p.clipped, 4);
      document.getElementById("out-objective").textContent = fmt(p.objective, 4);
      document.getElementById("out-gradient").textContent = fmt(p.gradient, 4);
      document.getElementById("out-flows").textContent = p.flows ? "flows" : "zero";
      document.getElementById("out-case").textContent = p.case;
      // The sweep and the chart follow Â and ε as well (they are recomputed on the server).
      var body = document.getElementById("clip-sweep-body");
      if (body && p.curve) {
        while (body.firstChild) body.removeChild(body.firstChild);
        p.curve.forEach(function (c) {
          var tr = document.createElement("tr");
          [fmt(c.r, 2), fmt(c.objective, 2), c.flows ? "flows" : "0"].forEach(function (text, i) {
            var td = document.createElement("td");
            td.textContent = text;
            if (i === 1) td.className = c.flows ? "flows" : "zero";
            tr.appendChild(td);
          });
          body.appendChild(tr);
        });
      }
      if (p.chart) {
        document.getElementById("chart-line").setAttribute("points", p.chart.points);
        document.getElementById("chart-point").setAttribute("cx", p.chart.px);
        document.getElementById("chart-point").setAttribute("cy", p.chart.py);
        var band = document.getElementById("chart-band");
        band.setAttribute("x", p.chart.x_lo);
        band.setAttribute("width", p.chart.x_hi - p.chart.x_lo);
        document.getElementById("chart-range").textContent =
          "min " + fmt(p.chart.lo, 2) + " … max " + fmt(p.chart.hi, 2);
      }
    });
  };
  ["r", "adv", "eps"].forEach(function (name) { form[name].addEventListener("input", update); });
})();
