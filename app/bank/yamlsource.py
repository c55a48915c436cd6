"""Read YAML into plain Python data while remembering where every value came from.

A PyYAML `SafeLoader` subclass that resolves scalars by YAML 1.2's core schema (so `yes` stays a string
instead of silently becoming True), rejects duplicate keys, and bounds size, depth and alias expansion.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import yaml

MAX_FILE_BYTES = 1_000_000
MAX_NODES = 100_000  # after alias expansion: a "billion laughs" document stops here, cheaply
MAX_INT_DIGITS = 1000  # characters in an integer literal (Python's int() and repr() stop at 4300 digits)
MAX_DEPTH = 50  # levels of nested lists/mappings; a bank needs about 6, and deeper input would exhaust the stack

Path = tuple  # a location inside the document, e.g. ("questions", 4, "options", 1, "correct")


@dataclass(frozen=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based

    @classmethod
    def of(cls, mark: yaml.Mark | None) -> "Position":
        if mark is None:
            return cls(1, 1)
        return cls(mark.line + 1, mark.column + 1)


class SourceError(Exception):
    """The file cannot be read as YAML at all; carries the position of the problem."""

    def __init__(self, message: str, position: Position, path: Path = ()):
        super().__init__(message)
        self.message = message
        self.position = position
        self.path = path


def _too_deep(position: "Position", path: Path = ()) -> "SourceError":
    return SourceError(
        f"the YAML is nested more than {MAX_DEPTH} levels deep; a bank needs only a few levels, so look for "
        "runaway brackets or indentation, or an alias (*name) used inside the block it names",
        position,
        path,
    )


class CoreSchemaLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema scalar resolution (no yes/no/on/off, octal 012, or 1:30)."""

    yaml_implicit_resolvers: dict = {}
    _depth = 0

    def compose_node(self, parent, index):
        # Bound nesting here, before Python's recursion limit would, so the error has a position.
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _too_deep(Position.of(self.peek_event().start_mark))
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_RESOLVERS = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    # Not a value: resolved only so that `<<` keys can be refused with a clear message.
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", "<"),
]
_PATTERNS = {tag: re.compile(pattern) for tag, pattern, _first in _RESOLVERS}
for _tag, _pattern, _first in _RESOLVERS:
    CoreSchemaLoader.add_implicit_resolver(_tag, _PATTERNS[_tag], list(_first))

_COLLECTION_TAGS = {yaml.SequenceNode: "tag:yaml.org,2002:seq", yaml.MappingNode: "tag:yaml.org,2002:map"}


def _tag_name(tag: str) -> str:
    """'tag:yaml.org,2002:python/object' -> '!!python/object', as the author wrote it."""
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org,2002:") else tag


def _unsupported_tag(node: yaml.Node) -> SourceError:
    return SourceError(
        f"the YAML tag {_tag_name(node.tag)} is not supported; remove it and write a plain value (text, number, "
        "true/false, list or mapping); to start text with '!', put the text in quotes",
        Position.of(node.start_mark),
    )


@dataclass
class Document:
    """Plain data (dicts, lists, str, int, float, bool, None) plus the position of every value and key."""

    data: object
    value_positions: dict[Path, Position] = field(default_factory=dict)
    key_positions: dict[Path, Position] = field(default_factory=dict)
    problems: list[SourceError] = field(default_factory=list)  # found while building; data is still usable

    def position(self, path: Path, *, of_key: bool = False) -> Position:
        """The position of `path`, or of its nearest ancestor that exists (e.g. for a missing field)."""
        if of_key and path in self.key_positions:
            return self.key_positions[path]
        for end in range(len(path), -1, -1):
            if path[:end] in self.value_positions:
                return self.value_positions[path[:end]]
        return Position(1, 1)


def _scalar(node: yaml.ScalarNode) -> object:
    tag, value = node.tag, node.value
    if tag in ("tag:yaml.org,2002:str", "tag:yaml.org,2002:merge"):  # `<<` is refused only as a key
        return value
    if tag in _PATTERNS and not _PATTERNS[tag].match(value):
        # Only an explicit tag (`!!int abc`) can get here: implicit resolution already matched the pattern.
        raise SourceError(
            f"{value!r} is not a valid {_tag_name(tag)}; fix the value or remove the tag",
            Position.of(node.start_mark),
        )
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:bool":
        return value.lower() == "true"
    if tag == "tag:yaml.org,2002:int":
        # Python refuses to convert an int of 4300+ decimal digits (from or to text), so a longer literal
        # would crash the loader, or the error message that shows it.
        if len(value) > MAX_INT_DIGITS:
            raise SourceError(
                f"this number has {len(value):,} digits; a bank needs far fewer, so shorten it "
                "(or put it in quotes if it is text)",
                Position.of(node.start_mark),
            )
        if value.startswith("0o"):
            return int(value[2:], 8)
        if value.startswith("0x"):
            return int(value[2:], 16)
        return int(value, 10)
    if tag == "tag:yaml.org,2002:float":
        lowered = value.lower().lstrip("+")
        if lowered in (".inf", "-.inf"):
            return -math.inf if lowered.startswith("-") else math.inf
        if lowered == ".nan":
            return math.nan
        return float(value)
    raise _unsupported_tag(node)


