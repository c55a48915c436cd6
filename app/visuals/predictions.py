"""A student's prediction drawn on a visual (predict, then reveal): the params that carry predicted cells or a
predicted number and the key's cells, and the sentences that compare them, shared by the kinds that draw them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import numpy as np
from pydantic import BeforeValidator, Field, ValidationInfo

from .words import plural

MAX_CELLS = 64  # cells a prediction or a key may name (a 6 × 10 grid has 60)
Cells = tuple[tuple[int, int], ...]


def cells_text(pairs) -> str:
    """[[0, 1], [1, 2]] -> "0,1;1,2": a cells answer as a param's value, sorted, each cell once."""
    return ";".join(f"{row},{col}" for row, col in sorted({(int(row), int(col)) for row, col in pairs}))


def number_text(value: float) -> str:
    """A predicted number as a param's value: as typed, without a trailing ".0" (0.5 -> "0.5", 3.0 -> "3")."""
    return f"{float(value):.12g}"


def _canonical_cells(value: Any, info: ValidationInfo) -> Any:
    name = info.field_name
    if isinstance(value, (list, tuple)):
        if not all(isinstance(pair, (list, tuple)) and len(pair) == 2
                   and all(isinstance(n, int) and not isinstance(n, bool) for n in pair) for pair in value):
            raise ValueError(f"{name} must be [row, col] pairs of whole numbers")
        value = cells_text(value)
    if not isinstance(value, str):
        return value
    pairs = []
    for part in filter(None, (part.strip() for part in value.split(";"))):
        numbers = [n.strip() for n in part.split(",")]
        if len(numbers) != 2 or not all(n.isdigit() for n in numbers):
            raise ValueError(f"{name} must be cells written row,col;row,col with whole numbers from 0; "
                             f"got {part[:20]!r}")
        pairs.append((int(numbers[0]), int(numbers[1])))
    if len(set(pairs)) > MAX_CELLS:
        raise ValueError(f"{name} may name at most {MAX_CELLS} cells, got {len(set(pairs))}")
    return cells_text(pairs)


def _canonical_number(value: Any, info: ValidationInfo) -> Any:
    name = info.field_name
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, not true or false")
    if isinstance(value, (int, float)):
        value = number_text(value) if math.isfinite(value) else "nan"
    if not isinstance(value, str) or value == "":
        return value
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number; got {value[:20]!r}") from None
    if not math.isfinite(number) or abs(number) > 1e12:
        raise ValueError(f"{name} must be a finite number of at most 1e12 in size; got {value[:20]!r}")
    return number_text(number)


# A param of cells ("" for none; a bank or the answer page may give [[row, col], ...]) and of one number.
CellsParam = Annotated[str, BeforeValidator(_canonical_cells), Field(max_length=12 * MAX_CELLS)]
NumberParam = Annotated[str, BeforeValidator(_canonical_number), Field(max_length=32)]


def cells_of(text: str) -> Cells:
    """The cells of a CellsParam's value."""
    return tuple((int(row), int(col)) for row, col in (part.split(",") for part in text.split(";") if part))


def check_in_grid(name: str, text: str, rows: int, cols: int, row_word: str = "queries",
                  col_word: str = "keys") -> None:
    """A ValueError naming the first cell of `text` outside a rows × cols grid."""
    outside = [(r, c) for r, c in cells_of(text) if r >= rows or c >= cols]
    if outside:
        row, col = outside[0]
        raise ValueError(f"{name} has the cell ({row}, {col}), outside the figure's {rows} × {cols} grid of "
                         f"{row_word} × {col_word} (rows 0 to {rows - 1}, columns 0 to {cols - 1})")


def cells_comparison(row_names: Sequence[str], col_name: Callable[[int], str], weights: np.ndarray,
                     predicted: Cells, key: Cells | None, strongest: Callable[[np.ndarray], list[int]],
                     where: str) -> str:
    """Sentences comparing predicted cells with the key's, row by row, with each named cell's weight and the
    row's strongest key (`strongest(row)`: its columns, ties included). `key` None: the key is not known, and
    only the prediction is compared with the strongest keys. `where` says where the figure draws them."""
    def named(columns, row) -> str:
        if not columns:
            return "no key"
        return " and ".join(f"{col_name(c)} (weight {float(weights[row, c]):.2f})" for c in columns)

    answer = set(key or ())
    rows = sorted({r for r, _ in predicted} | {r for r, _ in answer})
    if not rows:
        return (f"You predicted no cells{', and the answer has none' if key is not None else ''}; "
                f"{where} shows the engine's weights.")
    lines = []
    for row in rows:
        chose = sorted(c for r, c in predicted if r == row)
        best = strongest(weights[row])
        text = f"for query {row_names[row]} you predicted {named(chose, row)}"
        if key is not None:
            text += f"; the answer is {named(sorted(c for r, c in answer if r == row), row)}"
        if len(best) == 1:
            text += f"; the strongest key is {col_name(best[0])} (weight {float(weights[row, best[0]]):.2f})"
        else:
            tied = " and ".join(col_name(c) for c in best)
            text += f"; the strongest keys tie: {tied} (weight {float(weights[row, best[0]]):.2f} each)"
        lines.append(text)
    summary = ""
    if key is not None:
        hits = len(set(predicted) & answer)
        if not predicted:
            summary = f" You predicted no cells; the answer has {plural(len(answer), 'cell')}."
        elif set(predicted) == answer:
            summary = f" Your prediction is the answer exactly ({plural(len(answer), 'cell')})."
        else:
            summary = (f" {hits} of your {plural(len(predicted), 'predicted cell')} "
                       f"{'is' if hits == 1 else 'are'} in the answer, which has {plural(len(answer), 'cell')}.")
    return f"In {where}, " + "; ".join(lines) + "." + summary
