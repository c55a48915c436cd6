"""The head-split visual: each head projects all of X (W_Q^i, W_K^i, W_V^i of d_model × d_k), and
what the alt text, caption, figure and table of Q5's head widths claim matches the engine."""

from __future__ import annotations

import itertools
import re
from fractions import Fraction

import matplotlib.text
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matplotlib.patches import Rectangle
from pydantic import ValidationError

from app.engine import MultiHeadAttention
from app.plots.head_split import CHOSEN_FILL, MIN_FONT
from app.visuals import get_kind
from app.visuals.base import NARROW_WIDTH, WIDTH
from app.visuals.kinds.head_split import NO_CHOICE, OPTION_WIDTHS, answer_width, drawn_heads

KIND = get_kind("head-split")
CHOICES = (NO_CHOICE, *map(str, OPTION_WIDTHS))


@st.composite
def head_split_params(draw, max_d_model: int = 1024):
    d_model = draw(st.integers(1, max_d_model))
    divisors = [h for h in range(1, 65) if d_model % h == 0]
    return {"d_model": d_model, "num_heads": draw(st.sampled_from(divisors)),
            "choice": draw(st.sampled_from(CHOICES))}


SWEEP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def texts_of(figure) -> list[str]:
    """Every string the figure shows, a piece of sub/superscript markup counted once as its whole."""
    seen = []
    for text in figure.findobj(matplotlib.text.Text):
        whole = getattr(text, "rich_text", text.get_text())
        if whole and whole not in seen:
            seen.append(whole)
    return seen


def plain(markup: str) -> str:
    """The figure's markup as one line of plain text: "W_{Q}^{0}" -> "W_Q^0"."""
    return re.sub(r"([_^])\{([^}]*)\}", r"\1\2", markup).replace("\n", "")


def engine_numbers(d_model: int, num_heads: int):
    model = MultiHeadAttention.init(d_model, num_heads, dtype=np.float32)
    trace = model.forward_detailed(np.ones((4, d_model), dtype=np.float32))
    return model, trace


@SWEEP
@given(head_split_params())
def test_every_claim_in_the_alt_text_and_caption_matches_the_engine(values):
    params = KIND.parse(values)
    computed = KIND.describe(params)
    result, alt, caption = computed.result, computed.alt, computed.caption
    model, trace = engine_numbers(params.d_model, params.num_heads)
    h, d_model = params.num_heads, params.d_model
    d_k = trace.q_heads.shape[-1]

    assert result.head_dim == d_k == model.head_dim
    assert result.heads_read_every_feature
    assert result.shapes['W_Q^i'] == (d_model, d_k)
    assert result.shapes['concat'] == trace.concatenated.shape
    assert result.shapes['W_O'] == model.w_o.shape == (d_model, d_model)
    assert result.projection_weights == model.w_q.size + model.w_k.size + model.w_v.size == 3 * d_model * d_model

    assert f"d_model = {d_model} and {h} head{'' if h == 1 else 's'} of d_k = {d_k}." in alt
    assert f"each {d_model} × {d_k}" in alt
    assert f"W_O ({d_model} × {d_model})" in alt
    assert f"√{d_k})" in alt and f"√{d_k})" in caption
    assert "split the" not in alt.lower() and "slice of" not in alt.lower()
    if h == 1:
        assert "nothing is split" in alt and "W_Q^i" not in alt and "1 head side by side" not in caption
        assert f"the whole {d_model} × {d_model} matrices" in caption
    else:
        assert f"head i multiplies all {d_model} features by its own W_Q^i, W_K^i and W_V^i" in alt
        assert f"d_k = d_model / h = {d_model} / {h} = {d_k}." in caption
        assert f"N × ({h} · {d_k}) = N × {trace.concatenated.shape[-1]}" in caption
    assert (" Heads 2 to" in alt) == (h > 4)
    assert ("With d_k = 1" in caption) == (d_k == 1)

    # Weights the student can recompute: 3 · d_model² for W_Q, W_K, W_V, d_model² for W_O.
    assert f"3 · {d_model} · {d_model} = {model.w_qkv.size:,}" in caption
    assert f"W_O {d_model} · {d_model} = {model.w_o.size:,}" in caption
    assert f"{model.w_qkv.size + model.w_o.size:,} in all" in caption

    # The table: d_model / h and Q5's four option widths, each row's numbers by the caption's rule.
    widths = sorted({d_k, *OPTION_WIDTHS})
    assert [row.head_dim for row in result.rows] == widths
    for row in result.rows:
        w = row.head_dim
        assert row.concat_width == h * w
        assert row.output_projection_shape == (h * w, d_model)
        assert row.weights == 4 * d_model * h * w
        assert row.relative_cost == Fraction(h * w, d_model)
        claim = f"d_k = {w}" + (f" = {d_model} / {h}" if w == d_k else "") + f": concat N × {h * w}"
        assert claim in alt
        assert f"W_O {h * w} × {d_model}, {4 * d_model * h * w:,} weights" in alt
    correct_row = next(row for row in result.rows if row.head_dim == d_k)
    assert correct_row.weights == model.w_qkv.size + model.w_o.size  # the engine's own layer

    choice = None if params.choice == NO_CHOICE else int(params.choice)
    if h > 1 and choice in (None, d_k):  # the output is X's shape at every width: d_model / h is what keeps W_O square
        assert (f"makes the concat N × {d_model}, the input's width, so W_O is a square {d_model} × {d_model}" in alt
                and "Any width gives X's shape in the end" in alt and "so the output has X's shape" not in alt)
    if choice is None:
        assert "Chosen" not in alt
    elif choice == d_k:
        assert f"Chosen d_k = {d_k} is d_model / h." in alt
    else:
        ratio = Fraction(h * choice, d_model)
        ratio_text = f"{ratio.numerator}×" if ratio.denominator == 1 else f"{ratio.numerator}/{ratio.denominator}×"
        assert (f"Chosen d_k = {choice}: " in alt and f"N × {h * choice}, not N × {d_model}; "
                f"W_O must be {h * choice} × {d_model} to map it back to X's shape; {ratio_text} the weights" in alt)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head_split_params(max_d_model=256))
