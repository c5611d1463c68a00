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

  // ---------------------------------------------------------------------------------------------
  // Accessibility (issue 25): what the theme and the widget library leave out.

  // A control's accessible name must contain its visible text (WCAG 2.5.3): the theme's search
  // button reads "Search Ctrl+K" but is named "Search"; the theme switch names itself "light/dark".
  function nameControls() {
    document.querySelectorAll("button[aria-label], a[aria-label], summary[aria-label]").forEach(function (el) {
      var shown = (el.innerText || "").replace(/\s+/g, " ").trim();
      var name = el.getAttribute("aria-label");
      if (!shown || name.toLowerCase().indexOf(shown.toLowerCase()) >= 0) return;
      if (el.tagName === "SUMMARY") {
        // sphinx-togglebutton's folds read "Show code cell source" / "Hide ...": that text is the name
        el.removeAttribute("aria-label");
      } else {
        el.setAttribute("aria-label", shown.indexOf(name) === 0 ? shown : name + " (" + shown + ")");
      }
    });
    document.querySelectorAll(".theme-switch-button").forEach(function (el) {
      el.setAttribute("aria-label", "Colour mode: light, dark or as the system");
    });
    // the sidebar's folds: a summary holding only a chevron gets the name of its section
    document.querySelectorAll("nav details > summary, .bd-sidebar details > summary").forEach(function (s) {
      if ((s.textContent || "").trim() || s.getAttribute("aria-label")) return;
      var item = s.closest("li");
      var link = item && item.querySelector(":scope > a");
      var what = link ? link.textContent.replace(/\s+/g, " ").trim() : "this section";
      s.setAttribute("aria-label", "Sections of " + what);
    });
    // the ledger's folds: a link inside a <summary> is a control inside a control; the chapter's
    // link moves to the first line of its fold
    document.querySelectorAll("details.claims-chapter-group > summary a[href]").forEach(function (a) {
      var title = document.createElement("span");
      title.textContent = a.textContent;
      a.replaceWith(title);
      var line = document.createElement("p");
      line.className = "claims-chapter-link";
      a.textContent = "Open the chapter: " + a.textContent;
      line.appendChild(a);
      title.closest("summary").insertAdjacentElement("afterend", line);
    });
  }

  // Explorers by keyboard and screen reader: every frame has a text alternative (the figure's,
  // with the control's value), the slider handle its name and value, toggle buttons their state,
  // and a live region says which view is shown after each change.
  function explorerControls(figure) {
    var staticImg = figure.querySelector(":scope > img");
    var base = staticImg ? staticImg.getAttribute("alt") || "" : "";
    var label = figure.querySelector(".widget-label, .widget-slider label, .widget-toggle-buttons label");
    var what = label ? label.textContent.trim() : "view";
    var current = function () {
      var readout = figure.querySelector(".widget-readout");
      if (readout && readout.textContent.trim()) return readout.textContent.trim();
      var on = figure.querySelector(".widget-toggle-button.mod-active, .widget-toggle-buttons button.mod-active");
      return on ? on.textContent.trim() : "";
    };
    var frames = figure.querySelectorAll(".widget-image img, img.widget-image");
    frames.forEach(function (img, i) {
      // the frame shown names the control's value; hidden frames are not read
      var shown = img.getBoundingClientRect().width > 0;
      var view = shown ? "View for " + what + " = " + current() : "Another view of this figure";
      img.setAttribute("alt", view + ". " + base);
    });
    var live = figure.querySelector(".explorer-live-region");
    if (!live) {
      live = document.createElement("p");
      live.className = "explorer-live-region visually-hidden";
      live.setAttribute("aria-live", "polite");
      figure.appendChild(live);
    }
    figure.querySelectorAll('.noUi-handle, [role="slider"]').forEach(function (h) {
      h.setAttribute("aria-label", what);
      h.setAttribute("aria-valuetext", current());
    });
    figure.querySelectorAll(".widget-toggle-buttons button").forEach(function (b) {
      b.setAttribute("aria-pressed", b.classList.contains("mod-active") ? "true" : "false");
    });
    var group = figure.querySelector(".widget-toggle-buttons");
    if (group) { group.setAttribute("role", "group"); group.setAttribute("aria-label", what); }
    return {live: live, current: current, what: what};
  }
  function watchExplorers() {
    document.querySelectorAll("figure.explorer-live").forEach(function (figure) {
      if (figure.dataset.a11y) { explorerControls(figure); return; }
      figure.dataset.a11y = "1";
      var state = explorerControls(figure);
      var last = state.current();
      var announce = function () {
        setTimeout(function () {
          state = explorerControls(figure);
          var now = state.current();
          if (now && now !== last) {
            last = now;
            state.live.textContent = "Figure shows " + state.what + " = " + now + ".";
          }
        }, 60);
      };
      ["keyup", "click", "pointerup", "change", "input"].forEach(function (type) {
        figure.addEventListener(type, announce);
      });
    });
  }

  function settle() {
    nameControls();
    adoptExplorers();
    watchExplorers();
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
    if (records.some(function (r) { return r.addedNodes.length; })) {
      adoptExplorers();
      watchExplorers();
    }
  }).observe(document.documentElement, { childList: true, subtree: true });
  var tries = 0;
  var timer = setInterval(function () {  // MathJax typesets after load; re-measure a few times
    markWideInlineMath();
    markScrollers();
    if (++tries > 20) clearInterval(timer);
  }, 500);
})();
