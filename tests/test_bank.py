"""The bank loader: every error an instructor can meet, with its exact file:line:col and message.

Also the happy paths (normalisation, YAML 1.2 scalars) and the registry that serves a folder of banks.
"""

from __future__ import annotations

import logging
import sys
from textwrap import dedent, indent

import pytest

from app.bank.loader import BankError, load_bank_bytes, load_bank_file
from app.bank.registry import BankRegistry, load_paths
from app.bank.rules import RESERVED_QUESTION_IDS
from app.bank import yamlsource
from app.bank.yamlsource import MAX_DEPTH, MAX_FILE_BYTES
from app.errors import NotFound

HEAD = "id: demo\ntitle: Demo bank\nquestions:\n"  # questions start on line 4

GOOD_QUESTION = """\
  - id: heads
    type: numeric
    prompt: How many heads?
    explanation: Eight.
    answer: 8
"""


def load(text: str):
    return load_bank_bytes(text.encode("utf-8"), "bank.yaml")


def errors_of(text: str) -> list[str]:
    result = load(text)
    assert result.bank is None, "a file with errors must not yield a bank"
    return [str(error) for error in result.errors]


def bank_of(text: str):
    result = load(text)
    assert result.errors == (), [str(e) for e in result.errors]
    return result.bank


def questions(body: str) -> str:
    """A bank whose questions are `body` (YAML list items, any common indent), from line 4 on.

    The items are re-indented by two spaces, so `- id:` is at column 3 and its keys at column 5.
    """
    return HEAD + indent(dedent(body), "  ")


# --------------------------------------------------------------------------------------------------
# The file cannot be read as YAML: one error, with the position of the problem.

SYNTAX_CASES = [
    pytest.param(
        'id: demo\ntitle: "$\\sqrt{d}$"\n',
        "bank.yaml:2:11: invalid YAML: found unknown escape character 's' (while scanning a double-quoted scalar "
        "at line 2, column 8); inside double quotes a backslash starts an escape, so write LaTeX in single quotes "
        "or after '|', or double each backslash",
        id="latex-in-double-quotes-bad-escape",
    ),
    pytest.param(
        "id: demo\ntitle: [unclosed\n",
        # Where the bracket opens, not the end of the file where the reader gave up (an editor jumps there).
        "bank.yaml:2:8: invalid YAML: expected ',' or ']', but got '<stream end>' (while parsing a flow sequence "
        "at line 2, column 8); a '[' or '{' is never closed; if this is text, put it in quotes",
        id="unclosed-bracket",
    ),
    pytest.param(
        HEAD + "\t- id: heads\n",
        "bank.yaml:4:1: invalid YAML: found character '\\t' that cannot start any token; "
        "YAML indents with spaces, never tabs",
        id="tab-indentation",
    ),
    pytest.param(
        "id: demo\ntitle: Ratio: 3 to 1\n",
        "bank.yaml:2:13: invalid YAML: mapping values are not allowed here; if the value contains ': ', "
        "put the whole value in quotes; otherwise check the indentation",
        id="colon-in-plain-text",
    ),
    pytest.param(
        "id: demo\ntitle: **Bold** title\n",
        "bank.yaml:2:9: invalid YAML: expected alphabetic or numeric character, but found '*' (while scanning "
        "an alias at line 2, column 8); text that starts with * or & (like Markdown **bold**) must be put in quotes",
        id="markdown-bold-unquoted",
    ),
    pytest.param(
        "id: demo\ntitle: *intro\n",
        "bank.yaml:2:8: invalid YAML: found undefined alias 'intro'; text that starts with * or & "
        "(like Markdown **bold**) must be put in quotes",
        id="undefined-alias",
    ),
    pytest.param(
        "id: demo\ntitle: `code` first\n",
        "bank.yaml:2:8: invalid YAML: found character '`' that cannot start any token; text that starts with "
        "this character must be put in quotes",
        id="backtick-first",
    ),
    pytest.param(
        'id: demo\ntitle: "never closed\n',
        "bank.yaml:2:8: invalid YAML: found unexpected end of stream (while scanning a quoted scalar at line 2, "
        "column 8); a quoted value is never closed; add the closing quote",
        id="unclosed-quote",
    ),
    pytest.param(
        "id: demo\nquestions:\n  - id: heads\n   type: numeric\n",
        "bank.yaml:4:4: invalid YAML: expected <block end>, but found the key 'type' (while parsing a "
        "block collection at line 3, column 3); check the indentation: the lines of one list or mapping start "
        "in the same column",
        id="bad-indentation",
    ),
    pytest.param(
        "id: demo\nquestions:\n  - id: heads\n    answer: 3\n  unit: heads\n",
        "bank.yaml:5:3: invalid YAML: expected <block end>, but found the key 'unit' (while parsing a block "
        "collection at line 3, column 3); check the indentation: the lines of one list or mapping start in the "
        "same column",
        id="key-dedented",  # PyYAML says "found '?'", the token of a key
    ),
    pytest.param(
        "id: demo\nquestions:\n  - id: heads\n    prompt: A long prompt that the author\n  wraps onto a line\n"
        "    answer: 3\n",
        "bank.yaml:5:3: invalid YAML: could not find expected ':' (while scanning a simple key at line 5, column 3); "
        "a value that goes on over several lines must indent each further line more than its key (or start it with "
        "'|' on the key's line, then indent); otherwise this line needs a 'key:'",
        id="wrapped-value-dedented",  # at the wrapped line, not the next one
    ),
    pytest.param(
        "id: demo\nquestions:\n  - id: heads\n    prompt: {{ a }} heads?\n",
        "bank.yaml:4:21: invalid YAML: expected <block end>, but found '<scalar>' (while parsing a block mapping at "
        "line 3, column 5); a value that starts with {{ must be put in quotes, as in prompt: \"{{ a }} heads?\"",
        id="unquoted-template",
    ),
    pytest.param(
        "id: demo\n---\nid: other\n",
        "bank.yaml:2:1: invalid YAML: expected a single document in the stream (line 1), but found another "
        "document; a bank is one YAML document; remove the '---' line or split the file",
        id="two-documents",
    ),
    pytest.param(
        "id: demo\ntitle: ring\x07\n",
        "bank.yaml:2:12: the file contains the control character U+0007, which YAML does not allow; delete it "
        "(editors often show it as nothing or as a box)",
        id="control-character",
    ),
    pytest.param(
        "? [a, b]\n: 1\n",
        "bank.yaml:1:3: a mapping key must be a plain word, not a list or mapping",
        id="complex-key",
    ),
    pytest.param(
        "base: &base {title: T}\nid: demo\n<<: *base\n",
        "bank.yaml:3:1: YAML merge keys (<<) are not supported; write the fields out",
        id="merge-key",
    ),
    pytest.param(
        "id: !!python/object:os.system x\n",
        "bank.yaml:1:5: the YAML tag !!python/object:os.system is not supported; remove it and write a plain "
        "value (text, number, true/false, list or mapping); to start text with '!', put the text in quotes",
        id="python-object-tag-on-scalar",
    ),
    pytest.param(
        "id: demo\ntitle: !!python/object/apply:os.system [echo, hi]\n",
        "bank.yaml:2:8: the YAML tag !!python/object/apply:os.system is not supported; remove it and write a "
        "plain value (text, number, true/false, list or mapping); to start text with '!', put the text in quotes",
        id="python-tag-on-list",
    ),
    pytest.param(
        "id: demo\ntitle: !!set {a, b}\n",
        "bank.yaml:2:8: the YAML tag !!set is not supported; remove it and write a plain value (text, number, "
        "true/false, list or mapping); to start text with '!', put the text in quotes",
        id="set-tag-on-mapping",
    ),
    pytest.param(
        "id: demo\ntitle: !important note\n",
        "bank.yaml:2:8: the YAML tag !important is not supported; remove it and write a plain value (text, "
        "number, true/false, list or mapping); to start text with '!', put the text in quotes",
        id="local-tag",
    ),
    pytest.param(
        "id: demo\ntitle: !!int forty\n",
        "bank.yaml:2:8: 'forty' is not a valid !!int; fix the value or remove the tag",
        id="explicit-int-tag-on-text",
    ),
    pytest.param(
        "id: demo\ntitle: !!bool maybe\n",
        "bank.yaml:2:8: 'maybe' is not a valid !!bool; fix the value or remove the tag",
        id="explicit-bool-tag-on-text",
    ),
    pytest.param(
        "id: &loop [*loop]\n",
        f"bank.yaml:1:5: the YAML is nested more than {MAX_DEPTH} levels deep; a bank needs only a few levels, so "
        "look for runaway brackets or indentation, or an alias (*name) used inside the block it names",
        id="self-referencing-alias",
    ),
]


