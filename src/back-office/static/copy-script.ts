// The back-office's one script, kept as a string (like the stylesheet) and served from the program as a
// static file, never inline, so the Content-Security-Policy can forbid inline script. It only enhances:
// every page works without it. It reveals the copy buttons and copies the text of the element a button
// names (data-copy), by the Clipboard API where the page is a secure context, else by selecting the text.
export const COPY_JS = `'use strict';
(function () {
  function textOf(id) {
    var el = document.getElementById(id);
    return el ? el.textContent : '';
  }
  function say(button, text) {
    var status = button.parentNode.querySelector('.copied');
    if (status) status.textContent = text;
  }
  function copyBySelection(id) {
    var el = document.getElementById(id);
    if (!el) return false;
    var range = document.createRange();
    range.selectNodeContents(el);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    var done = false;
    try { done = document.execCommand('copy'); } catch (e) { done = false; }
    return done;
  }
  function copy(button) {
    var id = button.getAttribute('data-copy');
    var text = textOf(id);
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { say(button, 'Copied'); }, function () {
        say(button, copyBySelection(id) ? 'Copied' : 'Select the text and copy it');
      });
    } else {
      say(button, copyBySelection(id) ? 'Copied' : 'Select the text and copy it');
    }
  }
  function start() {
    var buttons = document.querySelectorAll('button.copy[data-copy]');
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].hidden = false;
      buttons[i].addEventListener('click', function (event) { copy(event.currentTarget); });
    }
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
`;
