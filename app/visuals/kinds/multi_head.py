"""The "multi-head" visual (Q4): one query that needs two distributions at once, a verb finding its
subject and its object, in one head of width d_model against heads of width d_model / h.

Below it, the per-head grid over the noun/verb model that the attention-playground kind builds on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import Field, model_validator

from app.engine import causal_mask

from .. import register
from ..base import (NARROW_WIDTH, WIDTH, Control, Sentence, VisualKind, VisualParams, estimated_width, line_height,
                    option_choice)
from ..toy import (
    ARGUMENT_CATEGORIES,
    FEATURE_NAMES,
    HEAD_ROLES,
    MAX_TOKENS,
    ROLE_STRENGTH,
    SIDE_COLUMN,
    constructed_multi_head,
    embed,
    first_verb,
    lookup,
    one_head_for_both,
    relation_heads,
    subject_object_inputs,
    tokenize,
    unknown_words,
)
from ..words import format_temperature, quoted_list, unknown_words_sentence

# --- Bounds and the per-head grid (the attention-playground's noun/verb model) ----------------------

NUM_HEADS_MIN, NUM_HEADS_MAX = 1, 8
D_MODEL_MIN, D_MODEL_MAX = 2, 64
TEMPERATURE_MIN, TEMPERATURE_MAX, TEMPERATURE_STEP = 0.05, 20.0, 0.05
MODEL_SEED = 0  # the random heads' weights; fixed so every page shows the same model


def check_heads_divide(num_heads: int, d_model: int, low: int = NUM_HEADS_MIN, high: int = NUM_HEADS_MAX) -> None:
    if d_model % num_heads:
        divisors = [h for h in range(low, high + 1) if d_model % h == 0]
        raise ValueError(
            f"num_heads={num_heads} does not divide d_model={d_model}: each head gets d_model / num_heads "
            f"features, so choose num_heads from {', '.join(map(str, divisors))} or change d_model"
        )


@dataclass(frozen=True)
class MultiHeadResult:
    tokens: tuple[str, ...]
    weights: np.ndarray  # (h, N, N) per-head attention weights
    head_titles: tuple[str, ...]  # e.g. "head 1: nouns↔nouns"
    head_roles: tuple[str | None, ...]  # "noun"/"verb" for a constructed head, None for a random one
    role_shares: tuple[float | None, ...]  # mean weight the role's queries put on the role's keys
    role_tokens: tuple[tuple[str, ...], ...]  # the sentence's tokens of each head's role
    temperature: float
    d_model: int
    mask: np.ndarray | None  # (N, N) True = may attend, or None for no mask
    unknown: tuple[str, ...]


def head_grid(num_heads: int) -> tuple[int, int]:
    """(rows, columns) of the per-head heatmaps: one row up to 3 heads, then two rows."""
    if num_heads <= 3:
        return 1, num_heads
    return 2, (num_heads + 1) // 2


def multi_head_inches(num_heads: int) -> tuple[float, float]:
    """Taller when the heads take two rows."""
    rows, _ = head_grid(num_heads)
    return (WIDTH, 3.9 if rows == 1 else 6.0)


def head_title(head: int) -> str:
    role = HEAD_ROLES.get(head)
    return f"head {head + 1}: {role}s↔{role}s" if role else f"head {head + 1} (random)"


def multi_head_result(
    sentence: str, num_heads: int, d_model: int, temperature: float, causal: bool = False
) -> MultiHeadResult:
    tokens = tokenize(sentence, MAX_TOKENS)
    x = embed(tokens, d_model)  # (N, d_model)
    model = constructed_multi_head(d_model, num_heads, seed=MODEL_SEED)
    mask = causal_mask(len(tokens)) if causal else None  # (N, N)
    _, weights = model(x, mask=mask, temperature=temperature)  # (h, N, N)
    categories = np.array([lookup(token).category for token in tokens])
    roles, shares, members = [], [], []
    for head in range(num_heads):
        role = HEAD_ROLES.get(head)
        in_role = categories == role  # (N,) the tokens this head relates
        roles.append(role)
        members.append(tuple(token for token, chosen in zip(tokens, in_role) if chosen))
        if role is None or not in_role.any():
            shares.append(None)
        else:
            # Each role query's total weight on role keys, averaged over the role queries.
            shares.append(float(weights[head][np.ix_(in_role, in_role)].sum(axis=1).mean()))
    return MultiHeadResult(
        tokens=tuple(tokens),
        weights=weights,
        head_titles=tuple(head_title(head) for head in range(num_heads)),
        head_roles=tuple(roles),
        role_shares=tuple(shares),
        role_tokens=tuple(members),
        temperature=temperature,
        d_model=d_model,
        mask=mask,
        unknown=tuple(unknown_words(tokens)),
    )


def _strongest(result: MultiHeadResult, head: int) -> str:
    weights = result.weights[head]
    best = float(weights.max())
    ties = np.argwhere(weights >= best - 1e-12)
    query, key = (int(index) for index in ties[0])
    text = f"strongest weight {best:.2f}, query '{result.tokens[query]}' → key '{result.tokens[key]}'"
    if len(ties) > 1:
        text += f" ({len(ties) - 1} other pair{'s tie' if len(ties) > 2 else ' ties'})"
    return text


def _describe_head(result: MultiHeadResult, head: int) -> str:
    role = result.head_roles[head]
    if role is None:
        return f"Head {head + 1} (random): {_strongest(result, head)}."
    label = f"Head {head + 1} ({role}s↔{role}s)"
    share = result.role_shares[head]
    members = result.role_tokens[head]
    if share is None:
        return f"{label}: the sentence has no {role}s, so this head has nothing to relate; {_strongest(result, head)}."
    if len(members) == 1:
        subject = f"the only {role}, '{members[0]}', puts {share:.2f} of its weight"
    else:
        subject = f"the {role}s ({', '.join(members)}) put on average {share:.2f} of their weight"
    return f"{label}: {subject} on {role}s; {_strongest(result, head)}."


def multi_head_alt(result: MultiHeadResult) -> str:
    num_heads = len(result.head_titles)
    parts = [(
        f"Constructed {num_heads}-head self-attention over '{' '.join(result.tokens)}' (d_model {result.d_model}, "
        f"temperature {format_temperature(result.temperature)}): one heatmap per head, rows are queries and "
        "columns are keys, weights from 0 to 1."
    )]
    parts.extend(_describe_head(result, head) for head in range(num_heads))
    if any(role is not None for role in result.head_roles):
        parts.append("In those heads, queries of other parts of speech spread their weight evenly over the keys they see.")
    if result.mask is not None:
        parts.append(
            "Causal mask on: each query sees only itself and earlier tokens; the hatched cells above the "
            "diagonal are masked and have weight exactly 0."
        )
    if result.unknown:
        parts.append(unknown_words_sentence(result.unknown)
                     + " They have no part of speech here, so none of them counts as a subject or an object.")
    return " ".join(parts)


# The per-head grid's caption (the attention-playground's; the multi-head kind writes its own).
CAPTION = (
    "Each head has its own query and key projections, so it compares the tokens in its own small "
    "subspace of the features. Here the heads are set by hand: head 1 reads only the 'noun' feature, "
    "so nouns attend to nouns; head 2 reads only the 'verb' feature, so verbs attend to verbs, however "
    "far apart they are. Any further heads have random weights. Constructed illustration, not a "
    "trained model: a trained model learns its heads' subspaces from data."
)



# The per-head grid's phone layout: one column of heads, each with its own labels, one scale bar below.
GRID_FONT = 8.0  # tick labels, axis labels and cell numbers: 8 pt ≈ 11 CSS px in the 340 px image
GRID_TITLE = 9.0
GRID_EDGE, GRID_TICK, GRID_LABEL_PAD, GRID_TITLE_PAD = 0.05, 7 / 72, 4 / 72, 6 / 72  # as app.plots.figure's
NUMBERED_CELL = 0.3  # "0.17" at 8 pt is 0.25 inch: narrower cells go without their numbers
MAX_NUMBERED_CELL, MAX_PLAIN_CELL = 0.42, 0.2  # larger squares only make the column longer
HEAD_GAP = 0.18
GRID_BAR, GRID_BAR_INSET = 0.12, 0.15
GRID_LABEL = 16  # longer words are cut in the phone figure's tick labels ("…"); the alt text has them whole


def grid_label(word: str) -> str:
    return word if len(word) <= GRID_LABEL else word[: GRID_LABEL - 1] + "…"


@dataclass(frozen=True)
class HeadColumnPlan:
    """The phone figure: head h's square heatmap at (left, tops[h]) in inches from the top-left corner."""

    width: float
    height: float
    left: float
    side: float  # the heatmaps' width and height
    tops: tuple[float, ...]
    numbered: bool  # the cells carry their weights
    upright: bool  # the key labels are turned 90° (too wide to stand level under their cells)
    bar_top: float
    bar_left: float
    bar_width: float


