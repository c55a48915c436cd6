"""The "multi-head" visual (Q4): one query that needs two distributions at once, a verb finding its
subject and its object, in one head of width d_model against heads of width d_model / h."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import Field, model_validator

from app.engine.heads import check_head_split

from .. import register
from ..base import (AcrossFields, NARROW_WIDTH, WIDTH, Control, Sentence, VisualKind, VisualParams, line_height,
                    option_choice, wrap_lines)
from ..toy import (ARGUMENT_CATEGORIES, FEATURE_INDEX, FEATURE_NAMES, MAX_TOKENS, ROLE_STRENGTH, SIDE_COLUMN, first_verb,
                   lookup, one_head_for_both, relation_heads, subject_object_inputs, tokenize, unknown_words)
from ..words import format_temperature, minus, quoted_list, unknown_words_sentence

# Shared with the attention-playground kind.
TEMPERATURE_MIN, TEMPERATURE_MAX = 0.05, 20.0
TEMPERATURE_CONTROL = Control("temperature", "Softmax temperature (lower = sharper)", "float",
                              min=TEMPERATURE_MIN, max=TEMPERATURE_MAX, step=0.05)


def check_heads_divide(num_heads: int, d_model: int, low: int, high: int) -> None:
    """The engine's own check and sentence, with the head counts from `low` to `high` that would do."""
    try:
        check_head_split(d_model, num_heads)
    except ValueError as error:
        divisors = [str(h) for h in range(low, high + 1) if d_model % h == 0]
        if not divisors:
            raise AcrossFields(f"{error}; no num_heads from {low} to {high} does, so change d_model",
                               "num_heads", "d_model") from None
        listed = divisors[0] if len(divisors) == 1 else ", ".join(divisors[:-1]) + " or " + divisors[-1]
        raise AcrossFields(f"{error} ({listed}), or change d_model", "num_heads", "d_model") from None


# The lexicon's categories that are feature columns. An unknown word's hashed features would make it partly a noun
# and a pronoun (often more than the real subject: 'my' gets noun + pronoun = 1.87), so here those columns are 0.
PARTS_OF_SPEECH = ("noun", "verb", "determiner", "adjective", "preposition", "pronoun")


def relation_inputs(tokens, d_model: int) -> np.ndarray:
    """(N, d_model): subject_object_inputs, with every part-of-speech column of a word outside the lexicon set to 0,
    so such a word is never a verb, a subject or an object, and scores as any word that is not a noun or pronoun."""
    x = subject_object_inputs(tokens, d_model)  # (N, d_model)
    columns = [FEATURE_INDEX[name] for name in PARTS_OF_SPEECH if FEATURE_INDEX[name] < d_model - 1]
    unknown = [i for i, token in enumerate(tokens) if not lookup(token).known]
    x[np.ix_(unknown, columns)] = 0.0
    return x


def unknown_sentence(unknown) -> str:
    return (unknown_words_sentence(unknown) + " Their part-of-speech features are set to 0 here, so none of them is "
            "a verb, a subject or an object: each scores as a word that is not a noun or pronoun.")


def unknown_caption(unknown) -> str:
    return (f" Not in the toy lexicon: {quoted_list(unknown)}, given pseudo-random features but no part of speech, "
            "so never a subject or an object." if unknown else "")


MARK_FONT = 8.0  # the "your answer" lines under the figure, in points
MARK_MARGIN, MARK_PAD = 0.08, 0.05  # inches: from the figure's edges to their box, and from the box to the text
MARK_ROOM = 2 * MARK_PAD + MARK_MARGIN + 0.12  # inches: the box's padding, the margin below, the gap above


NUM_HEADS_MIN, NUM_HEADS_MAX = 2, 8  # a subject head and an object head, then idle heads
# 8: the input (features and the side column) still holds the noun and pronoun features the keys read.
D_MODEL_MIN, D_MODEL_MAX = 8, 64
DRAWN_HEADS = 2  # heads 1 (subject) and 2 (object); any further heads are idle
ZERO = 0.005  # a change smaller than this prints as 0.00
ROLES = ("subject", "object")
ROWS = ("one head", "head 1", "head 2")