# Control characters that a double-quoted YAML escape makes from LaTeX: "\frac" is a form feed + "rac".
_ESCAPED_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LATEX_EXAMPLES = {"\a": "\\alpha", "\b": "\\beta", "\f": "\\frac", "\v": "\\vec", "\x1b": "\\epsilon"}


def _escaped_control(node: yaml.ScalarNode, value: object, path: Path) -> SourceError | None:
    found = _ESCAPED_CONTROL.search(value) if isinstance(value, str) and node.style == '"' else None
    if found is None:
        return None
    char = found.group()
    example = f" (as in {_LATEX_EXAMPLES[char]})" if char in _LATEX_EXAMPLES else ""
    return SourceError(
        f"this double-quoted text contains the control character U+{ord(char):04X}, made by a backslash "
        f"escape{example}; write LaTeX in single quotes or after '|', or double each backslash",
        Position.of(node.start_mark),
        path,
    )


class _Builder:
    def __init__(self) -> None:
        self.document = Document(data=None)
        self.visited = 0

    def build(self, node: yaml.Node, path: Path) -> object:
        self.visited += 1
        if self.visited > MAX_NODES:
            raise SourceError(
                f"the document expands to more than {MAX_NODES} values (are YAML aliases repeating a large "
                "block?); a bank should be far smaller, so split it or remove the aliases",
                Position.of(node.start_mark),
                path,
            )
        if len(path) >= MAX_DEPTH:  # only a self-referencing alias (&a [*a]) gets past the composer's bound
            raise _too_deep(Position.of(node.start_mark), path)
        if type(node) in _COLLECTION_TAGS and node.tag != _COLLECTION_TAGS[type(node)]:
            raise _unsupported_tag(node)  # e.g. `!!python/object:os.system {...}` or `!!set`
        self.document.value_positions[path] = Position.of(node.start_mark)
        if isinstance(node, yaml.ScalarNode):
            value = _scalar(node)
            problem = _escaped_control(node, value, path)
            if problem is not None:
                self.document.problems.append(problem)
            return value
        if isinstance(node, yaml.SequenceNode):
            return [self.build(child, path + (i,)) for i, child in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        raise SourceError("unsupported YAML node", Position.of(node.start_mark), path)

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict:
        result: dict = {}
        first_seen: dict[object, Position] = {}
        for key_node, value_node in node.value:
            key_position = Position.of(key_node.start_mark)
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise SourceError("YAML merge keys (<<) are not supported; write the fields out", key_position, path)
            if not isinstance(key_node, yaml.ScalarNode):
                raise SourceError("a mapping key must be a plain word, not a list or mapping", key_position, path)
            key = _scalar(key_node)
            if not isinstance(key, str):
                key = str(key_node.value)  # every key in a bank is a field name: `3:` or `true:` as written
            if key in first_seen:
                self.document.problems.append(
                    SourceError(
                        f"duplicate key {key!r} (first defined at line {first_seen[key].line}); "
                        "each key may appear once in a mapping, so remove or rename one",
                        key_position,
                        path + (key,),
                    )
                )
                continue
            first_seen[key] = key_position
            self.document.key_positions[path + (key,)] = key_position
            result[key] = self.build(value_node, path + (key,))
        return result


def _decode(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        before = raw[: error.start]
        line = before.count(b"\n") + 1
        # Columns count characters, as YAML's do; the text before the bad byte is valid UTF-8.
        column = len(before[before.rfind(b"\n") + 1:].decode("utf-8")) + 1
        raise SourceError(
            f"the file is not valid UTF-8 (byte 0x{raw[error.start]:02x}); save it with UTF-8 encoding",
            Position(line, column),
        ) from None
    return text.removeprefix("\ufeff")


# (text found in PyYAML's problem or context, what to tell the author); the first match wins.
_HINTS = [
    ("'\\t'", "YAML indents with spaces, never tabs"),
    ("mapping values are not allowed", "if the value contains ': ', put the whole value in quotes; "
     "otherwise check the indentation"),
    ("alias", "text that starts with * or & (like Markdown **bold**) must be put in quotes"),
    ("cannot start any token", "text that starts with this character must be put in quotes"),
    ("unknown escape", "inside double quotes a backslash starts an escape, so write LaTeX in single quotes or "
     "after '|', or double each backslash"),
    ("quoted scalar", "a quoted value is never closed; add the closing quote"),
    ("another document", "a bank is one YAML document; remove the '---' line or split the file"),
    ("while parsing a flow", "a '[' or '{' is never closed; if this is text, put it in quotes"),
    ("expected <block end>", "check the indentation: the lines of one list or mapping start in the same column"),
    ("could not find expected ':'", "a value that goes on over several lines must indent each further line more "
     "than its key (or start it with '|' on the key's line, then indent); otherwise this line needs a 'key:'"),
]


_UNQUOTED_TEMPLATE = re.compile(r"^\s*(- )?[\w-]+:\s+\{\{")  # prompt: {{ a }} heads


def _line_at(mark) -> str:
    """The source line a YAML error mark points at ("" when the mark has no text)."""
    if mark is None or not mark.buffer:
        return ""
    lines = mark.buffer.split("\n")
    return lines[mark.line] if mark.line < len(lines) else ""


def _syntax_error(error: yaml.MarkedYAMLError) -> SourceError:
    problem = error.problem or error.context or "invalid YAML"
    context = error.context if error.problem else None
    if context and error.context_mark is not None:
        start = Position.of(error.context_mark)
        if context.startswith("while"):  # e.g. "while parsing a flow sequence": say where it began
            problem = f"{problem} ({context} at line {start.line}, column {start.column})"
        else:  # e.g. "expected a single document in the stream", "but found another document"
            problem = f"{context} (line {start.line}), {problem}"
    lines = [_line_at(mark) for mark in (error.context_mark, error.problem_mark)]
    # PyYAML names what it found by its token: '?' is a key, '<block mapping start>' the first key of a mapping.
    for token in ("'?'", "'<block mapping start>'"):
        if f"but found {token}" in problem and ":" in lines[1]:
            problem = problem.replace(token, f"the key '{lines[1].strip().lstrip('- ').split(':', 1)[0]}'")
    hint = next((text for needle, text in _HINTS if needle in problem), None)
    if "but got '?'" in problem:  # PyYAML ends a plain value at '?' inside [ ] or { }, which YAML 1.2 allows
        hint = "inside [ ] or { } this YAML reader ends unquoted text at a '?'; put the text in quotes, as in "\
               "text: \"Why not?\""
    mark = error.problem_mark
    if "'\\t'" in problem and mark is not None and _line_at(mark)[:mark.column].strip():
        hint = "a tab inside a value (pasted text?) stops this YAML reader; replace it with a space, or put the " \
               "value in quotes"
    templated = next((line.strip() for line in lines if _UNQUOTED_TEMPLATE.search(line)), None)
    if templated:  # YAML reads `key: {{ a }} ...` as a mapping inside a mapping, whatever the message says
        key = templated.split(":", 1)[0].lstrip("- ")
        hint = (f"a value that starts with {{{{ must be put in quotes, as in {key}: "
                f"\"{templated.split(':', 1)[1].strip()}\"")
    message = f"invalid YAML: {problem}" + (f"; {hint}" if hint else "")
    if "could not find expected ':'" in problem and error.context_mark is not None:
        return SourceError(message, Position.of(error.context_mark))  # the line without a ':', not the one after
    if ("end of stream" in problem or "<stream end>" in problem) and error.context_mark is not None:
        # A quote or bracket never closed: where it opens, not the end of the file where the reader gave up.
        return SourceError(message, Position.of(error.context_mark))
    return SourceError(message, Position.of(error.problem_mark or error.context_mark))


def _position_in(text: str, index: int) -> Position:
    before = text[:index]
    return Position(before.count("\n") + 1, index - (before.rfind("\n") + 1) + 1)


def too_large(size: int) -> str:
    return f"the file is {size:,} bytes; the limit for a bank is {MAX_FILE_BYTES:,} bytes, so split it"


def parse(raw: bytes) -> Document:
    """Parse one YAML document from bytes. Raises SourceError with a position on any problem."""
    if len(raw) > MAX_FILE_BYTES:
        raise SourceError(too_large(len(raw)), Position(1, 1))
    text = _decode(raw)
    try:
        loader = CoreSchemaLoader(text)  # checks every character first, so it can raise too
    except yaml.reader.ReaderError as error:
        raise SourceError(
            f"the file contains the control character U+{error.character:04X}, which YAML does not allow; "
            "delete it (editors often show it as nothing or as a box)",
            _position_in(text, error.position),
        ) from None
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as error:
        raise _syntax_error(error) from None
    except yaml.YAMLError as error:
        raise SourceError(f"invalid YAML: {error}", Position(1, 1)) from None
    except RecursionError:  # a safety net: MAX_DEPTH should stop deep documents first
        raise _too_deep(Position(1, 1)) from None
    finally:
        loader.dispose()
    builder = _Builder()
    if root is None:
        builder.document.data = None
        return builder.document
    try:
        builder.document.data = builder.build(root, ())
    except RecursionError:
        raise _too_deep(Position(1, 1)) from None
    return builder.document