def head_column_plan(tokens, num_heads: int) -> HeadColumnPlan:
    labels = [grid_label(token) for token in tokens]
    n = len(labels)
    label_width = estimated_width(labels, GRID_FONT)
    left = GRID_EDGE + line_height(GRID_FONT) + GRID_LABEL_PAD + label_width + GRID_TICK
    room = NARROW_WIDTH - left - GRID_EDGE
    numbered = room / n >= NUMBERED_CELL
    cell = min(room / n, MAX_NUMBERED_CELL if numbered else MAX_PLAIN_CELL)
    side = n * cell
    upright = label_width > 0.9 * cell
    below = GRID_TICK + (label_width if upright else line_height(GRID_FONT)) + GRID_LABEL_PAD + line_height(GRID_FONT)
    tops, top = [], GRID_EDGE
    for _ in range(num_heads):
        top += line_height(GRID_TITLE) + GRID_TITLE_PAD
        tops.append(top)
        top += side + below + HEAD_GAP
    bar_top = top
    top += GRID_BAR + GRID_TICK + 2 * line_height(GRID_FONT) + GRID_LABEL_PAD + GRID_EDGE
    bar_width = min(room, 2.6) - 2 * GRID_BAR_INSET
    return HeadColumnPlan(NARROW_WIDTH, round(top, 2), left, side, tuple(tops), numbered, upright, bar_top,
                          left + GRID_BAR_INSET, bar_width)