class MultiHeadParams(VisualParams):
    sentence: Sentence = "the dog chased the cat"
    num_heads: int = Field(default=2, ge=NUM_HEADS_MIN, le=NUM_HEADS_MAX)
    d_model: int = Field(default=32, ge=D_MODEL_MIN, le=D_MODEL_MAX)
    temperature: float = Field(default=1.0, ge=TEMPERATURE_MIN, le=TEMPERATURE_MAX, allow_inf_nan=False)
    choice: option_choice(("true", "false"), one=True) = ""  # the student's answer to "several simpler subspaces"

    @model_validator(mode="after")
    def _heads_divide_width(self):
        check_heads_divide(self.num_heads, self.d_model, NUM_HEADS_MIN, NUM_HEADS_MAX)
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
    # Rows (ROWS): the one head, then heads 1 (subject) and 2 (object) of the multi-head model.
    scores: np.ndarray  # (3, N) the query's scores q·k/sqrt(d_k), before temperature
    weights: np.ndarray  # (3, N) its weights, softmax(scores / temperature)
    # (3, 2) the share of the subjects' and the objects' values (their total weight) that the output of the
    # one head, head 1 and head 2 carries
    shares: np.ndarray
    value_features: tuple[str, ...]  # the toy features each relation head's value copies
    # (2,) head 1's share on the subjects and head 2's on the objects at TEMPERATURE_MIN; None without both
    sharpest: tuple[float, float] | None
    swap: SwapTest | None  # None unless there is exactly one subject and one object, different words
    unknown: tuple[str, ...]


def _on(result: RelationResult, weights: np.ndarray, indices: tuple[int, ...], role: str) -> str:
    """"0.98 on the subject 'dog'", or "0.66 on the subjects 'cat' and 'dog' (0.33 and 0.33)"."""
    total, names = float(weights[list(indices)].sum()), quoted_list([result.tokens[i] for i in indices])
    if len(indices) == 1:
        return f"{share_text(total)} on the {role} {names}"
    each = (" and " if len(indices) == 2 else ", ").join(f"{weights[i]:.2f}" for i in indices)
    return f"{share_text(total)} on the {role}s {names} ({each})"


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


def share_text(share: float) -> str:
    """A share of weight with 2 decimals, or more where 2 would show exactly one half for a share that is not:
    the sentences say whether a share is more than half."""
    return next(text for decimals in range(2, 17) if (text := f"{share:.{decimals}f}") != f"{0.5:.{decimals}f}"
                or share == 0.5 or decimals == 16)


def _unknown_on_side(result: RelationResult, side: str) -> str:
    """" ('zebra' is not in it)": the unknown words before ("before"), after ("after") or around ("around") the verb,
    which a reader may take for the missing noun; "" when there are none."""
    verb = result.verb
    indices = {"before": range(verb), "after": range(verb + 1, len(result.tokens)),
               "around": [i for i in range(len(result.tokens)) if i != verb]}[side]
    names = list(dict.fromkeys(result.tokens[i] for i in indices if result.tokens[i] in result.unknown))
    if not names:
        return ""
    return f" ({quoted_list(names)} {'is' if len(names) == 1 else 'are'} not in it)"


def _sharpest_text(result: RelationResult) -> str:
    """What heads 1 and 2 do at the control's lowest temperature (both a subject and an object)."""
    a, b = result.sharpest  # each more than half for every sentence (tests/visuals/test_multi_head.py checks)
    return (f"at the lowest temperature, {format_temperature(TEMPERATURE_MIN)}, they put {share_text(a)} and "
            f"{share_text(b)}, each more than half on its own word, which one softmax row cannot do for both")