def test_the_figure_draws_each_heads_projections_never_a_split_of_x_and_marks_the_choice(values):
    params = KIND.parse(values)
    result = KIND.compute(params)
    for layout in ("wide", "narrow"):
        figure = KIND.draw(params, result, KIND.figure_inches(params, layout))
        texts = texts_of(figure)
        flat = [plain(text) for text in texts]
        for head in drawn_heads(params.num_heads):
            if head is None:
                continue
            for letter in "QKV":
                name = f"W_{letter}" if params.num_heads == 1 else f"W_{letter}^{head}"
                assert any(name in text for text in flat), (name, layout)
        assert not any(re.search(r"\bsplit\b", text, re.IGNORECASE) for text in flat)
        assert any(f"every head reads all {params.d_model} features" in text for text in flat) or (
            params.num_heads == 1)
        assert any(f"{result.shapes['W_Q^i'][0]} × {result.shapes['W_Q^i'][1]} each" in text
                   for text in flat)
        chosen_marks = [text for text in flat if text.startswith("◀")]
        highlighted = [patch for patch in figure.findobj(Rectangle)
                       if patch.get_facecolor()[:3] == matplotlib.colors.to_rgb(CHOSEN_FILL)]
        if params.choice == NO_CHOICE:
            assert not chosen_marks and not highlighted
        else:
            assert len(highlighted) == 1 and (len(chosen_marks) == 1 or any("◀" in text for text in flat))
            # The highlighted row holds the chosen width's numbers.
            row = result.chosen_row
            band = highlighted[0].get_bbox()
            inside = [text.get_text() for text in figure.findobj(matplotlib.text.Text)
                      if band.y0 < text.get_position()[1] < band.y1]
            assert str(row.head_dim) in inside and f"{row.weights:,}" in inside


EXTREMES = [
    {}, {"choice": "512"}, {"d_model": 1, "num_heads": 1, "choice": "32"},
    {"d_model": 4, "num_heads": 4, "choice": "128"}, {"d_model": 1024, "num_heads": 64, "choice": "512"},
    {"d_model": 1024, "num_heads": 1, "choice": "32"}, {"d_model": 960, "num_heads": 60, "choice": "64"},
    {"d_model": 5, "num_heads": 5},
    # A numeric answer's own row: the widest one the table takes, under the most heads and the widest model.
    {"d_model": 1024, "num_heads": 64, "answer_width": "512"}, {"d_model": 384, "num_heads": 12, "answer_width": "1"},
    {"d_model": 1, "num_heads": 1, "answer_width": "32768"}, {"d_model": 1024, "num_heads": 2, "answer_width": "16384"},
    {"d_model": 1024, "num_heads": 64, "answer_width": "12.5"},
]


