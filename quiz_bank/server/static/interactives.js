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
    });
  };
  ["r", "adv", "eps"].forEach(function (name) { form[name].addEventListener("input", update); });
})();