@pytest.mark.parametrize("text, expected", SYNTAX_CASES)
def test_unreadable_yaml_is_one_error_at_the_problem(text, expected):
    assert errors_of(text) == [expected]


def test_non_utf8_byte_is_reported_at_its_line_and_character_column():
    # "é" is two bytes in UTF-8; the column counts characters, as every other column does.
    raw = "id: demo\ntitle: \u00e9t".encode("utf-8") + b"\xe9\n"
    result = load_bank_bytes(raw, "bank.yaml")
    assert [str(e) for e in result.errors] == [
        "bank.yaml:2:10: the file is not valid UTF-8 (byte 0xe9); save it with UTF-8 encoding"
    ]


def test_latin1_file_is_refused_at_the_first_non_ascii_byte():
    raw = HEAD.encode() + "  - id: caf\u00e9\n".encode("latin-1")
    assert [str(e) for e in load_bank_bytes(raw, "bank.yaml").errors] == [
        "bank.yaml:4:12: the file is not valid UTF-8 (byte 0xe9); save it with UTF-8 encoding"
    ]


def test_utf8_byte_order_mark_is_accepted():
    raw = "\ufeff".encode() + (HEAD + GOOD_QUESTION).encode()
    assert load_bank_bytes(raw, "bank.yaml").bank is not None


def test_file_over_the_size_limit_is_refused_before_parsing():
    raw = b"#" * (MAX_FILE_BYTES + 1)
    assert [str(e) for e in load_bank_bytes(raw, "bank.yaml").errors] == [
        "bank.yaml:1:1: the file is 1,000,001 bytes; the limit for a bank is 1,000,000 bytes, so split it"
    ]


def test_file_at_the_size_limit_is_parsed(monkeypatch):
    monkeypatch.setattr(yamlsource, "MAX_FILE_BYTES", 1000)  # the boundary, without parsing a megabyte
    raw = b"#" * 1000  # a comment only: parsed, then refused for being empty, not for its size
    assert [str(e) for e in load_bank_bytes(raw, "bank.yaml").errors] == [
        "bank.yaml:1:1: a bank must be a mapping with id, title and questions; got nothing (null)"
    ]
    assert [str(e) for e in load_bank_bytes(raw + b"\n", "bank.yaml").errors] == [
        "bank.yaml:1:1: the file is 1,001 bytes; the limit for a bank is 1,000 bytes, so split it"
    ]


def test_nesting_deeper_than_the_limit_is_refused_where_it_goes_too_deep():
    # The root mapping is level 1, so the 50th '[' opens level 51. "id: " is 4 columns wide.
    text = "id: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n"
    assert errors_of(text) == [
        f"bank.yaml:1:{4 + MAX_DEPTH}: the YAML is nested more than {MAX_DEPTH} levels deep; a bank needs only "
        "a few levels, so look for runaway brackets or indentation, or an alias (*name) used inside the block "
        "it names"
    ]


def test_nesting_at_the_limit_is_parsed():
    text = "id: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\ntitle: T\n" + "questions:\n" + GOOD_QUESTION
    assert errors_of(text) == ["bank.yaml:1:5: id: expected text, got a list; put it in quotes"]


def test_very_deep_nesting_does_not_exhaust_the_stack():
    depth = 2 * sys.getrecursionlimit()
    text = "id: " + "[" * depth + "]" * depth + "\n"
    (error,) = errors_of(text)
    assert f"nested more than {MAX_DEPTH} levels deep" in error


def test_billion_laughs_is_refused_without_expanding():
    # Ten levels of ten aliases each would expand to 10**10 values; the loader stops at its node limit.
    # No timing assertion: a regression shows up as this test hanging or running out of memory.
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, 10):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    result = load_bank_bytes(("\n".join(lines) + "\n").encode(), "bank.yaml")
    assert result.bank is None
    (error,) = result.errors
    assert "aliases" in error.message
    assert error.message.startswith("the document expands to more than 100000 values")


def test_anchors_and_aliases_within_the_limit_are_allowed():
    bank = bank_of("id: demo\ntitle: &title Demo bank\ndescription: *title\nquestions:\n" + GOOD_QUESTION)
    assert bank.description == "Demo bank"


# --------------------------------------------------------------------------------------------------
# The file is YAML but not a valid bank: every error is collected, each at its own position.