@pytest.mark.parametrize("values", EXTREMES)
@pytest.mark.parametrize("layout", ["wide", "narrow"])
def test_no_label_overlaps_another_or_leaves_the_figure_and_none_is_too_small(values, layout):
    from app.plots.figure import to_png

    params = KIND.parse(values)
    inches = KIND.figure_inches(params, layout)
    assert inches[0] == (NARROW_WIDTH if layout == "narrow" else WIDTH)
    figure = KIND.draw(params, KIND.compute(params), inches)
    to_png(figure)  # lays the text out
    renderer = figure.canvas.get_renderer()
    width, height = figure.bbox.width, figure.bbox.height
    boxes = []
    for text in figure.findobj(matplotlib.text.Text):
        if not text.get_text().strip():
            continue
        assert text.get_fontsize() >= MIN_FONT  # ≥ 10 CSS px in the SVG
        box = text.get_window_extent(renderer)
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, text.get_text()
        boxes.append((getattr(text, "rich_text", text.get_text()), text.get_text(), box))
    for (whole_a, a, box_a), (whole_b, b, box_b) in itertools.combinations(boxes, 2):
        if whole_a == whole_b:
            continue  # the pieces of one label touch by design
        overlap_x = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        overlap_y = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        assert overlap_x <= 1 or overlap_y <= 1, (a, b)


def test_choice_accepts_the_banks_option_ids_and_refuses_other_widths():
    assert KIND.parse({}).choice == NO_CHOICE
    assert KIND.parse({"choice": 128}).choice == "128"  # a bank may write a number
    assert KIND.parse({"choice": "64"}).choice == "64"
    with pytest.raises(ValidationError):
        KIND.parse({"choice": "100"})
    control = next(control for control in KIND.controls if control.name == "choice")
    assert [value for value, _ in control.choices] == list(CHOICES)
    assert [control.name for control in KIND.controls] == ["d_model", "num_heads", "choice"]


def test_heads_that_do_not_divide_d_model_get_the_engines_sentence_and_the_counts_that_would():
    # 65 divides 130 too, but the control stops at 64 heads.
    with pytest.raises(ValidationError, match=r"d_model=130 is not divisible by num_heads=4: .* divides d_model "
                                              r"\(1, 2, 5, 10, 13 or 26\), or change d_model"):
        KIND.parse({"d_model": 130, "num_heads": 4})
    with pytest.raises(ValidationError, match=r"divides d_model \(1\), or change d_model"):
        KIND.parse({"d_model": 1, "num_heads": 2})
    with pytest.raises(ValidationError):
        KIND.parse({"d_model": 1025})


def test_the_svg_is_deterministic_and_sized_before_drawing():
    params = KIND.parse({"choice": "128"})
    first, second = KIND.render(params), KIND.render(params)
    assert first.image == second.image and first.mimetype == "image/svg+xml"
    narrow = KIND.render(params, layout="narrow").image
    assert narrow != first.image
    width, height = KIND.size(params, "narrow")
    assert f'width="{NARROW_WIDTH * 72:g}pt"'.encode() in narrow
    assert width == round(NARROW_WIDTH * 96) and height > width


@pytest.mark.parametrize("answer, row, says", [
    ("384", 384, "Your answer, d_k = 384: 12 heads of 384 concatenate to N × 4608, not N × 384; W_O must be "
                 "4608 × 384 to map it back to X's shape; 12× the weights and multiply-adds of d_k = 32."),
    # 12 heads of 4608 make 55,296 features, wider than the table's columns hold: the words still work it out.
    ("4608", None, "Your answer, d_k = 4608 (too wide for the table): 12 heads of 4608 concatenate to N × 55296, "
                   "not N × 384; W_O must be 55296 × 384 to map it back to X's shape; 144× the weights"),
    ("32", 32, "Your answer, d_k = 32, is d_model / h."),
    ("12.5", None, "Your answer, 12.5, is not a head width: d_k counts the features of each head's queries"),
    ("0", None, "Your answer, 0, is not a head width"),
])
def test_a_numeric_answer_gets_its_own_row_and_the_words_speak_to_it(answer, row, says):
    """head-dimension-variant asks for d_k as a number: the table compares the student's width, not only Q5's."""
    kind = get_kind("head-split")
    params = kind.parse({"d_model": 384, "num_heads": 12, "answer_width": answer})
    computed = kind.describe(params)
    result = computed.result
    widths = [r.head_dim for r in result.rows]
    assert widths == sorted({32, 64, 128, 512, *([row] if row else [])})
    assert result.choice is None  # the select's width; the answer is marked on its own
    assert (result.answer_row.head_dim if result.answer_row else None) == (row or answer_width(float(answer)))
    assert says in computed.alt and says in computed.caption
    assert kind.figure_inches(params)[1] == kind.figure_inches(kind.parse({"d_model": 384, "num_heads": 12,
                                                                           "answer_width": str(row or 32)}))[1]
    svg = kind.render(params).image.decode()
    assert ("your answer" in svg) == (row is not None)  # the mark on the answer's row (text kept as a comment)


