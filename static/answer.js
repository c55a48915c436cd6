// Cells questions: turn the table of checkboxes into a small heatmap (a picked cell is filled), and let the
// arrow keys move between cells. The checkboxes stay the form's inputs, so Space toggles and submit is as before.
(function () {
  "use strict";

  function enhance(table) {
    table.classList.add("heatmap");
    var rows = Array.prototype.map.call(table.querySelectorAll("tbody tr"), function (row) {
      return Array.prototype.slice.call(row.querySelectorAll("input[type=checkbox]"));
    });
    var moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    rows.forEach(function (cells, i) {
      cells.forEach(function (input, j) {
        input.addEventListener("keydown", function (event) {
          var move = moves[event.key];
          if (!move) return;
          var target = (rows[i + move[0]] || [])[j + move[1]];
          if (target) {
            event.preventDefault();
            target.focus();
          }
        });
      });
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll("table[data-cells]"), enhance);
})();
