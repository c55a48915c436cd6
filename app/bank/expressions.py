"""A small, safe arithmetic language for parameterised questions: `d_model / num_heads`,
`attention_flops(n, n, d, d)`, `d_model % num_heads == 0`. No eval or exec: the text is parsed with
`ast` and only whitelisted nodes, names and functions are interpreted, with bounded magnitudes.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass
from typing import Any, Callable

MAX_LENGTH = 200
MAX_NODES = 64
MAX_MAGNITUDE = 1e15  # keeps every intermediate printable and every power cheap


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

FUNCTIONS: dict[str, Callable[..., Any]] = {
    **MODEL_FUNCTIONS,
    "min": min, "max": max, "abs": abs, "round": round,
    "floor": math.floor, "ceil": math.ceil, "sqrt": math.sqrt, "log2": math.log2, "log10": math.log10,
    "attention_flops": _attention_flops,  # the engine's own count: n·m·(d + l)
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
                                   ast.IfExp, ast.Constant, ast.Load, ast.And, ast.Or, *_BINARY, *_UNARY,
                                   *_COMPARE)):
            raise ExpressionError(f"{type(node).__name__} is not allowed in an expression; use arithmetic, "
                                  "comparisons and the listed functions")
        if isinstance(node, ast.Constant) and (isinstance(node.value, bool) or not isinstance(node.value, (int, float))):
            raise ExpressionError("only numbers may be written as constants in an expression")
    return Expression(text.strip(), tree, frozenset(names))


def _checked(value: Any) -> Any:
    if isinstance(value, bool):
        return value
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

    def visit_BinOp(self, node):
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > 1e6):
            raise ExpressionError("powers are limited to exponents of at most 64 and bases of at most 1e6")
        try:
            return _checked(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise ExpressionError("division by zero") from None

    def visit_UnaryOp(self, node):
        return _checked(_UNARY[type(node.op)](self.visit(node.operand)))

    def visit_Compare(self, node):
        left = self.visit(node.left)
        for op, comparator in zip(node.ops, node.comparators):
            right = self.visit(comparator)
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
        try:
            return _checked(FUNCTIONS[node.func.id](*arguments))
        except (TypeError, ValueError, OverflowError) as error:
            if isinstance(error, ExpressionError):
                raise
            raise ExpressionError(f"{node.func.id}(...) failed: {error}") from None


def format_number(value: Any) -> str:
    """How a computed value reads in a prompt: 32 rather than 32.0, and 6 significant digits."""
    if isinstance(value, str):  # a text param, e.g. a word drawn from a list
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:.6g}"
