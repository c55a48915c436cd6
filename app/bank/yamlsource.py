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


class CoreSchemaLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema scalar resolution (no yes/no/on/off, octal 012, or 1:30)."""

    yaml_implicit_resolvers: dict = {}


_RESOLVERS = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
]
for _tag, _pattern, _first in _RESOLVERS:
    CoreSchemaLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


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
    if tag == "tag:yaml.org,2002:str":
        return value
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:bool":
        return value.lower() == "true"
    if tag == "tag:yaml.org,2002:int":
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
    raise SourceError(
        f"unsupported YAML tag {tag!r}; write plain values (strings, numbers, true/false, lists, mappings)",
        Position.of(node.start_mark),
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
        self.document.value_positions[path] = Position.of(node.start_mark)
        if isinstance(node, yaml.ScalarNode):
            return _scalar(node)
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
            if not isinstance(key, (str, int)):
                key = str(key_node.value)
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
        column = error.start - (before.rfind(b"\n") + 1) + 1
        raise SourceError(
            f"the file is not valid UTF-8 (byte 0x{raw[error.start]:02x}); save it with UTF-8 encoding",
            Position(line, column),
        ) from None
    return text.removeprefix("\ufeff")


def parse(raw: bytes) -> Document:
    """Parse one YAML document from bytes. Raises SourceError with a position on any problem."""
    if len(raw) > MAX_FILE_BYTES:
        raise SourceError(
            f"the file is {len(raw):,} bytes; the limit for a bank is {MAX_FILE_BYTES:,} bytes, so split it",
            Position(1, 1),
        )
    text = _decode(raw)
    loader = CoreSchemaLoader(text)
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = error.problem or error.context or "invalid YAML"
        hint = ""
        if "\t" in problem or "'\\t'" in problem:
            hint = "; YAML indents with spaces, never tabs"
        raise SourceError(f"invalid YAML: {problem}{hint}", Position.of(mark)) from None
    except yaml.YAMLError as error:
        raise SourceError(f"invalid YAML: {error}", Position(1, 1)) from None
    except RecursionError:
        raise SourceError("the YAML is nested too deeply to be a question bank", Position(1, 1)) from None
    finally:
        loader.dispose()
    builder = _Builder()
    if root is None:
        builder.document.data = None
        return builder.document
    try:
        builder.document.data = builder.build(root, ())
    except RecursionError:
        raise SourceError("the YAML is nested too deeply to be a question bank", Position(1, 1)) from None
    return builder.document
