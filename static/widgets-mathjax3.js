// Written for this book (third-party files live in vendor/). The ipywidgets 8 HTML manager typesets
// widget labels through the MathJax 2 API (MathJax.Hub.Queue); the book loads
// MathJax 3. Provide MathJax.Hub.Queue and forward it to MathJax 3.
(function () {
  function typeset(job) {
    var mj = window.MathJax;
    var el = Array.isArray(job) ? job[2] : undefined;
    if (!mj || !mj.startup || !mj.startup.promise) return;
    mj.startup.promise
      .then(function () { return mj.typesetPromise(el ? [el] : undefined); })
      .catch(function (err) { console.warn("MathJax typeset of a widget label failed", err); });
  }
  function install() {
    if (window.MathJax && !window.MathJax.Hub) window.MathJax.Hub = { Queue: typeset };
  }
  install();
  document.addEventListener("DOMContentLoaded", install);
})();
