"""A small, safe arithmetic language for parameterised questions: `d_model / num_heads`,
`attention_flops(n, n, d, d)`, `d_model % num_heads == 0`, and for matrix answers list literals with the
engine's `softmax`, `matmul`, ... (`softmax([2, 1, 0])`). No eval or exec: the text is parsed with `ast`
and only whitelisted nodes, names and functions are interpreted, with bounded magnitudes and sizes.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

MAX_LENGTH = 400
MAX_NODES = 200
MAX_MAGNITUDE = 1e15  # keeps every intermediate printable and every power cheap
MAX_SIDE = 16  # rows or columns of a vector or matrix value: a matrix has at most 16 x 16 entries


class ExpressionError(ValueError):
    """The expression is not allowed or cannot be evaluated; the message says why."""


def _attention_flops(n, m, d, l):
    from ..engine import attention_flops

    return attention_flops(int(n), int(m), int(d), int(l))


def _model(name: str, character: str | None = None) -> Callable[..., Any]:
    """A function of the real pretrained model's run on a sentence (app.visuals.model), computed when called."""
    def call(*arguments):
        from ..visuals import model

        function = getattr(model, name)
        return function(*arguments, character) if character else function(*arguments)
    return call


# The real model's heads, layers and heads counted from 1, key positions from 0 ([CLS]); see docs/authoring.md.
MODEL_FUNCTIONS: dict[str, Callable[..., Any]] = {
    **{f"{character}_head": _model("strongest_head", character) for character in ("previous", "next", "cls", "sep")},
    **{f"{character}_weight": _model("share", character) for character in ("previous", "next", "cls", "sep")},
    "cls_heads": _model("heads_on", "cls"),
    "focused": _model("is_focused"),
    "top_key": _model("strongest_key"),
    "token_count": _model("token_count"),
}

def _array(value: Any, name: str) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise ExpressionError(f"{name}(...) needs a vector or matrix, like {name}([1, 2]); got {value!r}")
    return value


def _softmax(x):
    from ..engine import softmax

    return softmax(_array(x, "softmax"))  # along each row, as attention normalises over the keys


def _matmul(a, b):
    a, b = _array(a, "matmul"), _array(b, "matmul")
    if a.shape[-1] != b.shape[0]:
        raise ExpressionError(f"matmul needs as many columns in the first ({a.shape[-1]}) as rows in the "
                              f"second ({b.shape[0]})")
    return a @ b


def _transpose(a):
    a = _array(a, "transpose")
    return a.reshape(1, -1).T if a.ndim == 1 else a.T  # a vector is a row; its transpose a column


def _elementwise(scalar: Callable[[float], float], array_function: Callable[[np.ndarray], np.ndarray], name: str):
    def call(x):
        if isinstance(x, np.ndarray):
            if name == "sqrt" and (x < 0).any():
                raise ExpressionError("sqrt(...) failed: math domain error (a negative entry)")
            with np.errstate(over="ignore"):
                return array_function(x)
        return scalar(x)
    return call


def _round(x, digits=0):
    return np.round(x, int(digits)) if isinstance(x, np.ndarray) else round(x, digits)


def _causal_mask(n, m=None):
    from ..engine import causal_mask

    if max(n, n if m is None else m) > MAX_SIDE:
        raise ExpressionError(f"causal_mask is limited to {MAX_SIDE} rows and columns")
    return causal_mask(n, m).astype(float)  # 1 where query i may attend key j (j <= i)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    **MODEL_FUNCTIONS,
    "min": min, "max": max, "abs": abs, "round": _round,
    "floor": math.floor, "ceil": math.ceil, "log2": math.log2, "log10": math.log10,
    "sqrt": _elementwise(math.sqrt, np.sqrt, "sqrt"), "exp": _elementwise(math.exp, np.exp, "exp"),
    "attention_flops": _attention_flops,  # the engine's own count: n·m·(d + l)
    "softmax": _softmax, "matmul": _matmul, "transpose": _transpose, "causal_mask": _causal_mask,
}

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_}
_COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}


