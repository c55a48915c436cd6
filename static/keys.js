/* Keyboard shortcuts of the quiz pages, written out on the page by templates/quiz/_keys.html.
   Question page: 1-9 pick option 1-9 (a checkbox toggles), Enter submits. Answer page: N follows the quiz
   navigation's forward link (the next question, or the results). Nothing happens while the focus is in a
   field the student types into, or with a modifier key held, so typing and the browser's own keys still work.
   The note's "Use these keys" box turns them off (speech input and some screen readers send single keys); the
   choice is kept in this browser's localStorage. */
(function () {
  "use strict";

  const note = document.getElementById("keys-note");
  if (note) note.hidden = false;

  const STORED = "attention-quiz.keys";
  const toggle = document.getElementById("keys-on");
  function keysOn() {
    try {
      return window.localStorage.getItem(STORED) !== "off";
    } catch (error) {  // storage refused (a privacy setting): the box alone decides, for this page
      return toggle ? toggle.checked : true;
    }
  }
  if (toggle) {
    toggle.checked = keysOn();
    toggle.addEventListener("change", function () {
      try {
        window.localStorage.setItem(STORED, toggle.checked ? "on" : "off");
      } catch (error) { /* kept for this page only */ }
    });
  }

  const NOT_TYPED = new Set(["radio", "checkbox", "button", "submit", "reset", "image", "file", "range", "color"]);

  function typingInto(element) {
    if (element.isContentEditable || element instanceof HTMLTextAreaElement || element instanceof HTMLSelectElement) {
      return true;
    }
    return element instanceof HTMLInputElement && !NOT_TYPED.has(element.type);
  }

  // Enter on a link, a button or a disclosure keeps its own meaning.
  function activatedByEnter(element) {
    return element.closest("a[href], button, summary, [role='button']") !== null;
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.repeat || event.isComposing || !keysOn()) return;
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const target = event.target instanceof Element ? event.target : document.body;
    if (typingInto(target)) return;

    const form = document.querySelector("form.question-form");
    if (form && /^[1-9]$/.test(event.key)) {
      const option = form.querySelectorAll(".options input")[Number(event.key) - 1];
      if (!option || option.disabled) return;
      event.preventDefault();
      option.click();  // checks a radio, toggles a checkbox, and fires the events a real click fires
      option.focus();
    } else if (form && event.key === "Enter") {
      // A control outside the answer form (another form's, or the note's "Use these keys" box) is no answer.
      const otherControl = !form.contains(target) && (target.closest("form") || target.matches("input, select"));
      // Enter right after "Skip to content" (the focus on <main>) is no answer yet.
      if (otherControl || activatedByEnter(target) || target.matches("main")) return;
      event.preventDefault();
      form.requestSubmit();
    } else if (event.key === "n" || event.key === "N") {
      const next = document.querySelector("main nav[aria-label='Quiz navigation'] a.primary[href]");
      if (!next) return;
      event.preventDefault();
      window.location.assign(next.href);
    }
  });
})();