class HeadGridKind(VisualKind):
    """One heatmap per head of the constructed noun/verb model; the attention-playground kind registers it.

    Wide: the heads on a grid (head_grid). Narrow (phone): one column of heads, as tall as they need."""

    narrow_inches = (NARROW_WIDTH, 9.0)  # nominal: figure_inches sizes the column to the heads and words

    def figure_inches(self, params, layout: str = "wide", result=None) -> tuple[float, float]:
        if layout == "narrow":
            tokens = result.tokens if result is not None else tokenize(params.sentence, MAX_TOKENS)
            plan = head_column_plan(tokens, params.num_heads)
            return plan.width, plan.height
        return multi_head_inches(params.num_heads)

    def compute(self, params) -> MultiHeadResult:
        return multi_head_result(params.sentence, params.num_heads, params.d_model, params.temperature)

    def alt(self, params, result: MultiHeadResult) -> str:
        return multi_head_alt(result)

    def draw(self, params, result: MultiHeadResult, inches):
        if inches[0] == NARROW_WIDTH:
            from app.plots.multi_head import draw_head_column

            return draw_head_column(result, head_column_plan(result.tokens, len(result.head_titles)), inches)
        from app.plots.multi_head import draw_multi_head

        return draw_multi_head(result, head_grid(len(result.head_titles)), inches)

    def caption(self, params, result: MultiHeadResult) -> str:
        caption = CAPTION
        if result.unknown:
            caption += " Not in the toy lexicon, so given pseudo-random features: " + ", ".join(result.unknown) + "."
        return caption


# --- The multi-head kind: one verb, its subject and its object ---------------------------------------

RELATION_HEADS_MIN, RELATION_HEADS_MAX = 2, 8  # a subject head and an object head, then idle heads
# 8: the input (features and the side column) still holds the noun and pronoun features the keys read.
RELATION_D_MODEL_MIN, RELATION_D_MODEL_MAX = 8, 64
DRAWN_HEADS = 2  # heads 1 (subject) and 2 (object); any further heads are idle
ZERO = 0.005  # a change smaller than this prints as 0.00


