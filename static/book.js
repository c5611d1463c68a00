// The book's own script (third-party files live in vendor/): explorers as one figure, figures
// that open at full size, and a visible cue on any box that scrolls sideways.
(function () {
  "use strict";

  // An explorer cell holds its numbered figure (the static image) and, after it, the widget that
  // the ipywidgets HTML manager draws into a div.widget-subarea. Move the widget into the figure,
  // above the caption; CSS then hides the static image (figure.explorer-live).
  function adoptExplorers() {
    document.querySelectorAll("div.cell_output > div.widget-subarea").forEach(function (area) {
      var figure = area.parentElement.querySelector(":scope > figure");
      if (!figure || !area.querySelector("img")) return;
      figure.insertBefore(area, figure.querySelector("figcaption"));
      figure.classList.add("explorer-live");
    });
  }

  // Any figure image opens at its full size (a phone shrinks a 690-px figure to half).
  function zoom(img) {
    var layer = document.createElement("div");
    layer.className = "figure-zoom";
    layer.setAttribute("role", "dialog");
    var note = document.createElement("p");
    note.textContent = "Full size: scroll to move, tap to close.";
    var big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt;
    layer.appendChild(note);
    layer.appendChild(big);
    layer.addEventListener("click", function () { layer.remove(); });
    document.body.appendChild(layer);
  }
  document.addEventListener("click", function (event) {
    var img = event.target.closest && event.target.closest("main figure img, main .widget-image img, main img.widget-image");
    if (img) zoom(img);
  });

  // Boxes wider than the column scroll inside themselves; mark those that do.
  var SCROLLERS = 'main div.math, main mjx-container[display="true"], main div.highlight pre, ' +
    "main .pst-scrollable-table-container, main table.claims-ledger, main div.output.text_html";
  function markScrollers() {
    document.querySelectorAll(SCROLLERS).forEach(function (box) {
      var wide = box.scrollWidth > box.clientWidth + 1;
      box.classList.toggle("scroll-cue", wide);
      var next = box.nextElementSibling;
      var labelled = next && next.classList.contains("scroll-cue-label");
      if (wide && !labelled) {
        var label = document.createElement("div");
        label.className = "scroll-cue-label";
        label.textContent = "⇆ scroll sideways";
        box.insertAdjacentElement("afterend", label);
      } else if (!wide && labelled) {
        next.remove();
      }
    });
  }

  // An inline formula wider than the column (a phone) cannot break: let it scroll, with the cue.
  function markWideInlineMath() {
    var main = document.querySelector("main");
    if (!main) return;
    var right = main.getBoundingClientRect().right;
    document.querySelectorAll('main mjx-container:not([display="true"])').forEach(function (math) {
      if (math.classList.contains("scroll-cue")) return;
      if (math.getBoundingClientRect().right > right + 1) math.classList.add("scroll-cue");
    });
  }

  function settle() {
    adoptExplorers();
    markWideInlineMath();
    markScrollers();
  }
  document.addEventListener("DOMContentLoaded", settle);
  window.addEventListener("load", settle);
  window.addEventListener("resize", markScrollers);
  // MathJax loads after this script: once its first typesetting is done, measure again
  var waitForMath = setInterval(function () {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      clearInterval(waitForMath);
      MathJax.startup.promise.then(settle);
    }
  }, 100);
  new MutationObserver(function (records) {
    if (records.some(function (r) { return r.addedNodes.length; })) adoptExplorers();
  }).observe(document.documentElement, { childList: true, subtree: true });
  var tries = 0;
  var timer = setInterval(function () {  // MathJax typesets after load; re-measure a few times
    markWideInlineMath();
    markScrollers();
    if (++tries > 20) clearInterval(timer);
  }, 500);
})();