@pytest.mark.parametrize("d_model, num_heads, width", [(128, 4, 4), (1024, 2, 32), (2, 1, 1), (384, 12, 12)])
def test_a_narrower_width_is_cheaper_and_the_words_name_its_bottleneck(d_model, num_heads, width):
    """Narrower heads are not a free saving: the words say the concat squeezes every token through h · d_k < d_model
    features, and never that every other width costs more."""
    kind = get_kind("head-split")
    computed = kind.describe(kind.parse({"d_model": d_model, "num_heads": num_heads, "answer_width": width}))
    concat = num_heads * width
    assert concat < d_model
    assert f"span at most {concat} of the {d_model} dimensions (a bottleneck" in computed.alt
    assert "other widths pay for it" not in computed.alt
    wider = kind.describe(kind.parse({"d_model": d_model, "num_heads": num_heads,
                                      "answer_width": d_model // num_heads * 2}))
    assert "bottleneck" not in wider.alt.split("Your answer")[1]  # a wider width only costs more
    plain = kind.describe(kind.parse({"d_model": d_model, "num_heads": num_heads}))
    if num_heads > 1:  # with one head the words say nothing is split instead
        assert "narrower ones, though cheaper, pass every token through fewer than" in plain.alt


def test_the_select_compares_another_width_beside_a_numeric_answer():
    """On a numeric answer page the select is no longer ignored: its width is marked ("◁ chosen", dashed) and spoken
    of beside the student's own ("◀ your answer", solid)."""
    kind = get_kind("head-split")
    answer_only = kind.parse({"d_model": 768, "num_heads": 12, "answer_width": "48"})
    both = kind.parse({"d_model": 768, "num_heads": 12, "answer_width": "48", "choice": "128"})
    computed = kind.describe(both)
    assert computed.result.choice == 128 and computed.result.answer_row.head_dim == 48
    assert computed.result.chosen_row.head_dim == 128
    says_answer = "Your answer, d_k = 48: 12 heads of 48 concatenate to N × 576, not N × 768"
    says_chosen = "Chosen d_k = 128: 12 heads of 128 concatenate to N × 1536, not N × 768"
    assert says_answer in computed.alt and says_chosen in computed.alt and says_chosen in computed.caption
    assert computed.alt.index(says_answer) < computed.alt.index(says_chosen)
    assert says_chosen not in kind.describe(answer_only).alt
    svg, alone = kind.render(both).image.decode(), kind.render(answer_only).image.decode()
    assert "your answer" in svg and "chosen" in svg and "chosen" not in alone
    assert svg != alone
    # The same width in both: one mark, one sentence.
    same = kind.describe(kind.parse({"d_model": 768, "num_heads": 12, "answer_width": "128", "choice": "128"}))
    assert same.alt.count("Your answer, d_k = 128:") == 1 and "Chosen" not in same.alt
    # The control no longer calls the select "your answer": on a numeric question it is not.
    (control,) = [c for c in kind.controls if c.name == "choice"]
    assert "your answer" not in control.label


def test_the_answer_page_of_a_numeric_head_width_question_draws_that_width(client):
    from conftest import answer_via_form

    for value in ("96", "384"):  # two of head-dimension-variant's wrong answers: d_model itself, and 4 × 96
        student = client.application.test_client()
        assert answer_via_form(student, "attention-practice", "head-dimension-variant", value).status_code == 303
        page = student.get("/quiz/attention-practice/head-dimension-variant/answer").get_data(as_text=True)
        assert f"Your answer, d_k = {value}" in page or f"Your answer, {value}" in page, value


@pytest.mark.parametrize("params", [
    {"answer_width": "32"},  # the right answer: "✓" and "◀ your answer" on one row
    {"answer_width": "32", "choice": "512"},
    {"d_model": 960, "num_heads": 64, "choice": "32", "answer_width": "15"},
    {"choice": "32"},
])
def test_every_text_of_the_table_stays_inside_the_figure(params):
    from .helpers import texts_outside

    kind = get_kind("head-split")
    parsed = kind.parse(params)
    for layout in ("wide", "narrow"):
        assert texts_outside(kind.draw(parsed, kind.compute(parsed), kind.figure_inches(parsed, layout))) == []