class MultiHeadParams(VisualParams):
    sentence: Sentence = "the dog chased the cat"
    num_heads: int = Field(default=2, ge=RELATION_HEADS_MIN, le=RELATION_HEADS_MAX)
    d_model: int = Field(default=32, ge=RELATION_D_MODEL_MIN, le=RELATION_D_MODEL_MAX)
    temperature: float = Field(default=1.0, ge=TEMPERATURE_MIN, le=TEMPERATURE_MAX, allow_inf_nan=False)
    choice: option_choice(("true", "false")) = ""  # the student's answer to "several simpler subspaces"

    @model_validator(mode="after")
    def _heads_divide_width(self):
        check_heads_divide(self.num_heads, self.d_model, RELATION_HEADS_MIN, RELATION_HEADS_MAX)
        return self


@dataclass(frozen=True)
class SwapTest:
    """The verb's outputs again, for the sentence with its subject and object exchanged."""

    tokens: tuple[str, ...]  # the swapped sentence
    one_change: float  # ‖one head's output row of the verb, swapped − original‖
    heads_change: float  # the same for the heads' output (their concatenation: W_O is the identity)
    same_values: bool  # the subject and the object have the same value vector in heads 1 and 2


@dataclass(frozen=True)
class RelationResult:
    tokens: tuple[str, ...]
    query: int  # the drawn query: the first verb, or the first word when there is no verb
    verb: int | None
    subjects: tuple[int, ...]  # nouns and pronouns before the verb
    objects: tuple[int, ...]  # nouns and pronouns after it
    d_model: int
    num_heads: int
    head_dim: int  # d_k = d_model / num_heads
    temperature: float
    one_scores: np.ndarray  # (N,) the query's scores q·k/sqrt(d_k) in the one head, before temperature
    one_weights: np.ndarray  # (N,) its weights, softmax(scores / temperature)
    head_scores: np.ndarray  # (2, N) the same in heads 1 (subject) and 2 (object) of the multi-head model
    head_weights: np.ndarray  # (2, N)
    value_features: tuple[str, ...]  # the toy features each relation head's value copies
    swap: SwapTest | None  # None unless there is exactly one subject and one object, different words
    unknown: tuple[str, ...]

    @staticmethod
    def share(weights: np.ndarray, indices: tuple[int, ...]) -> float:
        """Total weight on `indices`: how much of their values a head's output carries."""
        return float(weights[list(indices)].sum())

    @property
    def shares(self) -> np.ndarray:
        """(3, 2): rows one head, head 1, head 2; columns the subjects' and the objects' share."""
        rows = (self.one_weights, *self.head_weights)
        return np.array([[self.share(row, self.subjects), self.share(row, self.objects)] for row in rows])


def _swap_test(tokens, query, subjects, objects, d_model, num_heads, temperature, outputs, heads_trace):
    if len(subjects) != 1 or len(objects) != 1 or tokens[subjects[0]] == tokens[objects[0]]:
        return None
    (subject,), (obj,) = subjects, objects
    swapped = list(tokens)
    swapped[subject], swapped[obj] = tokens[obj], tokens[subject]
    x = subject_object_inputs(swapped, d_model)  # (N, d_model); the verb keeps its place
    changes = []
    for model, output in zip((one_head_for_both(d_model), relation_heads(d_model, num_heads)), outputs):
        swapped_output, _ = model(x, temperature=temperature)  # (N, d_model)
        changes.append(float(np.linalg.norm(swapped_output[query] - output[query])))
    values = heads_trace.v_heads[:DRAWN_HEADS]  # (2, N, d_k)
    return SwapTest(tokens=tuple(swapped), one_change=changes[0], heads_change=changes[1],
                    same_values=bool(np.array_equal(values[:, subject], values[:, obj])))


