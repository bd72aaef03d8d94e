// dlock's status board: reload every few seconds (the page says how often), unless the reader
// has an output panel open.
(function () {
  var every = Number(document.body.getAttribute('data-refresh')) || 5;
  setInterval(function () {
    if (!document.querySelector('details[open]')) {
      location.reload();
    }
  }, every * 1000);
})();