def _idle_sentence(result: RelationResult) -> list[str]:
    h, k = result.num_heads, result.head_dim
    if h <= DRAWN_HEADS:
        return []
    # All-zero projections: every score is 0, so each row's attention weights are even, and the value is 0.
    idle = ("its query, key and value projections are all zero here, so it spreads every row's attention evenly "
            "over the words and adds 0 to the output: it is idle and not drawn")
    if h == DRAWN_HEADS + 1:
        return [f"Head 3 (width {k}): {idle}."]
    heads = "Heads 3 and 4" if h == 4 else f"Heads 3 to {h}"
    return [f"{heads} (width {k}): in each, {idle}."]


def _swap_sentences(result: RelationResult) -> list[str]:
    swap = result.swap
    if swap is None:
        if len(result.subjects) == len(result.objects) == 1:
            return [f"'{result.tokens[result.subjects[0]]}' is both the subject and the object, so swapping "
                    "them would change nothing."]
        return ["The swap test needs exactly one subject and one object, so it is left out."]
    subject, obj = result.tokens[result.subjects[0]], result.tokens[result.objects[0]]
    sentences = [
        f"Swapping '{subject}' and '{obj}' gives '{' '.join(swap.tokens)}': the one head's output for "
        f"'{result.tokens[result.query]}' changes by {swap.one_change:.2f}, the {result.num_heads} heads' "
        f"concatenated output by {swap.heads_change:.2f}."
    ]
    if swap.heads_change < ZERO and swap.same_values:
        sentences.append(
            f"Neither can change: at head width {result.head_dim} each head's value copies only "
            f"{quoted_list(result.value_features)}, where '{subject}' and '{obj}' are the same.")
    elif swap.one_change < ZERO <= swap.heads_change:
        sentences.append("So the one head's output is the same whichever word is the subject, while the "
                         "concatenation tells the subject from the object.")
    return sentences


def _argument_sentences(result: RelationResult) -> list[str]:
    """What the one head and heads 1 and 2 put on the subject and the object (the query is a verb)."""
    d, k, query, one = result.d_model, result.head_dim, result.tokens[result.query], result.weights[0]
    targets = (result.subjects, result.objects)
    if all(targets):
        parts = [f"One head of width {d} puts {_on(result, one, result.subjects, 'subject')} "
                 f"and {_on(result, one, result.objects, 'object')}."]
    elif any(targets):
        present = 0 if result.subjects else 1
        parts = [f"One head of width {d} puts {_on(result, one, targets[present], ROLES[present])}; "
                 f"no noun or pronoun from the toy lexicon comes {('after', 'before')[present]} '{query}'"
                 f"{_unknown_on_side(result, ('after', 'before')[present])}, so there is no {ROLES[1 - present]} "
                 "and one head has only one word to find."]
    else:
        parts = [f"No noun or pronoun from the toy lexicon comes before or after '{query}'"
                 f"{_unknown_on_side(result, 'around')}, so there is no subject or object to find: the one head "
                 f"{_largest(result, one)}."]
    for head, (role, weights) in enumerate(zip(ROLES, result.weights[1:])):
        label = f"Head {head + 1} (width {k}, {role})"
        parts.append(f"{label} puts {_on(result, weights, targets[head], role)}." if targets[head]
                     else f"{label} has no {role} to find: it {_largest(result, weights)}.")
    if all(targets):
        shares = result.shares
        heads = (shares[1, 0], shares[2, 1])
        both = min(heads) > 0.5
        parts += [f"A softmax row's weights sum to 1, so no single row can put more than half on the subject and "
                  f"more than half on the object; the one head's shares are {share_text(shares[0, 0])} and "
                  f"{share_text(shares[0, 1])}.",
                  f"The two heads put {share_text(heads[0])} and {share_text(heads[1])}, "
                  + ("each more than half on its own word, which one row cannot do for both."
                     if both else f"at this temperature not both more than half; {_sharpest_text(result)}.")]
    return parts + _swap_sentences(result)


def format_score(value: float) -> str:
    """4.0 -> "4", -4.0 -> "−4", 2.531 -> "2.53", -0.001 -> "0" (never "-0")."""
    return minus(f"{round(float(value), 2):g}")