def relation_result(sentence: str, num_heads: int, d_model: int, temperature: float) -> RelationResult:
    tokens = tuple(tokenize(sentence, MAX_TOKENS))
    verb = first_verb(tokens)
    query = 0 if verb is None else verb
    x = subject_object_inputs(tokens, d_model)  # (N, d_model)
    one_trace = one_head_for_both(d_model).forward_detailed(x, temperature=temperature)
    heads_model = relation_heads(d_model, num_heads)
    heads_trace = heads_model.forward_detailed(x, temperature=temperature)
    arguments = [lookup(token).category in ARGUMENT_CATEGORIES for token in tokens]
    subjects = () if verb is None else tuple(i for i in range(verb) if arguments[i])
    objects = () if verb is None else tuple(i for i in range(verb + 1, len(tokens)) if arguments[i])
    head_dim = heads_model.head_dim
    copied = np.flatnonzero(heads_model.w_v[:, 0:head_dim].any(axis=1))  # input columns head 1's value reads
    return RelationResult(
        tokens=tokens, query=query, verb=verb, subjects=subjects, objects=objects, d_model=d_model,
        num_heads=num_heads, head_dim=head_dim, temperature=temperature,
        one_scores=one_trace.scores[0, query], one_weights=one_trace.weights[0, query],
        head_scores=heads_trace.scores[:DRAWN_HEADS, query], head_weights=heads_trace.weights[:DRAWN_HEADS, query],
        value_features=tuple(FEATURE_NAMES[i] for i in copied),
        swap=_swap_test(tokens, query, subjects, objects, d_model, num_heads, temperature,
                        (one_trace.output, heads_trace.output), heads_trace),
        unknown=tuple(unknown_words(tokens)),
    )


ROLES = ("subject", "object")


def _on(result: RelationResult, weights: np.ndarray, indices: tuple[int, ...], role: str) -> str:
    """"0.98 on the subject 'dog'", or "0.66 on the subjects 'cat' and 'dog' (0.33 and 0.33)"."""
    total = result.share(weights, indices)
    names = quoted_list([result.tokens[i] for i in indices])
    if len(indices) == 1:
        return f"{total:.2f} on the {role} {names}"
    each = " and ".join(f"{weights[i]:.2f}" for i in indices) if len(indices) == 2 else ", ".join(
        f"{weights[i]:.2f}" for i in indices)
    return f"{total:.2f} on the {role}s {names} ({each})"


def _largest(result: RelationResult, weights: np.ndarray) -> str:
    """A predicate: "spreads its weight evenly, 0.20 on each word" or "puts its largest weight, 0.41, on 'the'"."""
    if len(weights) == 1:
        return f"puts all its weight, {weights[0]:.2f}, on '{result.tokens[0]}', the only word"
    best = float(weights.max())
    if best - float(weights.min()) < 1e-12:
        return f"spreads its weight evenly, {best:.2f} on each word"
    ties = np.flatnonzero(weights >= best - 1e-12)
    names = quoted_list([result.tokens[i] for i in ties])
    return f"puts its largest weight, {best:.2f}, on {names}" + (" (a tie)" if len(ties) > 1 else "")


def _head_label(head: int) -> str:
    return f"head {head + 1} ({ROLES[head]})"


def _idle_sentence(result: RelationResult) -> str | None:
    if result.num_heads <= DRAWN_HEADS:
        return None
    if result.num_heads == DRAWN_HEADS + 1:
        return f"Head 3 (width {result.head_dim}) has all-zero weights here, so it is idle and not drawn."
    heads = "Heads 3 and 4" if result.num_heads == 4 else f"Heads 3 to {result.num_heads}"
    return f"{heads} (width {result.head_dim}) have all-zero weights here, so they are idle and not drawn."


def _swap_sentences(result: RelationResult) -> list[str]:
    swap = result.swap
    if swap is None:
        if result.verb is None:
            return []
        if len(result.subjects) == 1 and len(result.objects) == 1:
            return [f"'{result.tokens[result.subjects[0]]}' is both the subject and the object, so swapping "
                    "them would change nothing."]
        return ["The swap test needs exactly one subject and one object, so it is left out."]
    subject, obj = result.tokens[result.subjects[0]], result.tokens[result.objects[0]]
    verb = result.tokens[result.verb]
    sentences = [
        f"Swapping '{subject}' and '{obj}' gives '{' '.join(swap.tokens)}': the one head's output for '{verb}' "
        f"changes by {swap.one_change:.2f}, the {result.num_heads} heads' concatenated output by "
        f"{swap.heads_change:.2f}."
    ]
    if swap.heads_change < ZERO and swap.same_values:
        sentences.append(
            f"Neither can change: at head width {result.head_dim} each head's value copies only "
            f"{quoted_list(result.value_features)}, where '{subject}' and '{obj}' are the same.")
    elif swap.one_change < ZERO <= swap.heads_change:
        sentences.append("So the one head's output is the same whichever word is the subject, while the "
                         "concatenation tells the subject from the object.")
    return sentences