BANK_CASES = [
    pytest.param("- a\n- b\n", ["bank.yaml:1:1: a bank must be a mapping with id, title and questions; got a list"],
                 id="top-level-list"),
    pytest.param("just words\n",
                 ["bank.yaml:1:1: a bank must be a mapping with id, title and questions; got 'just words'"],
                 id="top-level-scalar"),
    pytest.param("", ["bank.yaml:1:1: a bank must be a mapping with id, title and questions; got nothing (null)"],
                 id="empty-file"),
    pytest.param(
        "id: demo\ntitle: Demo\n",
        ["bank.yaml:1:1: questions: this required field is missing; add a list of questions"],
        id="questions-missing",
    ),
    pytest.param(
        "id: demo\ntitle: Demo\nquestions: []\n",
        ["bank.yaml:3:12: questions: the list of questions is empty; add at least one question"],
        id="questions-empty",
    ),
    pytest.param(
        "id: demo\ntitle: Demo\nquestions: heads\n",
        ["bank.yaml:3:12: questions: expected a list of questions (lines starting with '- '), got 'heads'"],
        id="questions-not-a-list",
    ),
    pytest.param(
        "id: demo\nquestions:\n" + GOOD_QUESTION,
        ["bank.yaml:1:1: title: this required field is missing; add it"],
        id="title-missing",
    ),
    pytest.param(
        "id: My Bank\ntitle: Demo\nquestions:\n" + GOOD_QUESTION,
        ["bank.yaml:1:5: id: 'My Bank' is not a valid id: use lowercase letters, digits, '-' and '_' "
         "(at most 64 characters), starting with a letter or digit"],
        id="bank-id-not-a-slug",
    ),
    pytest.param(
        "id: demo\ntitle: [Demo]\nquestions:\n" + GOOD_QUESTION,
        ["bank.yaml:2:8: title: expected text, got a list; put it in quotes"],
        id="title-is-a-list",
    ),
    pytest.param(
        "id: demo\ntitle: Demo\nquestion:\n" + GOOD_QUESTION,
        ["bank.yaml:1:1: questions: this required field is missing; add a list of questions",
         "bank.yaml:3:1: question: unknown field 'question'; did you mean 'questions'? "
         "(allowed: id, title, description, source, mode, feedback, tries, penalty, shuffle, attempts, opens, closes, "
         "time_limit, pools, questions)"],
        id="bank-field-typo",
    ),
    pytest.param(
        "id: demo\ntitle: Demo\ncolour: red\nquestions:\n" + GOOD_QUESTION,
        ["bank.yaml:3:1: colour: unknown field 'colour' (allowed: id, title, description, source, mode, feedback, "
         "tries, penalty, shuffle, attempts, opens, closes, time_limit, pools, questions)"],
        id="bank-unknown-field",
    ),
    pytest.param(
        "id: demo\ntitle: Demo\n3: three\nquestions:\n" + GOOD_QUESTION,
        ["bank.yaml:3:1: 3: unknown field '3' (allowed: id, title, description, source, mode, feedback, "
         "tries, penalty, shuffle, attempts, opens, closes, time_limit, pools, questions)"],
        id="number-as-key",
    ),
    pytest.param(
        "id: demo\ntitle: Demo\ntitle: Other\nquestions:\n" + GOOD_QUESTION,
        ["bank.yaml:3:1: title: duplicate key 'title' (first defined at line 2); each key may appear once in a "
         "mapping, so remove or rename one"],
        id="duplicate-key-top-level",
    ),
    pytest.param(
        'id: demo\ntitle: "$\\frac{1}{2}$ and $\\beta$"\nquestions:\n' + GOOD_QUESTION,
        ["bank.yaml:2:8: title: this double-quoted text contains the control character U+000C, made by a "
         "backslash escape (as in \\frac); write LaTeX in single quotes or after '|', or double each backslash"],
        id="latex-in-double-quotes-silent-escape",
    ),
]


@pytest.mark.parametrize("text, expected", BANK_CASES)
def test_bank_level_errors(text, expected):
    assert errors_of(text) == expected