@dataclass(frozen=True)
class Expression:
    text: str
    tree: ast.Expression
    names: frozenset[str]

    def evaluate(self, values: dict[str, Any]) -> Any:
        """The value: a number, a bool, a text param, or a vector/matrix as a NumPy array."""
        try:
            return _Evaluator(values).visit(self.tree.body)
        except ExpressionError:
            raise
        except (TypeError, ValueError, ArithmeticError) as error:  # e.g. text params in arithmetic
            raise ExpressionError(f"{self.text!r} cannot be computed: {error}") from None


def compile_expression(text: str, allowed_names: set[str] | frozenset[str]) -> Expression:
    """Parse and check an expression; every name must be a declared param or a known function."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("an expression must be non-empty text")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"an expression may be at most {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        raise ExpressionError(f"{text.strip()!r} is not a valid expression ({error.msg})") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise ExpressionError(f"the expression is too long (more than {MAX_NODES} parts)")
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name):
            if node.id not in allowed_names and node.id not in FUNCTIONS:
                known = ", ".join(sorted(allowed_names)) or "none declared"
                raise ExpressionError(f"unknown name {node.id!r} in {text.strip()!r}; params are: {known}")
            names.add(node.id)
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
                raise ExpressionError(f"only these functions may be called: {', '.join(sorted(FUNCTIONS))}")
        elif not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp,
                                   ast.IfExp, ast.Constant, ast.Load, ast.And, ast.Or, ast.List, ast.Subscript,
                                   *_BINARY, *_UNARY, *_COMPARE)):
            raise ExpressionError(f"{type(node).__name__} is not allowed in an expression; use arithmetic, "
                                  "comparisons and the listed functions")
        if isinstance(node, ast.Constant) and (isinstance(node.value, bool) or not isinstance(node.value, (int, float))):
            raise ExpressionError("only numbers may be written as constants in an expression")
    return Expression(text.strip(), tree, frozenset(names))


def _checked(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        if value.ndim > 2 or any(side > MAX_SIDE for side in value.shape):
            raise ExpressionError(f"a vector or matrix may have at most {MAX_SIDE} rows and {MAX_SIDE} columns; "
                                  f"this one has shape {value.shape}")
        if not np.isfinite(value).all():
            raise ExpressionError("the result has an entry that is not a finite number")
        if value.size and np.abs(value).max() > MAX_MAGNITUDE:
            raise ExpressionError(f"the result has an entry too large (limit {MAX_MAGNITUDE:.0e})")
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.number):
        value = value.item()
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ExpressionError("the result is not a finite number")
        if abs(value) > MAX_MAGNITUDE:
            raise ExpressionError(f"the result {value:.3g} is too large (limit {MAX_MAGNITUDE:.0e})")
        return value
    raise ExpressionError("the result is not a number")


class _Evaluator(ast.NodeVisitor):
    def __init__(self, values: dict[str, Any]):
        self.values = values

    def generic_visit(self, node):  # anything not whitelisted at compile time
        raise ExpressionError(f"{type(node).__name__} is not allowed")

    def visit_Constant(self, node):
        return node.value

    def visit_Name(self, node):
        if node.id not in self.values:
            raise ExpressionError(f"{node.id!r} has no value here")
        return self.values[node.id]

    def visit_List(self, node):
        items = [self.visit(item) for item in node.elts]
        if not items:
            raise ExpressionError("an empty list [] is not a vector; write at least one number")
        if all(isinstance(item, (int, float)) and not isinstance(item, bool) for item in items):
            return _checked(np.array(items, dtype=float))  # a vector
        if all(isinstance(item, np.ndarray) and item.ndim == 1 for item in items):
            if len({item.size for item in items}) != 1:
                raise ExpressionError("every row of a matrix needs the same number of entries")
            return _checked(np.stack(items))
        raise ExpressionError("a list holds numbers (a vector) or equally long lists of numbers (a matrix)")

    def visit_Subscript(self, node):
        value, index = self.visit(node.value), self.visit(node.slice)
        if not isinstance(value, np.ndarray) or isinstance(index, bool) or not isinstance(index, int):
            raise ExpressionError("only a vector or matrix can be indexed, with a whole number: m[0] is its first row")
        if not -len(value) <= index < len(value):
            raise ExpressionError(f"index {index} is outside 0..{len(value) - 1}")
        return _checked(value[index])

    def visit_BinOp(self, node):
        left, right = self.visit(node.left), self.visit(node.right)
        arrays = [side for side in (left, right) if isinstance(side, np.ndarray)]
        if arrays:
            return self._elementwise(node.op, left, right)
        if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > 1e6):
            raise ExpressionError("powers are limited to exponents of at most 64 and bases of at most 1e6")
        try:
            return _checked(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise ExpressionError("division by zero") from None

    @staticmethod
    def _elementwise(op, left, right):
        """Vector/matrix arithmetic entry by entry: equal shapes, or a number with an array."""
        shapes = [side.shape for side in (left, right) if isinstance(side, np.ndarray)]
        if len(shapes) == 2 and shapes[0] != shapes[1]:
            raise ExpressionError(f"entry-by-entry arithmetic needs equal shapes, got {shapes[0]} and {shapes[1]}; "
                                  "use matmul for a matrix product")
        if any(isinstance(side, str) for side in (left, right)):
            raise ExpressionError("text cannot take part in vector arithmetic")
        if isinstance(op, (ast.Div, ast.FloorDiv, ast.Mod)) and np.any(np.asarray(right) == 0):
            raise ExpressionError("division by zero")
        if isinstance(op, ast.Pow) and (np.abs(right).max() > 64 or np.abs(left).max() > 1e6):
            raise ExpressionError("powers are limited to exponents of at most 64 and bases of at most 1e6")
        with np.errstate(all="ignore"):  # an overflow becomes inf, which _checked refuses
            return _checked(_BINARY[type(op)](np.asarray(left, dtype=float), np.asarray(right, dtype=float)))

    def visit_UnaryOp(self, node):
        operand = self.visit(node.operand)
        if isinstance(operand, np.ndarray) and isinstance(node.op, ast.Not):
            raise ExpressionError("'not' takes a condition, not a vector or matrix")
        return _checked(_UNARY[type(node.op)](operand))

    def visit_Compare(self, node):
        left = self.visit(node.left)
        for op, comparator in zip(node.ops, node.comparators):
            right = self.visit(comparator)
            if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
                raise ExpressionError("vectors and matrices cannot be compared; compare numbers")
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def visit_BoolOp(self, node):
        results = [bool(self.visit(value)) for value in node.values]
        return all(results) if isinstance(node.op, ast.And) else any(results)

    def visit_IfExp(self, node):
        return self.visit(node.body) if self.visit(node.test) else self.visit(node.orelse)

    def visit_Call(self, node):
        arguments = [self.visit(argument) for argument in node.args]
        if node.func.id not in _ARRAY_FUNCTIONS and any(isinstance(a, np.ndarray) for a in arguments):
            raise ExpressionError(f"{node.func.id}(...) takes numbers, not a vector or matrix")
        try:
            return _checked(FUNCTIONS[node.func.id](*arguments))
        except (TypeError, ValueError, OverflowError) as error:
            if isinstance(error, ExpressionError):
                raise
            raise ExpressionError(f"{node.func.id}(...) failed: {error}") from None


# The functions that take vectors and matrices; every other one takes numbers.
_ARRAY_FUNCTIONS = frozenset({"softmax", "matmul", "transpose", "sqrt", "exp", "round", "abs"})


def as_nested_list(value: np.ndarray) -> list:
    """An array value as plain lists of floats (a vector as one row), the shape a matrix answer has."""
    return np.atleast_2d(value).astype(float).tolist()


def format_number(value: Any) -> str:
    """How a computed value reads in a prompt: 32 rather than 32.0, and 6 significant digits."""
    if isinstance(value, np.ndarray):  # [0.665241, 0.244728, 0.0900306]
        if value.ndim == 1:
            return "[" + ", ".join(format_number(float(v)) for v in value) + "]"
        return "[" + ", ".join(format_number(row) for row in value) + "]"
    if isinstance(value, str):  # a text param, e.g. a word drawn from a list
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:.6g}"