def relation_alt(result: RelationResult) -> str:
    d, h, k = result.d_model, result.num_heads, result.head_dim
    query = result.tokens[result.query]
    parts = [(
        f"Constructed attention over '{' '.join(result.tokens)}' (d_model {d}, temperature "
        f"{format_temperature(result.temperature)}), all for the query '{query}': one row of weights per head, "
        f"columns are keys, weights 0 to 1; one head of width {d} against {h} heads of width {k}."
    )]
    if result.verb is None:
        parts.append(
            f"The sentence has no verb from the toy lexicon, so there is no subject or object to find. For its "
            f"first word, '{query}': the one head {_largest(result, result.one_weights)}; head 1 "
            f"{_largest(result, result.head_weights[0])}; head 2 {_largest(result, result.head_weights[1])}.")
    else:
        targets = (result.subjects, result.objects)
        if all(targets):
            parts.append(f"One head of width {d} puts {_on(result, result.one_weights, result.subjects, 'subject')} "
                         f"and {_on(result, result.one_weights, result.objects, 'object')}.")
        elif any(targets):
            present = 0 if result.subjects else 1
            parts.append(
                f"One head of width {d} puts {_on(result, result.one_weights, targets[present], ROLES[present])}; "
                f"no noun or pronoun comes {('after', 'before')[present]} '{query}', so there is no "
                f"{ROLES[1 - present]} and one head has only one word to find.")
        else:
            parts.append(f"No noun or pronoun comes before or after '{query}', so there is no subject or object "
                         f"to find: the one head {_largest(result, result.one_weights)}.")
        for head in range(DRAWN_HEADS):
            weights = result.head_weights[head]
            label = f"Head {head + 1} (width {k}, {ROLES[head]})"
            if targets[head]:
                parts.append(f"{label} puts {_on(result, weights, targets[head], ROLES[head])}.")
            else:
                parts.append(f"{label} has no {ROLES[head]} to find: it {_largest(result, weights)}.")
        if all(targets):
            shares = result.shares
            parts.append(
                f"A softmax row's weights sum to 1, so no single row can put more than half on the subject and "
                f"more than half on the object; the one head's shares are {shares[0, 0]:.2f} and "
                f"{shares[0, 1]:.2f}.")
            heads = (shares[1, 0], shares[2, 1])
            both = min(round(value, 2) for value in heads) > 0.5
            parts.append(f"The two heads put {heads[0]:.2f} and {heads[1]:.2f}, "
                         + ("each more than half on its own word, which one row cannot do for both."
                            if both else "at this temperature not both more than half."))
        parts.extend(_swap_sentences(result))
    idle = _idle_sentence(result)
    if idle:
        parts.append(idle)
    if result.unknown:
        parts.append(unknown_words_sentence(result.unknown)
                     + " They have no part of speech here, so none of them counts as a subject or an object.")
    return " ".join(parts)


def format_score(value: float) -> str:
    """4.0 -> "4", -4.0 -> "−4", 2.531 -> "2.53", -0.001 -> "0" (never "-0")."""
    text = f"{round(float(value), 2) + 0.0:g}"
    return text.replace("-", "−")


def _scores_list(result: RelationResult, scores: np.ndarray) -> str:
    return ", ".join(f"{token} {format_score(score)}" for token, score in zip(result.tokens, scores))