QUESTION_CASES = [
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: Pick one.
            explanation: E
            options:
              - {id: a, text: A, correct: yes}
              - id: b
                text: B
                correct: on
              - id: c
                text: C
                correct: no
        """,
        ["bank.yaml:9:35: questions[0].options[0].correct: expected a boolean (true or false), got 'yes'; banks "
         "are read as YAML 1.2, where this word is text, so write true or false",
         "bank.yaml:12:18: questions[0].options[1].correct: expected a boolean (true or false), got 'on'; banks "
         "are read as YAML 1.2, where this word is text, so write true or false",
         "bank.yaml:15:18: questions[0].options[2].correct: expected a boolean (true or false), got 'no'; banks "
         "are read as YAML 1.2, where this word is text, so write true or false"],
        id="correct-yes-on-no",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: Pick one.
            explanation: E
            options:
              - {id: a, text: A, correct: 1}
              - {id: b, text: B}
        """,
        ["bank.yaml:9:35: questions[0].options[0].correct: expected a boolean (true or false), got 1"],
        id="correct-is-a-number",
    ),
    pytest.param(
        """\
          - id: heads
            type: numeric
            prompt: How many heads?
            explaination: Eight.
            answer: 8
        """,
        # One mistake, one error: the field the misspelling stands for is not also reported missing.
        ["bank.yaml:7:5: questions[0].explaination: unknown field 'explaination'; did you mean 'explanation'? "
         "(allowed: id, type, prompt, options, answer, explanation, tags, scoring, tolerance, unit, visual, grid, "
         "misconceptions, hint, learn, params, where)"],
        id="question-field-typo",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: Pick one.
            explanation: E
            options:
              - {id: a, text: A, corect: true}
              - {id: b, text: B}
        """,
        ["bank.yaml:9:26: questions[0].options[0].corect: unknown field 'corect'; did you mean 'correct'? "
         "(allowed: id, text, correct, feedback)"],
        id="option-field-typo",
    ),
    pytest.param(
        """\
          - id: heads
            type: numeric
            prompt: How many heads?
            answer: 8
        """,
        ["bank.yaml:4:5: questions[0].explanation: this required field is missing; add it"],
        id="question-field-missing",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: Pick one.
            explanation: E
            options:
              - {id: a, correct: true}
              - {id: b, text: B}
        """,
        ["bank.yaml:9:9: questions[0].options[0].text: this required field is missing; add it"],
        id="option-text-missing",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: Pick one.
            explanation: E
            options: a, b
        """,
        ["bank.yaml:8:14: questions[0].options: expected a list (lines starting with '- '), got 'a, b'"],
        id="string-where-list",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: Pick one.
            explanation: E
            options:
              - [a, A]
              - {id: b, text: B}
        """,
        ["bank.yaml:9:9: questions[0].options[0]: expected a mapping of fields (key: value lines), got a list"],
        id="list-where-mapping",
    ),
    pytest.param(
        "  - just a sentence\n",
        ["bank.yaml:4:5: questions[0]: expected a mapping of fields (key: value lines), got 'just a sentence'"],
        id="question-is-text",
    ),
    pytest.param(
        """\
          - id: heads
            type: numeric
            prompt: ''
            explanation: Eight.
            answer: 8
        """,
        ["bank.yaml:6:13: questions[0].prompt: must not be empty; write the text, or remove the field if it is "
         "optional"],
        id="empty-prompt",
    ),
    pytest.param(
        """\
          - id: heads
            type: numeric
            prompt:
            explanation: 2.5
            answer: 8
        """,
        ["bank.yaml:6:12: questions[0].prompt: expected text, got nothing (null); put it in quotes",
         "bank.yaml:7:18: questions[0].explanation: expected text, got 2.5; put it in quotes"],
        id="text-fields-wrong-type",
    ),
    pytest.param(
        """\
          - id: heads
            type: numeric
            prompt: P
            explanation: E
            answer: 8
            tags: attention
        """,
        ["bank.yaml:9:11: questions[0].tags: expected a list (lines starting with '- '), got 'attention'"],
        id="tags-not-a-list",
    ),
    pytest.param(
        """\
          - id: Heads Count
            type: numeric
            prompt: P
            explanation: E
            answer: 8
            tags: [ok, Not OK]
        """,
        ["bank.yaml:4:9: questions[0].id: 'Heads Count' is not a valid id: use lowercase letters, digits, '-' and "
         "'_' (at most 64 characters), starting with a letter or digit",
         "bank.yaml:9:16: questions[0].tags[1]: 'Not OK' is not a valid id: use lowercase letters, digits, '-' and "
         "'_' (at most 64 characters), starting with a letter or digit"],
        id="invalid-slugs",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: P
            explanation: E
            options:
              - {id: 32, text: A, correct: true}
              - {id: "64", text: B}
        """,
        ["bank.yaml:9:14: questions[0].options[0].id: expected text, got 32; put it in quotes"],
        id="unquoted-numeric-option-id",
    ),
    pytest.param(
        """\
          - id: essay
            type: essay
            prompt: P
            explanation: E
        """,
        ["bank.yaml:5:11: questions[0].type: expected one of 'true_false', 'single_choice', 'multiple_choice', "
         "'numeric', 'matrix' or 'cells', got 'essay'"],
        id="unknown-question-type",
    ),
    pytest.param(
        """\
          - id: many
            type: multiple_choice
            scoring: partial
            prompt: P
            explanation: E
            answer: [a]
            options: [{id: a, text: A}, {id: b, text: B}]
        """,
        ["bank.yaml:6:14: questions[0].scoring: expected one of 'all_or_nothing', 'net_correct' or 'per_option', "
         "got 'partial'"],
        id="unknown-scoring",
    ),
    pytest.param(
        GOOD_QUESTION + GOOD_QUESTION.replace("answer: 8", "answer: 9"),
        ["bank.yaml:9:9: questions[1].id: duplicate question id 'heads' (also questions[0]); give each question "
         "its own id"],
        id="duplicate-question-id",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: P
            explanation: E
            answer: a
            options:
              - {id: a, text: A}
              - {id: a, text: B}
        """,
        ["bank.yaml:11:14: questions[0].options[1].id: duplicate option id 'a' (also options[0]); give each option "
         "its own id"],
        id="duplicate-option-id",
    ),
    pytest.param(
        GOOD_QUESTION.replace("id: heads", "id: summary"),
        ["bank.yaml:4:9: questions[0].id: 'summary' is reserved for the quiz's own pages; choose another id"],
        id="reserved-question-id",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: P
            explanation: E
            options:
              - {id: a, text: A}
              - {id: b, text: B}
        """,
        ["bank.yaml:9:7: questions[0].options: a single_choice question needs exactly one correct option; none is "
         "marked (add 'correct: true' to one option, or 'answer: <option id>')"],
        id="single-choice-none-correct",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: P
            explanation: E
            options:
              - {id: a, text: A, correct: true}
              - {id: b, text: B, correct: true}
              - {id: c, text: C}
        """,
        ["bank.yaml:9:7: questions[0].options: a single_choice question needs exactly one correct option; 2 are "
         "marked (a, b); use multiple_choice for several"],
        id="single-choice-two-correct",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: P
            explanation: E
            options:
              - {id: a, text: A, correct: true}
        """,
        ["bank.yaml:9:7: questions[0].options: a single_choice question needs at least 2 options"],
        id="single-choice-one-option",
    ),
    pytest.param(
        """\
          - id: many
            type: multiple_choice
            prompt: P
            explanation: E
        """,
        ["bank.yaml:4:5: questions[0].options: a multiple_choice question needs at least 2 options"],
        id="multiple-choice-no-options",
    ),
    pytest.param(
        """\
          - id: many
            type: multiple_choice
            prompt: P
            explanation: E
            options:
              - {id: a, text: A}
              - {id: b, text: B, correct: false}
        """,
        ["bank.yaml:9:7: questions[0].options: a multiple_choice question needs at least one correct option (mark "
         "it with 'correct: true', or list ids in 'answer:')"],
        id="multiple-choice-none-correct",
    ),
    pytest.param(
        """\
          - id: many
            type: multiple_choice
            prompt: P
            explanation: E
            answer: []
            options:
              - {id: a, text: A}
              - {id: b, text: B}
        """,
        ["bank.yaml:10:7: questions[0].options: a multiple_choice question needs at least one correct option (mark "
         "it with 'correct: true', or list ids in 'answer:')"],
        id="multiple-choice-empty-answer",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: P
            explanation: E
            answer: c
            options:
              - {id: a, text: A}
              - {id: b, text: B}
        """,
        ["bank.yaml:8:13: questions[0].answer: the answer key names option 'c', but there is no such option "
         "(options are 'a', 'b')"],
        id="single-answer-names-no-option",
    ),
    pytest.param(
        """\
          - id: many
            type: multiple_choice
            prompt: P
            explanation: E
            answer: [a, z, y]
            options:
              - {id: a, text: A}
              - {id: b, text: B}
        """,
        ["bank.yaml:8:17: questions[0].answer[1]: the answer key names option 'z', but there is no such option "
         "(options are 'a', 'b')",
         "bank.yaml:8:20: questions[0].answer[2]: the answer key names option 'y', but there is no such option "
         "(options are 'a', 'b')"],
        id="multi-answer-names-no-option",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: P
            explanation: E
            answer: [a]
            options:
              - {id: a, text: A}
              - {id: b, text: B}
        """,
        ["bank.yaml:8:13: questions[0].answer: a single_choice answer is one option id; got ['a']"],
        id="single-answer-is-a-list",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: P
            explanation: E
            answer: 32
            options:
              - {id: "32", text: 32}
              - {id: "64", text: 64}
        """,
        ["bank.yaml:8:13: questions[0].answer: a single_choice answer is one option id; got 32; an id that looks "
         "like a number must be quoted, like answer: \"32\""],
        id="single-answer-unquoted-number",
    ),
    pytest.param(
        """\
          - id: many
            type: multiple_choice
            prompt: P
            explanation: E
            answer: ["32", 64]
            options:
              - {id: "32", text: 32}
              - {id: "64", text: 64}
        """,
        ["bank.yaml:8:13: questions[0].answer: a multiple_choice answer is a list of option ids; got ['32', 64]; "
         "ids that look like numbers must be quoted, like answer: [\"32\", \"64\"]"],
        id="multi-answer-unquoted-number",
    ),
    pytest.param(
        """\
          - id: many
            type: multiple_choice
            prompt: P
            explanation: E
            answer: {a: true}
            options:
              - {id: a, text: A}
              - {id: b, text: B}
        """,
        ["bank.yaml:8:13: questions[0].answer: a multiple_choice answer is a list of option ids; got {'a': True}"],
        id="multi-answer-is-a-mapping",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            prompt: P
            explanation: E
            answer: a
            options:
              - {id: a, text: A, correct: true}
              - {id: b, text: B}
        """,
        ["bank.yaml:8:13: questions[0].answer: the key is given twice: use either 'answer:' or 'correct:' on the "
         "options, not both"],
        id="choice-key-given-twice",
    ),
    pytest.param(
        """\
          - id: fact
            type: true_false
            prompt: P
            explanation: E
        """,
        ["bank.yaml:4:5: questions[0].answer: a true_false question needs 'answer: true' or 'answer: false'"],
        id="true-false-without-answer",
    ),
    pytest.param(
        """\
          - id: fact
            type: true_false
            prompt: P
            explanation: E
            answer: yes
        """,
        ["bank.yaml:8:13: questions[0].answer: a true_false answer is true or false (no quotes); got 'yes'"],
        id="true-false-answer-yes",
    ),
    pytest.param(
        """\
          - id: fact
            type: true_false
            prompt: P
            explanation: E
            answer: "true"
        """,
        ["bank.yaml:8:13: questions[0].answer: a true_false answer is true or false (no quotes); got 'true'"],
        id="true-false-answer-quoted",
    ),
    pytest.param(
        """\
          - id: fact
            type: true_false
            prompt: P
            explanation: E
            answer: true
            options:
              - {id: t, text: T}
              - {id: f, text: F}
        """,
        ["bank.yaml:10:7: questions[0].options: a true_false question's options, if given, are exactly two with "
         "ids 'true' and 'false' (to attach feedback); otherwise leave options out"],
        id="true-false-wrong-option-ids",
    ),
    pytest.param(
        """\
          - id: fact
            type: true_false
            prompt: P
            explanation: E
            answer: true
            options:
              - {id: "true", text: "True", correct: true}
              - {id: "false", text: "False"}
        """,
        ["bank.yaml:8:13: questions[0].answer: the key is given twice: use 'answer:' and leave 'correct:' off the "
         "options"],
        id="true-false-key-given-twice",
    ),
    pytest.param(
        """\
          - id: heads
            type: numeric
            prompt: P
            explanation: E
        """,
        ["bank.yaml:4:5: questions[0].answer: a numeric question needs 'answer: <number>'"],
        id="numeric-without-answer",
    ),
    pytest.param(
        """\
          - id: heads
            type: numeric
            prompt: P
            explanation: E
            answer: 8
            options:
              - {id: a, text: A}
        """,
        ["bank.yaml:10:7: questions[0].options: a numeric question has no options; the student types a number"],
        id="numeric-with-options",
    ),
    pytest.param(
        GOOD_QUESTION.replace("answer: 8", "answer: .inf"),
        ["bank.yaml:8:13: questions[0].answer: a numeric answer must be a finite number; got inf"],
        id="numeric-infinite-answer",
    ),
    pytest.param(
        GOOD_QUESTION.replace("answer: 8", "answer: .nan"),
        ["bank.yaml:8:13: questions[0].answer: a numeric answer must be a finite number; got nan"],
        id="numeric-nan-answer",
    ),
    pytest.param(
        GOOD_QUESTION.replace("answer: 8", "answer: '8'"),
        ["bank.yaml:8:13: questions[0].answer: a numeric answer must be a finite number; got '8' (an expression like \"d_model / num_heads\" needs params: declared on the question)"],
        id="numeric-quoted-answer",
    ),
    pytest.param(
        GOOD_QUESTION.replace("answer: 8", "answer: true"),
        ["bank.yaml:8:13: questions[0].answer: a numeric answer must be a finite number; got true"],
        id="numeric-boolean-answer",
    ),
    pytest.param(
        """\
          - id: pick
            type: single_choice
            scoring: net_correct
            prompt: P
            explanation: E
            answer: a
            options: [{id: a, text: A}, {id: b, text: B}]
        """,
        ["bank.yaml:6:14: questions[0].scoring: 'scoring' applies only to multiple_choice and cells questions; "
         "remove it"],
        id="scoring-on-single-choice",
    ),
    pytest.param(
        """\
          - id: fact
            type: true_false
            prompt: P
            explanation: E
            answer: false
            tolerance: {abs: 0.5}
            unit: heads
        """,
        ["bank.yaml:9:16: questions[0].tolerance: 'tolerance' applies only to numeric and matrix questions; remove it",
         "bank.yaml:10:11: questions[0].unit: 'unit' applies only to numeric questions; remove it"],
        id="tolerance-and-unit-on-true-false",
    ),
    pytest.param(
        GOOD_QUESTION + "    tolerance: {abs: -0.5}\n",
        ["bank.yaml:9:22: questions[0].tolerance.abs: must be at least 0.0, got -0.5"],
        id="negative-tolerance",
    ),
    pytest.param(
        GOOD_QUESTION + "    tolerance: {abs: .nan, rel: .inf}\n",
        ["bank.yaml:9:22: questions[0].tolerance.abs: expected a finite number, got nan",
         "bank.yaml:9:33: questions[0].tolerance.rel: expected a finite number, got inf"],
        id="non-finite-tolerance",
    ),
    pytest.param(
        GOOD_QUESTION + "    tolerance: {abs: half}\n",
        ["bank.yaml:9:22: questions[0].tolerance.abs: expected a number, got 'half'"],
        id="tolerance-not-a-number",
    ),
    pytest.param(
        GOOD_QUESTION + "    tolerance: 0.5\n",
        ["bank.yaml:9:16: questions[0].tolerance: expected a mapping of fields (key: value lines), got 0.5"],
        id="tolerance-not-a-mapping",
    ),
    pytest.param(
        GOOD_QUESTION + "    tolerance: {absolute: 0.5}\n",
        ["bank.yaml:9:17: questions[0].tolerance.absolute: unknown field 'absolute' (allowed: abs, rel)"],
        id="tolerance-field-typo",
    ),
    pytest.param(
        GOOD_QUESTION + "    visual: {kind: Heat Map, param: {}}\n",
        ["bank.yaml:9:20: questions[0].visual.kind: 'Heat Map' is not a valid id: use lowercase letters, digits, "
         "'-' and '_' (at most 64 characters), starting with a letter or digit",
         "bank.yaml:9:30: questions[0].visual.param: unknown field 'param'; did you mean 'params'? "
         "(allowed: kind, params)"],
        id="visual-bad-kind-and-typo",
    ),
    pytest.param(
        GOOD_QUESTION + "    visual: heatmap\n",
        ["bank.yaml:9:13: questions[0].visual: expected a mapping of fields (key: value lines), got 'heatmap'"],
        id="visual-not-a-mapping",
    ),
    pytest.param(
        GOOD_QUESTION + "    learn: javascript:alert(1)\n",
        ["bank.yaml:9:12: questions[0].learn: 'javascript:alert(1)' is not a link this app will follow: use a site "
         "path like '/learn/attention#soft-lookup' or an http(s):// URL"],
        id="learn-not-a-safe-link",
    ),
    pytest.param(
        GOOD_QUESTION + "    answer: 9\n",
        ["bank.yaml:9:5: questions[0].answer: duplicate key 'answer' (first defined at line 8); each key may "
         "appear once in a mapping, so remove or rename one"],
        id="duplicate-key-in-question",
    ),
]


@pytest.mark.parametrize("body, expected", QUESTION_CASES)
def test_question_errors(body, expected):
    assert errors_of(questions(body)) == expected


@pytest.mark.parametrize("reserved", sorted(RESERVED_QUESTION_IDS))
def test_every_reserved_word_is_refused_as_a_question_id(reserved):
    assert errors_of(questions(GOOD_QUESTION.replace("id: heads", f"id: {reserved}"))) == [
        f"bank.yaml:4:9: questions[0].id: {reserved!r} is reserved for the quiz's own pages; choose another id"
    ]


def test_errors_are_collected_across_the_file_in_line_order():
    text = dedent("""\
        id: demo
        title: Demo bank
        questions:
          - id: pick
            type: single_choice
            prompt: P
            explanation: E
            options:
              - {id: a, text: A, correct: yes}
              - {id: b, text: B}
          - id: heads
            type: numeric
            prompt: P
            explanation: E
            hints: Count them.
            answer: 8
        title: Again
        """)
    assert errors_of(text) == [
        "bank.yaml:9:35: questions[0].options[0].correct: expected a boolean (true or false), got 'yes'; banks "
        "are read as YAML 1.2, where this word is text, so write true or false",
        "bank.yaml:15:5: questions[1].hints: unknown field 'hints'; did you mean 'hint'? (allowed: id, type, prompt, "
        "options, answer, explanation, tags, scoring, tolerance, unit, visual, grid, misconceptions, hint, learn, "
        "params, where)",
        "bank.yaml:17:1: title: duplicate key 'title' (first defined at line 2); each key may appear once in a "
        "mapping, so remove or rename one",
    ]


def test_one_bad_question_does_not_hide_the_others_errors():
    body = GOOD_QUESTION.replace("answer: 8", "answer: eight") + GOOD_QUESTION.replace("id: heads", "id: Bad")
    assert errors_of(questions(body)) == [
        "bank.yaml:8:13: questions[0].answer: a numeric answer must be a finite number; got 'eight' (an expression like \"d_model / num_heads\" needs params: declared on the question)",
        "bank.yaml:9:9: questions[1].id: 'Bad' is not a valid id: use lowercase letters, digits, '-' and '_' "
        "(at most 64 characters), starting with a letter or digit",
    ]


def test_bank_error_renders_like_a_compiler_and_as_json():
    error = BankError("quizzes/a.yaml", 42, 7, "questions[4].options[1].correct", "expected a boolean")
    assert str(error) == "quizzes/a.yaml:42:7: questions[4].options[1].correct: expected a boolean"
    assert str(BankError("a.yaml", 1, 1, "", "invalid YAML")) == "a.yaml:1:1: invalid YAML"
    assert error.as_dict() == {"file": "quizzes/a.yaml", "line": 42, "column": 7,
                               "field": "questions[4].options[1].correct", "message": "expected a boolean"}


def test_visual_checker_problems_are_reported_at_the_param():
    def checker(kind, params, question_type=None, key=None, grid=None):
        assert (kind, params) == ("heatmap", {"heads": 3})
        return [(("params", "heads"), "must divide d_model (8)")]

    text = questions(GOOD_QUESTION + "    visual:\n      kind: heatmap\n      params:\n        heads: 3\n")
    result = load_bank_bytes(text.encode(), "bank.yaml", checker)
    assert [str(e) for e in result.errors] == [
        "bank.yaml:12:16: questions[0].visual.params.heads: must divide d_model (8)"
    ]


# --------------------------------------------------------------------------------------------------
# Valid banks: the shape the rest of the app sees.

def test_true_false_gets_true_and_false_options_in_that_order():
    (question,) = bank_of(questions("""\
          - id: fact
            type: true_false
            prompt: Attention is permutation-equivariant.
            explanation: E
            answer: false
        """)).questions
    assert [(o.id, o.text, o.correct) for o in question.options] == [("true", "True", False),
                                                                     ("false", "False", True)]
    assert question.answer is None


def test_true_false_options_with_feedback_are_reordered_true_first():
    (question,) = bank_of(questions("""\
          - id: fact
            type: true_false
            prompt: P
            explanation: E
            options:
              - {id: "false", text: Nope, feedback: Look again., correct: true}
              - {id: "true", text: Yes}
        """)).questions
    assert [(o.id, o.text, o.correct, o.feedback) for o in question.options] == [
        ("true", "Yes", False, None), ("false", "Nope", True, "Look again.")]


def test_answer_form_sets_the_correct_flags():
    (single, multi) = bank_of(questions("""\
          - id: pick
            type: single_choice
            prompt: P
            explanation: E
            answer: b
            options: [{id: a, text: A}, {id: b, text: B}, {id: c, text: C}]
          - id: many
            type: multiple_choice
            prompt: P
            explanation: E
            answer: [c, a]
            options: [{id: a, text: A}, {id: b, text: B}, {id: c, text: C}]
        """)).questions
    assert [o.correct for o in single.options] == [False, True, False]
    assert [o.correct for o in multi.options] == [True, False, True]
    assert single.answer is None and multi.answer is None
    assert multi.correct_option_ids == ("a", "c")


def test_multiple_choice_answer_may_be_a_single_id():
    (multi,) = bank_of(questions("""\
          - id: many
            type: multiple_choice
            prompt: P
            explanation: E
            answer: b
            options: [{id: a, text: A}, {id: b, text: B}]
        """)).questions
    assert multi.correct_option_ids == ("b",)


def test_unflagged_options_become_false_and_multiple_choice_scoring_defaults():
    (multi,) = bank_of(questions("""\
          - id: many
            type: multiple_choice
            prompt: P
            explanation: E
            options:
              - {id: a, text: A, correct: true}
              - {id: b, text: B}
        """)).questions
    assert [o.correct for o in multi.options] == [True, False]
    assert multi.scoring == "all_or_nothing"


def test_explicit_scoring_is_kept():
    (multi,) = bank_of(questions("""\
          - id: many
            type: multiple_choice
            scoring: per_option
            prompt: P
            explanation: E
            answer: [a]
            options: [{id: a, text: A}, {id: b, text: B}]
        """)).questions
    assert multi.scoring == "per_option"


def test_numeric_answer_becomes_float_with_zero_tolerance_by_default():
    (question,) = bank_of(questions(GOOD_QUESTION)).questions
    assert question.answer == 8.0 and isinstance(question.answer, float)
    assert (question.tolerance.abs, question.tolerance.rel) == (0.0, 0.0)


def test_numeric_tolerance_integers_are_accepted_as_floats():
    (question,) = bank_of(questions(GOOD_QUESTION + "    tolerance: {abs: 1}\n    unit: heads\n")).questions
    assert (question.tolerance.abs, question.tolerance.rel, question.unit) == (1.0, 0.0, "heads")


def test_numbers_written_as_option_text_become_text():
    (question,) = bank_of(questions("""\
          - id: pick
            type: single_choice
            prompt: P
            explanation: E
            answer: "32"
            options:
              - {id: "32", text: 32}
              - {id: "64", text: 64}
        """)).questions
    assert [(o.id, o.text) for o in question.options] == [("32", "32"), ("64", "64")]


@pytest.mark.parametrize("written, value", [
    ("012", 12.0),      # YAML 1.1 would read octal 10
    ("0o17", 15.0),
    ("0x1F", 31.0),
    ("1e3", 1000.0),    # PyYAML's default loader would read the string '1e3'
    ("-.5", -0.5),
    ("+7", 7.0),
])
def test_numbers_follow_yaml_1_2(written, value):
    (question,) = bank_of(questions(GOOD_QUESTION.replace("answer: 8", f"answer: {written}"))).questions
    assert question.answer == value


@pytest.mark.parametrize("written", ["yes", "no", "on", "off", "y", "n", "1:30", "1_000", "2001-12-14", "~x"])
def test_yaml_1_1_words_stay_text(written):
    bank = bank_of(f"id: demo\ntitle: {written}\nquestions:\n" + GOOD_QUESTION)
    assert bank.title == written


def test_latex_outside_double_quotes_keeps_its_backslashes():
    bank = bank_of("id: demo\ntitle: '$\\frac{1}{2}$'\ndescription: |\n  $\\beta$ and \"$\\alpha$\"\n"
                   'source: "tab\\tand\\nnewline are fine"\nquestions:\n' + GOOD_QUESTION)
    assert bank.title == "$\\frac{1}{2}$"
    assert bank.description == '$\\beta$ and "$\\alpha$"\n'
    assert bank.source == "tab\tand\nnewline are fine"


def test_explicit_str_tag_keeps_digits_as_text():
    bank = bank_of("id: !!str 2024\ntitle: T\nquestions:\n" + GOOD_QUESTION)
    assert bank.id == "2024"


def test_valid_bank_keeps_header_fields_and_question_order():
    bank = bank_of("id: demo\ntitle: Demo bank\ndescription: About heads.\nsource: Lecture 3\nquestions:\n"
                   + GOOD_QUESTION + GOOD_QUESTION.replace("heads", "layers"))
    assert (bank.id, bank.title, bank.description, bank.source) == ("demo", "Demo bank", "About heads.",
                                                                    "Lecture 3")
    assert [q.id for q in bank.questions] == ["heads", "layers"]
    assert bank.question("layers").prompt == "How many layers?"
    assert bank.index_of("layers") == 1


def test_seed_bank_is_valid():
    from app.paths import resource_dir

    result = load_bank_file(resource_dir("quizzes") / "attention-transformers.yaml")
    assert result.errors == ()
    assert result.bank.id == "attention-transformers"
    assert len(result.bank.questions) == 9


def test_unreadable_file_is_an_error_not_a_crash(tmp_path):
    result = load_bank_file(tmp_path / "missing.yaml", "missing.yaml")
    assert [str(e) for e in result.errors] == ["missing.yaml:1:1: cannot read the file: No such file or directory"]


# --------------------------------------------------------------------------------------------------
# The registry: one broken bank never takes the good ones down.

GOOD_BANK = HEAD + GOOD_QUESTION


def test_registry_serves_good_banks_and_records_broken_ones(tmp_path, caplog):
    (tmp_path / "good.yaml").write_text(GOOD_BANK)
    (tmp_path / "broken.yaml").write_text(HEAD + GOOD_QUESTION.replace("answer: 8", "answer: eight"))
    (tmp_path / "notes.txt").write_text("not a bank")
    (tmp_path / ".draft.yaml").write_text("not: [valid")
    registry = BankRegistry(tmp_path)
    with caplog.at_level(logging.ERROR, logger="app.bank.registry"):
        registry.load()
    assert list(registry.banks) == ["demo"]
    assert registry.get("demo").question("heads").answer == 8.0
    ((file, errors),) = registry.errors.items()
    assert file.endswith("broken.yaml")
    assert [e.message for e in errors] == ["a numeric answer must be a finite number; got 'eight' (an expression like \"d_model / num_heads\" needs params: declared on the question)"]
    assert (errors[0].line, errors[0].column, errors[0].field) == (8, 13, "questions[0].answer")
    assert "skipping bank" in caplog.text and "got 'eight'" in caplog.text


def test_registry_reload_keeps_the_last_good_version_of_a_broken_bank(tmp_path):
    (tmp_path / "a.yaml").write_text(GOOD_BANK)
    registry = BankRegistry(tmp_path)
    registry.load()
    assert list(registry.banks) == ["demo"]
    (tmp_path / "a.yaml").write_text("id: demo\n")
    registry.load()
    assert list(registry.banks) == ["demo"] and list(registry.errors) != []
    assert registry.stale == {"demo": next(iter(registry.errors))}
    (tmp_path / "a.yaml").unlink()
    registry.load()
    assert registry.banks == {} and registry.stale == {}


def test_duplicate_bank_id_is_an_error_in_the_later_file(tmp_path):
    (tmp_path / "a.yaml").write_text(GOOD_BANK)
    (tmp_path / "b.yml").write_text(GOOD_BANK.replace("Demo bank", "Copy"))
    results = load_paths([tmp_path])
    assert [r.bank is not None for r in results] == [True, False]
    (error,) = results[1].errors
    assert str(error) == (f"{results[1].file}:1:5: id: bank id 'demo' is already used by {results[0].file}; "
                          "give this bank another id")
    registry = BankRegistry(tmp_path)
    registry.load()
    assert registry.get("demo").title == "Demo bank"
    assert list(registry.errors) == [results[1].file]


def test_registry_lookups_raise_not_found_with_a_sentence(tmp_path):
    (tmp_path / "a.yaml").write_text(GOOD_BANK)
    registry = BankRegistry(tmp_path)
    registry.load()
    with pytest.raises(NotFound, match="There is no quiz called 'nope'"):
        registry.get("nope")
    with pytest.raises(NotFound, match="has no question 'nope'"):
        registry.question("demo", "nope")
    assert registry.question("demo", "heads")[1].id == "heads"


def test_registry_with_missing_folder_serves_nothing(tmp_path, caplog):
    registry = BankRegistry(tmp_path / "absent")
    with caplog.at_level(logging.ERROR, logger="app.bank.registry"):
        registry.load()
    assert registry.banks == {} and registry.errors == {}
    assert "is not a directory" in caplog.text


# --------------------------------------------------------------------------------------------------
# The examples in docs/authoring.md are valid, so an instructor can copy them.

def _doc_yaml_blocks() -> list[str]:
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "authoring.md").read_text(encoding="utf-8")
    return [block.split("```", 1)[0] for block in text.split("```yaml\n")[1:]]


def test_documented_complete_bank_is_valid():
    bank = bank_of(_doc_yaml_blocks()[0])
    assert [q.type for q in bank.questions] == ["true_false", "single_choice", "multiple_choice", "numeric"]


def test_documented_question_examples_are_valid():
    examples = [block for block in _doc_yaml_blocks() if block.startswith("- id:")]
    assert len(examples) == 8  # one per question type, one with misconceptions, one predict-then-reveal
    for example in examples:
        bank_of(questions(example))


def test_documented_banks_are_valid_with_their_visuals_and_variants():
    from app.visuals import check_visual

    banks = [block for block in _doc_yaml_blocks() if block.startswith("id:")]
    # the complete bank, a try_again and a graded one, the assessment settings, the parameterised one, a draft
    assert len(banks) == 6
    for block in banks:
        # The feedback-mode examples show a bank's header, its questions elided as "- ...": give them one.
        block = block.replace("  - ...\n", GOOD_QUESTION)
        result = load_bank_bytes(block.encode("utf-8"), "authoring.md", check_visual)
        assert result.errors == (), [str(e) for e in result.errors]


def test_documented_visual_examples_are_valid():
    from app.visuals import check_visual

    examples = [block for block in _doc_yaml_blocks() if block.startswith("visual:")]
    assert examples
    for example in examples:
        body = "- id: v\n  type: numeric\n  prompt: P\n  answer: 1\n  explanation: E\n" + indent(example, "  ")
        result = load_bank_bytes(questions(body).encode("utf-8"), "authoring.md", check_visual)
        assert result.errors == (), [str(e) for e in result.errors]


# --------------------------------------------------------------------------------------------------
# The one translator of pydantic errors, as a visual's parameters use it (with their name)

def _errors_of(values: dict) -> list[dict]:
    from typing import Literal

    from pydantic import BaseModel, ConfigDict, Field, ValidationError

    class Params(BaseModel):
        model_config = ConfigDict(extra="forbid")
        d_model: int = Field(default=16, ge=2, le=64)
        temperature: float = Field(default=1.0, gt=0, le=20, allow_inf_nan=False)
        causal: Literal["off", "on"] = "off"
        queries: str = Field(default="cat", min_length=1, max_length=80)

    try:
        Params.model_validate(values)
    except ValidationError as error:
        return error.errors(include_url=False)
    raise AssertionError("no error")


@pytest.mark.parametrize("values, message", [
    ({"d_model": 100}, "d_model must be at most 64, got 100"),
    ({"d_model": "1"}, "d_model must be at least 2, got '1'"),
    ({"d_model": "x"}, "d_model must be a whole number, got 'x'"),
    ({"d_model": 2.5}, "d_model must be a whole number, got 2.5"),
    ({"temperature": 0}, "temperature must be greater than 0.0, got 0"),
    ({"temperature": "hot"}, "temperature must be a number, got 'hot'"),
    ({"temperature": "nan"}, "temperature must be a number, got 'nan'"),
    ({"causal": "maybe"}, "causal must be one of 'off' or 'on', got 'maybe'"),
    ({"queries": ""}, "queries must not be empty"),
    ({"queries": "x" * 81}, "queries must be at most 80 characters"),
    ({"x": 1}, "unknown parameter 'x'"),
])
def test_the_translator_names_a_visual_parameter(values, message):
    from app.bank.messages import describe_pydantic_error

    (item,) = _errors_of(values)
    assert describe_pydantic_error(item, name=str(item["loc"][0])) == message


def test_the_translator_without_a_name_reads_after_a_field_path():
    from app.bank.messages import describe_pydantic_error

    (item,) = _errors_of({"d_model": 100})
    assert describe_pydantic_error(item) == "must be at most 64, got 100"
    (item,) = _errors_of({"quries": "a"})
    assert describe_pydantic_error(item, allowed=["d_model", "queries"]) == (
        "unknown field 'quries'; did you mean 'queries'? (allowed: d_model, queries)")


@pytest.mark.parametrize("raw, seed", [(None, 0), ("0", 0), ("7", 7), (7, 7), ("2147483647", 2**31 - 1)])
def test_parse_seed_reads_query_strings_and_json(raw, seed):
    from app.bank.variants import parse_seed

    assert parse_seed(raw) == seed


@pytest.mark.parametrize("raw, shown", [
    ("-1", "'-1'"), (-1, "-1"), ("", "''"), ("²", "'²'"), (True, "true"), (1.5, "1.5"), (2**31, "2147483648"),
    ("9" * 5000, repr("9" * 37 + "...")), (10**400, "a number of more than 40 digits"), ([1], "a list"),
])
def test_parse_seed_refuses_anything_else_in_one_sentence(raw, shown):
    from app.bank.variants import parse_seed
    from app.errors import BadInput

    with pytest.raises(BadInput) as error:
        parse_seed(raw)
    assert str(error.value) == f"seed must be a whole number from 0 to 2147483647; got {shown}."


def test_a_missing_prompt_or_explanation_hides_no_other_error_of_its_question():
    """Authors once fixed the missing explanation, ran the checker again, and only then learnt that the key named
    no option: one run now reports both (the bank still does not load)."""
    text = HEAD + """\
  - id: a
    type: true_false
    prompt: P
    answer: tru
  - id: b
    type: single_choice
    answer: z
    options:
      - {id: x, text: X}
      - {id: y, text: Y}
"""
    assert errors_of(text) == [
        "bank.yaml:4:5: questions[0].explanation: this required field is missing; add it",
        "bank.yaml:7:13: questions[0].answer: a true_false answer is true or false (no quotes); got 'tru'",
        "bank.yaml:8:5: questions[1].explanation: this required field is missing; add it",
        "bank.yaml:8:5: questions[1].prompt: this required field is missing; add it",
        "bank.yaml:10:13: questions[1].answer: the answer key names option 'z', but there is no such option (options "
        "are 'x', 'y')",
    ]
    assert load(text).bank is None