def answer_sentence(result: RelationResult, choice: str) -> str:
    """The student's answer to "several simpler subspaces" (True is right), against what this figure shows."""
    if not choice:
        return ""
    answered = "You answered True, which is right, but" if choice == "true" else "You answered False, but"
    if not (result.subjects and result.objects):
        missing = ("no verb from the toy lexicon" if result.verb is None
                   else "no subject and object around its verb")
        return (f" {answered} this sentence has {missing}, so there are not two relations to follow; with one "
                "(the default 'the dog chased the cat'), one softmax row must share "
                "its weight, while each head follows its own relation in its own smaller subspace.")
    heads = (result.shares[1, 0], result.shares[2, 1])
    shares = f"head 1 puts {share_text(heads[0])} on the subject and head 2 {share_text(heads[1])} on the object"
    if min(heads) > 0.5:
        if choice == "true":
            return (f" You answered True: each head attends in its own smaller subspace ({shares}), so one query "
                    "follows two relations at once, which one row of one head of the full width cannot.")
        return (f" You answered False, but compare the panels: one softmax row must share its weight, while each "
                f"head, in its own smaller subspace, follows one relation ({shares}).")
    return (f" {answered} at temperature {format_temperature(result.temperature)} {shares}, not both more than half, "
            f"so this figure cannot show it; {_sharpest_text(result)}.")


# The question's options, and the panel each one stands for: True, several simpler subspaces, is the heads' panel.
OPTIONS = {"true": ("True ✓", "the heads, several simpler subspaces"),
           "false": ("False ✗, True is right", "the one head, one richer subspace")}


def choice_mark(result: RelationResult, choice: str) -> str:
    """The student's answer as the figure shows it under its panels (the panel it stands for is framed), and as the
    alt text says it: from the same shares the panels show."""
    if not choice:
        return ""
    answer, panel = OPTIONS[choice]
    opening = f"Your answer: {answer} (framed: {panel})."
    if not (result.subjects and result.objects):
        missing = "no verb from the toy lexicon" if result.verb is None else "no subject and object around its verb"
        return f"{opening} This sentence has {missing}, so there are not two relations to compare."
    (one_subject, one_object), heads = result.shares[0], (result.shares[1, 0], result.shares[2, 1])
    one = f"{share_text(one_subject)} and {share_text(one_object)}"
    both = f"{share_text(heads[0])} and {share_text(heads[1])}"
    if min(heads) > 0.5:
        if choice == "true":
            return (f"{opening} Heads 1 and 2 put {share_text(heads[0])} on the subject and {share_text(heads[1])} on "
                    f"the object, more than half each; one head cannot ({one}).")
        return (f"{opening} One head puts {share_text(one_subject)} on the subject and {share_text(one_object)} on "
                f"the object; heads 1 and 2 put {both}, more than half each.")
    a, b = result.sharpest
    return (f"{opening} At temperature {format_temperature(result.temperature)} heads 1 and 2 put {both} and one head "
            f"{one}; at {format_temperature(TEMPERATURE_MIN)} the heads put {share_text(a)} and {share_text(b)}, "
            "more than half each, which one head cannot.")


def _one_head_sentence(result: RelationResult, s: str, d: int, k: int) -> str:
    """What the one head does with the subject and the object (the sentence has a verb): an even split for one of
    each; per word, not per role, for any other number of them."""
    if len(result.subjects) == len(result.objects) == 1:
        return (f"The one head (width {d}) reads noun + pronoun only, so it scores the subject and the object the "
                f"same, {s}. That is the best one softmax row can do for both: its weights sum to 1, so when one word "
                "gets more than half the other gets less, and an even split is as close to both as a row gets. Its "
                "output is then the same average of the two values whichever word is the subject, while each head "
                f"(width {k}) writes its own word's value into its own columns of the concatenation"
                + (f". Here the two words' values are the same at head width {k} (each head's value copies only "
                   f"{quoted_list(result.value_features)}), so the concatenation cannot tell them apart either."
                   if result.swap is not None and result.swap.same_values else ", so both survive."))
    roles = [f"{share_text(float(result.shares[0, column]))} on the {role}{'' if len(group) == 1 else 's'}"
             for column, (group, role) in enumerate(((result.subjects, "subject"), (result.objects, "object")))
             if group]
    return (f"The one head (width {d}) reads noun + pronoun only, so every noun and pronoun scores the same, {s}, "
            "whatever its role: its weight is shared out per word, not per role"
            + (f" (here {' and '.join(roles)})" if roles else "")
            + ", and its output mixes those words' values in that proportion whichever word plays which role, "
            f"while each head (width {k}) writes its own role's values into its own columns of the concatenation.")