def relation_caption(result: RelationResult) -> str:
    s = format_score(ROLE_STRENGTH)
    d, k = result.d_model, result.head_dim
    query = result.tokens[result.query]
    parts = [
        "Constructed by hand, not trained. Each word's input is its toy features plus a "
        f"'{SIDE_COLUMN}' column, −1 before the first verb and +1 after it, as if an earlier layer had "
        "marked word order; in this toy a subject is a noun or pronoun before the verb and an object one after it.",
        f"Head 1's query reads the 'verb' feature and its key noun + pronoun − side, so the verb scores each "
        f"word {s}·(noun + pronoun − side): a noun or pronoun before it {format_score(2 * ROLE_STRENGTH)}, "
        f"another word before it {s}, itself 0, a noun or pronoun after it 0, another word after it "
        f"{format_score(-ROLE_STRENGTH)} (words outside the lexicon score by their pseudo-random features). "
        "Head 2 uses + side, the mirror image.",
        f"The one head (width {d}) reads noun + pronoun only, so it scores the subject and the object the same, "
        f"{s}. That is the best one softmax row can do for both: its weights sum to 1, so when one word gets more "
        "than half the other gets less, and an even split is as close to both as a row gets. Its output is then "
        "the same average of the two values whichever word is the subject, while each head "
        f"(width {k}) writes its own word's value into its own columns of the concatenation, so both survive.",
    ]
    if result.verb is None:
        parts.append(f"This sentence has no verb, so the figure shows the first word, '{query}'.")
    parts.append(
        f"Scores of '{query}' (q·k/√d_k; weights = softmax(score / {format_temperature(result.temperature)})): "
        f"one head: {_scores_list(result, result.one_scores)}; head 1: {_scores_list(result, result.head_scores[0])}; "
        f"head 2: {_scores_list(result, result.head_scores[1])}.")
    if result.unknown:
        parts.append("Not in the toy lexicon, so given pseudo-random features: " + ", ".join(result.unknown) + ".")
    return " ".join(parts)


def relation_inches(layout: str = "wide") -> tuple[float, float]:
    return (NARROW_WIDTH, 6.2) if layout == "narrow" else (WIDTH, 3.6)


@register
class MultiHeadKind(VisualKind):
    name = "multi-head"
    title = "Multi-head attention: two relations for one query"
    Params = MultiHeadParams
    controls = (
        Control("sentence", f"Sentence (up to {MAX_TOKENS} words; the first verb is the query)", "text",
                max_length=80),
        Control("temperature", "Softmax temperature (lower = sharper)", "float",
                min=TEMPERATURE_MIN, max=TEMPERATURE_MAX, step=TEMPERATURE_STEP),
        Control("d_model", "Model width d_model (the one head's width)", "int",
                min=RELATION_D_MODEL_MIN, max=RELATION_D_MODEL_MAX, step=1),
        Control("num_heads", "Number of heads, each d_model / num_heads wide (must divide d_model)", "int",
                min=RELATION_HEADS_MIN, max=RELATION_HEADS_MAX, step=1),
    )
    learn = "/learn/attention#multi-head"
    choice_param = "choice"
    inches = relation_inches("wide")
    narrow_inches = relation_inches("narrow")

    def compute(self, params: MultiHeadParams) -> RelationResult:
        return relation_result(params.sentence, params.num_heads, params.d_model, params.temperature)

    def alt(self, params: MultiHeadParams, result: RelationResult) -> str:
        return relation_alt(result)

    def caption(self, params: MultiHeadParams, result: RelationResult) -> str:
        caption = relation_caption(result)
        if params.choice == "true":
            caption += (" You answered True: each head attends in its own smaller subspace, so one query can "
                        "follow two relations at once, which one head of the full width cannot.")
        elif params.choice == "false":
            caption += (" You answered False, but compare the panels: one softmax row must share its weight, "
                        "while each head, in its own smaller subspace, follows one relation sharply.")
        return caption

    def draw(self, params: MultiHeadParams, result: RelationResult, inches):
        from app.plots.multi_head import draw_relations

        return draw_relations(result, inches, narrow=inches[0] == NARROW_WIDTH)


__all__ = ["CAPTION", "HeadColumnPlan", "HeadGridKind", "grid_label", "head_column_plan", "MultiHeadKind", "MultiHeadParams", "MultiHeadResult", "RelationResult",
           "SwapTest", "check_heads_divide", "head_grid", "head_title", "multi_head_alt", "multi_head_inches",
           "multi_head_result", "relation_alt", "relation_caption", "relation_result"]
