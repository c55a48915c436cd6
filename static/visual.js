// Live controls for the visuals: when a control changes, ask /plots/<kind>.json for the new image URL,
// size and alt text, then swap them in place. Without JavaScript the same controls submit a GET form.
(function () {
  "use strict";

  function enhance(section) {
    var form = section.querySelector("form.visual-controls");
    if (!form) return;
    var image = section.querySelector(".visual-image");
    var altText = section.querySelector(".visual-alt");
    var caption = section.querySelector(".visual-caption");
    var status = section.querySelector(".visual-error");
    var updated = section.querySelector(".visual-updated");
    var note = section.querySelector(".visual-note"); // why the prediction is not drawn on other words
    var jsonUrl = section.getAttribute("data-json");
    var timer = null;
    var latest = 0;

    // The grid a prediction is about (its words, its head): changed, the prediction is not drawn (as without JS).
    var grid = (section.getAttribute("data-prediction-grid") || "").split(" ").filter(Boolean);

    function sameGrid() {
      return grid.every(function (name) {
        var element = form.elements.namedItem(name);
        if (!element) return true;
        if (element.tagName === "SELECT") return element.options[element.selectedIndex].defaultSelected;
        return element.value.trim() === element.defaultValue.trim();
      });
    }

    // The visible controls are plot parameters, and so are the student's prediction and choice (hidden,
    // data-plot-param); the other hidden inputs (v, seed...) belong to the page. A prediction (data-prediction)
    // is about the question's grid, so it is left out on other words; a choice holds on any (as without JS).
    function params() {
      var data = new URLSearchParams();
      var kept = sameGrid();
      Array.prototype.forEach.call(form.elements, function (element) {
        if (!element.name || element.type === "submit") return;
        var plotted = element.type !== "hidden" ||
          (element.hasAttribute("data-plot-param") && (kept || !element.hasAttribute("data-prediction")));
        if (plotted) data.append(element.name, element.value);
      });
      return data;
    }

    function pageQuery(query) {
      var data = new URLSearchParams();
      var page = form.querySelectorAll("input[type=hidden]:not([data-plot-param])");
      Array.prototype.forEach.call(page, function (element) { data.append(element.name, element.value); });
      query.forEach(function (value, key) {
        if (!form.querySelector("input[type=hidden][data-plot-param][name='" + key + "']")) data.append(key, value);
      });
      return data;
    }

    // Add (or take away) one id in an element's aria-describedby.
    function describe(element, id, on) {
      var ids = (element.getAttribute("aria-describedby") || "").split(" ").filter(function (each) {
        return each && each !== id;
      });
      if (on) ids.unshift(id);
      if (ids.length) element.setAttribute("aria-describedby", ids.join(" "));
      else element.removeAttribute("aria-describedby");
    }

    // Marks of a value refused before (by this script, or on the page without JS): the next answer replaces them.
    function clearMarks() {
      Array.prototype.forEach.call(form.querySelectorAll("[aria-invalid]"), function (element) {
        element.removeAttribute("aria-invalid");
        describe(element, status.id, false);
      });
      Array.prototype.forEach.call(form.querySelectorAll(".field-error"), function (element) {
        element.textContent = "";
      });
    }

    function update() {
      var request = ++latest;
      var query = params();
      section.setAttribute("aria-busy", "true");
      fetch(jsonUrl + "?" + query.toString(), { headers: { Accept: "application/json" } })
        .then(function (response) {
          return response.json().then(function (body) { return { ok: response.ok, body: body }; });
        })
        .then(function (result) {
          if (request !== latest) return; // a newer change is on its way
          if (!result.ok) {
            var error = result.body.error || {};
            clearMarks();
            status.textContent = error.message || "That value cannot be plotted.";
            section.classList.add("has-error");
            if (updated) updated.textContent = "";
            // Each control the sentence is about is marked, and described by it, as the page without JS does.
            Object.keys(error.fields || {}).forEach(function (name) {
              // namedItem, not elements[name]: a control named "length" would be the collection's length.
              var element = form.elements.namedItem(name);
              if (!element || !element.setAttribute) return;
              element.setAttribute("aria-invalid", "true");
              describe(element, status.id, true);
            });
            return;
          }
          var body = result.body;
          var narrow = section.querySelector("source.visual-narrow");
          if (narrow && body.narrow) {
            narrow.srcset = body.narrow.srcset;
            narrow.width = body.narrow.width;
            narrow.height = body.narrow.height;
          }
          image.srcset = body.srcset;
          image.src = body.src;
          // The tag keeps the size of the figure it shows (more heads take a second row).
          image.width = body.width;
          image.height = body.height;
          image.alt = body.alt;
          altText.textContent = body.alt;
          if (caption && body.caption) caption.textContent = body.caption;
          status.textContent = "";
          section.classList.remove("has-error");
          clearMarks();
          if (updated) updated.textContent = "Plot updated.";
          if (note) note.hidden = sameGrid(); // shown whenever the prediction is left out, as without JS
          var page = new URL(window.location.href);
          page.search = "?" + pageQuery(query).toString();
          page.hash = section.id;
          window.history.replaceState(null, "", page.toString());
        })
        .catch(function () {
          if (request === latest) status.textContent = "The plot could not be updated; use the Update button.";
        })
        .finally(function () {
          if (request === latest) section.removeAttribute("aria-busy");
        });
    }

    function schedule() {
      window.clearTimeout(timer);
      timer = window.setTimeout(update, 250);
    }

    // Reset loads the page with the question's own values. On that very page (no change accepted yet, so its
    // address is still the plain one) the link would only scroll: put the served values back and redraw.
    var reset = section.querySelector(".reset-link");
    if (reset) {
      reset.addEventListener("click", function (event) {
        var target = new URL(reset.href), here = new URL(window.location.href);
        if (target.pathname + target.search !== here.pathname + here.search) return;
        event.preventDefault();
        form.reset();
        window.clearTimeout(timer);
        update();
      });
    }

    form.addEventListener("input", schedule);
    form.addEventListener("change", schedule);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      window.clearTimeout(timer);
      update();
    });
  }

  // A figure the server was too busy to draw (503 with Retry-After: a page of several new figures on a cold
  // server) is asked for again, a few times, a little later each time.
  function retryWhenBusy(image) {
    var tries = 0;
    function again() {
      if (++tries > 6) return;
      window.setTimeout(function () {
        Array.prototype.forEach.call(image.parentNode.querySelectorAll("source"), function (source) {
          source.srcset = source.getAttribute("srcset");
        });
        image.srcset = image.getAttribute("srcset");
        image.src = image.getAttribute("src");
      }, 2000 * tries);
    }
    image.addEventListener("error", again);
    if (image.complete && image.naturalWidth === 0) again(); // it failed before this script ran
  }

  document.querySelectorAll("section.visual[data-json]").forEach(enhance);
  document.querySelectorAll("img.visual-image").forEach(retryWhenBusy);
})();