@register
class MultiHeadKind(VisualKind):
    name = "multi-head"
    title = "Multi-head attention: two relations for one query"
    Params = MultiHeadParams
    controls = (
        Control("sentence", f"Sentence (up to {MAX_TOKENS} words; the first verb is the query)", "text",
                max_length=80),
        TEMPERATURE_CONTROL,
        Control("d_model", "Model width d_model (the one head's width)", "int",
                min=D_MODEL_MIN, max=D_MODEL_MAX, step=1),
        Control("num_heads", "Number of heads, each d_model / num_heads wide (must divide d_model)", "int",
                min=NUM_HEADS_MIN, max=NUM_HEADS_MAX, step=1),
    )
    learn = "/learn/attention#multi-head"
    choice_param = "choice"
    inches = (WIDTH, 3.6)
    narrow_inches = (NARROW_WIDTH, 6.2)

    def compute(self, params: MultiHeadParams) -> RelationResult:
        d_model, num_heads, temperature = params.d_model, params.num_heads, params.temperature
        tokens = tuple(tokenize(params.sentence, MAX_TOKENS))
        verb = first_verb(tokens)
        query = 0 if verb is None else verb
        x = relation_inputs(tokens, d_model)  # (N, d_model)
        models = (one_head_for_both(d_model), relation_heads(d_model, num_heads))
        one, heads = (model.forward_detailed(x, temperature=temperature) for model in models)
        arguments = [lookup(token).category in ARGUMENT_CATEGORIES for token in tokens]
        subjects = () if verb is None else tuple(i for i in range(verb) if arguments[i])
        objects = () if verb is None else tuple(i for i in range(verb + 1, len(tokens)) if arguments[i])
        swap = None
        if len(subjects) == len(objects) == 1 and tokens[subjects[0]] != tokens[objects[0]]:
            (subject,), (obj,) = subjects, objects
            swapped = list(tokens)
            swapped[subject], swapped[obj] = tokens[obj], tokens[subject]
            x_swapped = relation_inputs(swapped, d_model)  # (N, d_model); the verb keeps its place
            one_change, heads_change = (
                float(np.linalg.norm(model(x_swapped, temperature=temperature)[0][query] - trace.output[query]))
                for model, trace in zip(models, (one, heads)))
            values = heads.v_heads[:DRAWN_HEADS]  # (2, N, d_k)
            swap = SwapTest(tuple(swapped), one_change, heads_change,
                            bool(np.array_equal(values[:, subject], values[:, obj])))
        head_dim = models[1].head_dim
        copied = np.flatnonzero(models[1].w_v[:, 0:head_dim].any(axis=1))  # input columns head 1's value reads
        weights = np.vstack([one.weights[0, query], heads.weights[:DRAWN_HEADS, query]])  # (3, N)
        sharpest = None
        if subjects and objects:
            coolest = models[1].forward_detailed(x, temperature=TEMPERATURE_MIN).weights[:DRAWN_HEADS, query]  # (2, N)
            sharpest = (float(coolest[0, list(subjects)].sum()), float(coolest[1, list(objects)].sum()))
        return RelationResult(
            tokens=tokens, query=query, verb=verb, subjects=subjects, objects=objects, d_model=d_model,
            num_heads=num_heads, head_dim=head_dim, temperature=temperature,
            scores=np.vstack([one.scores[0, query], heads.scores[:DRAWN_HEADS, query]]), weights=weights,
            shares=np.column_stack([weights[:, list(group)].sum(axis=1) for group in (subjects, objects)]),  # (3, 2)
            value_features=tuple(FEATURE_NAMES[i] for i in copied), sharpest=sharpest, swap=swap, unknown=tuple(unknown_words(tokens)))

    def alt(self, params: MultiHeadParams, result: RelationResult) -> str:
        d, h, k = result.d_model, result.num_heads, result.head_dim
        query = result.tokens[result.query]
        parts = [(
            f"Constructed attention over '{' '.join(result.tokens)}' (d_model {d}, temperature "
            f"{format_temperature(result.temperature)}), all for the query '{query}': one row of weights per head, "
            f"columns are keys, weights 0 to 1; one head of width {d} against {h} heads of width {k}."
        )]
        if result.verb is None:
            rows = zip(("the one head", "head 1", "head 2"), result.weights)
            parts.append(f"The sentence has no verb from the toy lexicon, so there is no subject or object to find. "
                         f"For its first word, '{query}': " + "; ".join(f"{name} {_largest(result, row)}"
                                                                         for name, row in rows) + ".")
        else:
            parts += _argument_sentences(result)
        parts += _idle_sentence(result) + ([unknown_sentence(result.unknown)] if result.unknown else [])
        return " ".join(parts + [choice_mark(result, params.choice)]).rstrip()

    def caption(self, params: MultiHeadParams, result: RelationResult) -> str:
        s, d, k = format_score(ROLE_STRENGTH), result.d_model, result.head_dim
        query = result.tokens[result.query]
        parts = [
            "Constructed by hand, not trained. Each word's input is its toy features (a word outside the toy lexicon: "
            "pseudo-random ones, with no part of speech) plus a "
            f"'{SIDE_COLUMN}' column, −1 before the first verb and +1 after it, as if an earlier layer had "
            "marked word order; in this toy a subject is a noun or pronoun before the verb and an object one after it.",
            f"Head 1's query reads the 'verb' feature and its key noun + pronoun − side, so the verb scores each "
            f"word {s}·(noun + pronoun − side): a noun or pronoun before it {format_score(2 * ROLE_STRENGTH)}, "
            f"another word before it {s}, itself 0, a noun or pronoun after it 0, another word after it "
            f"{format_score(-ROLE_STRENGTH)} (a word outside the lexicon is never a noun or pronoun here). "
            "Head 2 uses + side, the mirror image.",
        ]
        if result.verb is None:  # no word has a role, and the one head's query reads no verb
            parts.append(f"This sentence has no verb, so the figure shows the first word, '{query}'.")
        else:
            parts.append(_one_head_sentence(result, s, d, k))
        scores = "; ".join(f"{name}: " + ", ".join(f"{token} {format_score(score)}" for token, score in
                                                   zip(result.tokens, row)) for name, row in zip(ROWS, result.scores))
        parts.append(f"Scores of '{query}' (q·k/√d_k; weights = softmax(score / "
                     f"{format_temperature(result.temperature)})): {scores}.")
        return " ".join(parts) + unknown_caption(result.unknown) + answer_sentence(result, params.choice)

    def figure_inches(self, params: MultiHeadParams, layout: str = "wide", result: RelationResult | None = None
                      ) -> tuple[float, float]:
        """Taller by the "your answer" lines when the student's choice is known."""
        width, height = super().figure_inches(params, layout)
        lines = self.mark_lines(params, result if result is not None else self.compute(params), width)
        return width, height + (len(lines) * line_height(MARK_FONT) + MARK_ROOM if lines else 0.0)

    @staticmethod
    def mark_lines(params: MultiHeadParams, result: RelationResult, width: float) -> list[str]:
        return wrap_lines(choice_mark(result, params.choice), width - 2 * MARK_MARGIN - 2 * MARK_PAD, MARK_FONT)

    def draw(self, params: MultiHeadParams, result: RelationResult, inches):
        from app.plots.multi_head import draw_relations

        return draw_relations(result, inches, self.mark_lines(params, result, inches[0]), params.choice)

