"""The "autoregressive-pixels" visual: an image generated pixel by pixel in raster order, Image GPT's full
causal mask and the Image Transformer's local-block mask over its pixels, the generation order step by
step, and the student's answer (next-pixel prediction, or a map from noise) marked and answered.

The masks are checked against plain loops that build them the way the papers describe them; every number
the alt text, caption and figure state is read back and checked against those loops.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.patches import Rectangle
from pydantic import ValidationError

from app import engine
from app.visuals import check_visual, get_kind
from app.visuals.base import NARROW_WIDTH
from app.visuals.kinds.autoregressive_pixels import figure_layout

from .helpers import grid, grids, words

KIND = "autoregressive-pixels"


# --- references by plain loops --------------------------------------------------------------------------


def raster_number(height: int, width: int, row: int, col: int) -> int:
    """The pixel's place in raster order, by walking the image row by row, left to right."""
    order = [(r, c) for r in range(height) for c in range(width)]
    return order.index((row, col))


def naive_causal(n: int) -> list[list[bool]]:
    """Query i may read key j when j comes no later than i."""
    return [[j <= i for j in range(n)] for i in range(n)]


def naive_local(n: int, block: int) -> list[list[bool]]:
    """The Image Transformer's 1-D local attention (Parmar et al. 2018, section 3.2): cut the sequence into
    query blocks of `block` positions; each block's memory is its own positions and the `block` positions
    generated before it; a query reads its memory up to itself."""
    allowed = [[False] * n for _ in range(n)]
    for start in range(0, n, block):
        memory_start = max(0, start - block)
        for i in range(start, min(start + block, n)):
            for j in range(memory_start, i + 1):
                allowed[i][j] = True
    return allowed


def naive_blocks(n: int, block: int) -> list[list[int]]:
    """The query blocks: consecutive runs of `block` pixels, the last one cut short by the image's end."""
    blocks, current = [], []
    for position in range(n):
        current.append(position)
        if len(current) == block:
            blocks.append(current)
            current = []
    return blocks + ([current] if current else [])


def keys_of(mask_row) -> list[int]:
    return [j for j, allowed in enumerate(mask_row) if allowed]


def span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}–{last}"


def pixels_text(first: int, last: int) -> str:
    return f"pixel {first}" if first == last else f"pixels {first}–{last}"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


IMAGES = st.tuples(st.integers(2, 16), st.integers(2, 16)).flatmap(
    lambda shape: st.tuples(st.just(shape[0]), st.just(shape[1]), st.integers(0, shape[0] - 1),
                            st.integers(0, shape[1] - 1)))
# Blocks: every size, with the interesting ones oversampled (1, about a row, the image's size and beyond).
BLOCKS = st.one_of(st.integers(1, 256), st.sampled_from([1, 2, 3, 16, 255, 256]))
MASKS = st.sampled_from(["causal", "local"])
CHOICES = st.sampled_from(["", "next-pixel", "noise-to-image"])


def values_of(image, block, mask, choice) -> dict:
    height, width, row, col = image
    return {"height": height, "width": width, "row": row, "col": col, "block": block, "mask": mask,
            "choice": choice}


def result_of(values: dict):
    kind = get_kind(KIND)
    params = kind.parse(values)
    result = kind.compute(params)
    return result, kind.alt(params, result), kind.caption(params, result)


# --- the masks ---------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(IMAGES, BLOCKS, MASKS)
def test_masks_are_the_engine_causal_mask_and_the_papers_local_blocks(image, block, mask):
    height, width, row, col = image
    result, _, _ = result_of(values_of(image, block, mask, ""))
    n = height * width
    np.testing.assert_array_equal(result.causal, engine.causal_mask(n))
    np.testing.assert_array_equal(result.causal, np.array(naive_causal(n)))
    np.testing.assert_array_equal(result.local, np.array(naive_local(n, block)))
    assert not (result.local & ~result.causal).any()  # local = causal AND a window: never a later pixel
    assert result.index == raster_number(height, width, row, col)
    if block >= n:  # one block holds the whole image
        np.testing.assert_array_equal(result.local, result.causal)
    np.testing.assert_array_equal(result.selected, result.causal if mask == "causal" else result.local)


@settings(max_examples=40, deadline=None)
@given(IMAGES, BLOCKS, MASKS, CHOICES)
def test_every_number_in_the_alt_text_holds_for_every_image_pixel_and_block(image, block, mask, choice):
    height, width, row, col = image
    _, alt, caption = result_of(values_of(image, block, mask, choice))
    n = height * width
    i = raster_number(height, width, row, col)
    causal, local = naive_causal(n), naive_local(n, block)
    assert alt.startswith(f"Next-pixel prediction on a {height} × {width} image read in raster order")
    assert f"two {n} × {n} masks whose rows are query pixels and columns key pixels" in alt
    assert f"Pixel ({row}, {col}) is number {i}." in alt

    # Image GPT: every earlier pixel and itself.
    keys = keys_of(causal[i])
    later = n - len(keys)
    itself = ", only itself" if len(keys) == 1 else ""
    tail = (", and it is the last pixel, so none come after it" if later == 0
            else f", and to none of the {later} after it")
    assert (f"Under Image GPT's full causal mask it may attend to {plural(len(keys), 'pixel')} "
            f"({span(keys[0], keys[-1])}{itself}){tail}.") in alt
    if i == 0:
        assert keys == [0]  # the first pixel attends only to itself

    # The Image Transformer: its query block and the block before it.
    local_keys = keys_of(local[i])
    assert local_keys == list(range(local_keys[0], i + 1))  # one unbroken run ending at the query
    blocks = naive_blocks(n, block)
    (mine,) = [number for number, members in enumerate(blocks) if i in members]
    start = f"Under the Image Transformer's local 1-D mask with blocks of {plural(block, 'pixel')}"
    if len(blocks) == 1:
        assert f"{start}, at least the image's {n}, the whole image is one block, so the local mask equals " \
               "the full causal mask." in alt
        assert local_keys == keys
    elif mine == 0:
        assert (f"{start}, pixel {i} lies in the first block ({pixels_text(0, blocks[0][-1])}), which has no "
                f"block before it, so it attends to the same {plural(len(keys), 'pixel')} as under the full "
                f"causal mask.") in alt
        assert local_keys == keys
    else:
        query_block, before = blocks[mine], blocks[mine - 1]
        assert local_keys[0] == before[0]  # the memory starts where the block before starts
        masked = before[0]  # the earlier pixels outside the memory
        attends = (f"{start}, its query block is {pixels_text(query_block[0], query_block[-1])} and its memory "
                   f"adds the block before it, {pixels_text(before[0], before[-1])}, so it may attend to "
                   f"{plural(len(local_keys), 'pixel')} ({span(local_keys[0], i)})")
        if masked == 0:  # the second block: nothing lies before its memory
            assert (f"{attends}, itself and every pixel before it, as under the full causal mask: no block lies "
                    "further back.") in alt
            assert local_keys == keys
        else:
            # Stacked layers: the pixels i depends on after L layers are row i of the mask's L-th boolean power.
            one_layer = np.array(local, dtype=int)  # (n, n)
            reach, layers = one_layer, 1
            while not reach[i, : i + 1].all():
                reach, layers = np.minimum(reach @ one_layer, 1), layers + 1
            assert (f"{attends}; the {plural(masked, 'earlier pixel')} ({span(0, masked - 1)}) "
                    f"{'is' if masked == 1 else 'are'} masked in one attention layer. Stacked layers reach one block "
                    f"further back each, as each key pixel has already read the block before its own, so a stack of "
                    f"{layers} layers lets pixel {i} depend on every earlier pixel.") in alt
        assert len(local_keys) == len(before) + (i - query_block[0] + 1)

    # The generation order: pixel k is predicted from the output at pixel k - 1, whose mask row is read.
    selected = causal if mask == "causal" else local
    name = "Image GPT's full causal mask" if mask == "causal" else "the Image Transformer's local mask"
    shown = sorted({0, 1, min(i + 1, n - 1), n - 1})
    phrases = []
    for k in shown:
        if k == 0:
            phrases.append("pixel 0 is predicted with no pixel known")
            continue
        read = keys_of(selected[k - 1])
        assert all(j < k for j in read)  # only pixels that exist by then
        if k == 1:
            assert read == [0]
            phrases.append("pixel 1 with pixel 0 known and read")
        else:
            read_text = "all read" if read[0] == 0 else f"{pixels_text(read[0], read[-1])} read"
            phrases.append(f"pixel {k} with {pixels_text(0, k - 1)} known, {read_text}")
    assert f"Generation order under {name}, one pixel per step: {'; '.join(phrases)}." in alt
    assert (f"Pixel {i} is the last, so its output predicts no further pixel." in alt) == (i == n - 1)

    # The caption's worked example for this pixel and block.
    assert "causal_mask AND ⌊j / b⌋ ≥ ⌊i / b⌋ − 1" in caption
    if len(blocks) == 1:
        assert f"Here b = {block} is at least the {n} pixels" in caption
    else:
        example = f"For pixel {i} and b = {block}: block ⌊{i} / {block}⌋ = {mine} is " \
                  f"{pixels_text(blocks[mine][0], blocks[mine][-1])}"
        assert example in caption
        if mine:
            assert (f"the block before it is {pixels_text(blocks[mine - 1][0], blocks[mine - 1][-1])}, so keys "
                    f"{span(local_keys[0], i)} remain.") in caption
    for text in (alt, caption):
        assert "Image GPT" in text and "Image Transformer" in text


def test_default_words():
    alt, caption = words(KIND, {})
    assert "Pixel (3, 2) is number 20." in alt
    assert "may attend to 21 pixels (0–20), and to none of the 15 after it." in alt
    assert ("its query block is pixels 18–23 and its memory adds the block before it, pixels 12–17, so it may "
            "attend to 9 pixels (12–20); the 12 earlier pixels (0–11) are masked in one attention layer. Stacked "
            "layers reach one block further back each, as each key pixel has already read the block before its own, "
            "so a stack of 3 layers lets pixel 20 depend on every earlier pixel.") in alt
    assert "pixel 21 with pixels 0–20 known, pixels 12–20 read" in alt
    assert "For pixel 20 and b = 6: block ⌊20 / 6⌋ = 3 is pixels 18–23" in caption
    assert "Chen et al., 2020" in caption and "Parmar et al., 2018" in caption


def test_edge_pixels_and_blocks():
    alt, _ = words(KIND, {"height": "2", "width": "3", "row": "0", "col": "0"})
    assert "may attend to 1 pixel (0, only itself), and to none of the 5 after it." in alt
    alt, _ = words(KIND, {"height": 2, "width": 3, "row": 1, "col": 2, "block": 2})
    assert "may attend to 6 pixels (0–5), and it is the last pixel, so none come after it." in alt
    assert "its query block is pixels 4–5 and its memory adds the block before it, pixels 2–3" in alt
    assert "Pixel 5 is the last, so its output predicts no further pixel." in alt
    # A block of one pixel: each pixel reads itself and the one before; a masked run of one pixel.
    alt, _ = words(KIND, {"height": 2, "width": 2, "row": 1, "col": 0, "block": 1})
    assert "its query block is pixel 2 and its memory adds the block before it, pixel 1, so it may attend to " \
           "2 pixels (1–2); the 1 earlier pixel (0) is masked in one attention layer." in alt
    # A last block cut short by the image's end.
    alt, _ = words(KIND, {"height": 2, "width": 5, "row": 1, "col": 4, "block": 4})
    assert "its query block is pixels 8–9 and its memory adds the block before it, pixels 4–7" in alt
    # Blocks as long as the image, or longer.
    for block in (36, 256):
        alt, caption = words(KIND, {"block": block})
        assert "the whole image is one block, so the local mask equals the full causal mask." in alt
        assert "the two masks are the same" in caption


# --- the figure ------------------------------------------------------------------------------------------


def panels(figure, result):
    """The figure's axes by role: two overlays, two masks, then the step panels' (image, title) in one axes."""
    causal_overlay, local_overlay, causal_mask, local_mask, steps = figure.axes
    assert len(grids(steps)) == len(steps.texts) == len(result.steps)
    return causal_overlay, local_overlay, causal_mask, local_mask, list(zip(grids(steps), steps.texts))


def naive_overlay(mask_row, index: int, height: int, width: int) -> np.ndarray:
    """2 = may attend, 3 = the query, 1 = earlier but masked, 0 = later."""
    state = np.zeros((height, width), dtype=int)
    for j, allowed in enumerate(mask_row):
        r, c = divmod(j, width)
        state[r, c] = 3 if j == index else 2 if allowed else 1 if j < index else 0
    return state


def figure_texts(figure) -> list[str]:
    return [text.get_text() for text in figure.texts]


def check_figure(values: dict, layout: str = "wide"):
    kind = get_kind(KIND)
    params = kind.parse(values)
    result = kind.compute(params)
    figure = kind.draw(params, result, kind.figure_inches(params, layout))
    height, width, n, i = result.height, result.width, result.pixels, result.index
    causal, local = naive_causal(n), naive_local(n, result.block)
    causal_overlay, local_overlay, causal_mask, local_mask, steps = panels(figure, result)
    np.testing.assert_array_equal(grid(causal_overlay).get_array(), naive_overlay(causal[i], i, height, width))
    np.testing.assert_array_equal(grid(local_overlay).get_array(), naive_overlay(local[i], i, height, width))
    # The masks: rows are query pixels, columns key pixels; 2 attended, 1 causal but outside the window.
    for ax, mask in ((causal_mask, causal), (local_mask, local)):
        expected = np.array([[2 if mask[q][k] else 1 if causal[q][k] else 0 for k in range(n)] for q in range(n)])
        np.testing.assert_array_equal(grid(ax).get_array(), expected)
        assert ax.get_ylabel() == "query pixel" and ax.get_xlabel() == "key pixel"
        framed = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_height() == 1]
        assert len(framed) == 1 and framed[0].get_y() == pytest.approx(i - 0.5) and framed[0].get_width() == n
    assert f"({span(0, i)})" not in causal_overlay.get_title()  # titles give spans without brackets
    assert causal_overlay.get_title().endswith(f"attends to {span(0, i)}") or \
        causal_overlay.get_title().endswith(f"attends {span(0, i)}")
    local_keys = keys_of(local[i])
    assert local_overlay.get_title().endswith(f"{span(local_keys[0], i)}")
    # Each step panel: pixel k being predicted, the ones before it known, the selected mask's row k-1 read.
    selected = causal if result.mask_name == "causal" else local
    shown = sorted({0, 1, min(i + 1, n - 1), n - 1})
    for (image, title), k in zip(steps, shown, strict=True):
        state = image.get_array()
        read = set(keys_of(selected[k - 1])) if k else set()
        for j in range(n):
            r, c = divmod(j, width)
            assert state[r, c] == (4 if j == k else 2 if j in read else 1 if j < k else 0)
        title = title.get_text().split("\n")
        assert title[0] == f"predict #{k}"
        if k == 0:
            assert title[1] == "nothing known yet"
        else:
            assert title[1:] == [f"known {span(0, k - 1)}", f"reads {span(min(read), max(read))}"]
    return figure, result


@settings(max_examples=12, deadline=None)
@given(IMAGES, BLOCKS, MASKS, CHOICES, st.sampled_from(["wide", "narrow"]))
def test_figure_draws_the_masks_and_the_steps_the_words_describe(image, block, mask, choice, layout):
    check_figure(values_of(image, block, mask, choice), layout)


@pytest.mark.parametrize("values", [
    {}, {"height": 16, "width": 16, "row": 15, "col": 15, "block": 1, "mask": "local"},
    {"height": 2, "width": 2, "row": 0, "col": 0, "mask": "causal", "block": 256},
    {"height": 2, "width": 16, "row": 1, "col": 15, "block": 5},
    {"height": 16, "width": 2, "row": 8, "col": 0, "block": 3, "choice": "noise-to-image"},
])
def test_figure_at_the_extremes(values):
    check_figure(values)
    check_figure(values, "narrow")


def test_legend_names_only_what_the_figure_draws():
    figure, _ = check_figure({"block": 256})
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert not any("outside the local memory" in label or label.startswith("(b):") for label in labels)
    figure, _ = check_figure({})
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert "earlier, outside one layer's local memory" in labels and "(b): the query's local memory" in labels
    assert "(b): where its query block starts" in labels


# --- the student's answer ------------------------------------------------------------------------------


def test_no_answer_says_what_the_figure_shows():
    figure, _ = check_figure({})
    assert figure_texts(figure)[0] == "Next-pixel prediction: the image as one sequence of pixels in raster order."
    alt, caption = words(KIND, {})
    assert "Your answer" not in alt and "Your answer" not in caption


def test_the_right_answer_is_marked_right():
    figure, _ = check_figure({"choice": "next-pixel"})
    assert figure_texts(figure)[0].startswith("Your answer: next-pixel prediction ✓")
    alt, caption = words(KIND, {"choice": "next-pixel"})
    for text in (alt, caption):
        assert text.endswith("Your answer, next-pixel prediction, is right: both models treat the pixels as a "
                             "sequence and predict each one from the pixels before it.")


def test_the_noise_answer_is_marked_wrong_and_answered():
    for layout in ("wide", "narrow"):
        figure, _ = check_figure({"choice": "noise-to-image"}, layout)
        banner = figure_texts(figure)[0].replace("\n", " ")
        assert banner.startswith("Your answer: noise → image ✗") and "no noise input" in banner
        step0 = figure.axes[4].texts[0].get_text()
        assert step0 == "predict #0\nnothing known yet\n(no noise input)"
    alt, caption = words(KIND, {"choice": "noise-to-image"})
    for text in (alt, caption):
        assert "Your answer, a map from noise vectors to images, is wrong." in text
        assert "GAN" in text and "diffusion" in text and "no noise input" in text
        assert "sample it, and repeat, one pixel at a time" in text


def test_the_answer_page_passes_the_students_option():
    kind = get_kind(KIND)
    assert kind.choice_param == "choice"
    assert "choice" not in {control.name for control in kind.controls}
    assert kind.parse({"choice": "noise-to-image"}).choice == "noise-to-image"
    problems = check_visual(KIND, {"choice": "true"})
    assert len(problems) == 1 and problems[0][0] == ("params", "choice")


# --- layout: every text inside the figure, none over another ----------------------------------------------


@pytest.mark.parametrize("layout", ["wide", "narrow"])
@pytest.mark.parametrize("values", [
    {"choice": "noise-to-image"}, {"choice": "next-pixel"},
    {"height": 16, "width": 16, "row": 15, "col": 15, "block": 256, "choice": "noise-to-image"},
    {"height": 2, "width": 16, "row": 1, "col": 15, "block": 255, "mask": "causal"},
])
def test_texts_stay_inside_the_figure_and_apart(values, layout):
    kind = get_kind(KIND)
    params = kind.parse(values)
    result = kind.compute(params)
    inches = kind.figure_inches(params, layout)
    assert inches[0] == (NARROW_WIDTH if layout == "narrow" else 7.6)
    assert inches == figure_layout(params.height, params.width, params.choice, layout == "narrow").inches
    figure = kind.draw(params, result, inches)
    for scale in (2, 1):  # text is laid out a little wider or narrower at each pixel density
        figure.set_dpi(100 * scale)
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        page = figure.bbox
        boxes = [text.get_window_extent(renderer) for text in figure.texts]
        boxes += [ax.title.get_window_extent(renderer) for ax in figure.axes[:4]]
        boxes += [text.get_window_extent(renderer) for text in figure.axes[4].texts]  # the steps' titles
        boxes += [legend.get_window_extent(renderer) for legend in figure.legends]
        for box in boxes:  # at least 2 px (at 100 dpi) inside the edges
            margin = 2 * scale
            assert (page.x0 + margin <= box.x0 and box.x1 <= page.x1 - margin and page.y0 <= box.y0
                    and box.y1 <= page.y1), (box, page)
    frames = [ax.get_window_extent(renderer) for ax in figure.axes[:4]]
    frames += [image.get_window_extent(renderer) for image in grids(figure.axes[4])]  # the step panels
    for index, box in enumerate(boxes):
        for other in boxes[index + 1:] + frames:
            if other is not box:
                apart = min(min(box.x1, other.x1) - max(box.x0, other.x0), min(box.y1, other.y1) - max(box.y0, other.y0))
                assert apart <= 1, (box, other)


def test_text_in_the_phone_image_is_at_least_8_pt():
    kind = get_kind(KIND)
    params = kind.parse({"choice": "noise-to-image"})
    figure = kind.draw(params, kind.compute(params), kind.figure_inches(params, "narrow"))
    sizes = [text.get_fontsize() for text in figure.texts]
    for ax in figure.axes:
        sizes += [ax.title.get_fontsize(), ax.xaxis.label.get_fontsize(), ax.yaxis.label.get_fontsize()]
        sizes += [label.get_fontsize() for label in ax.get_xticklabels() + ax.get_yticklabels()]
        sizes += [text.get_fontsize() for text in ax.texts]
    sizes += [text.get_fontsize() for text in figure.legends[0].get_texts()]
    assert min(sizes) >= 8


# --- validation -----------------------------------------------------------------------------------------


def test_refuses_a_pixel_outside_the_image_and_unbounded_blocks():
    with pytest.raises(ValidationError) as error:
        get_kind(KIND).parse({"height": 4, "width": 4, "row": 3, "col": 5})
    sentence = "pixel (row 3, col 5) lies outside the 4 × 4 image: choose row from 0 to 3 and col from 0 to 3"
    assert sentence in str(error.value)
    problems = check_visual(KIND, {"height": 4, "row": 4})
    assert len(problems) == 1 and "lies outside the 4 × 6 image" in problems[0][1]
    assert check_visual(KIND, {"width": 17})[0][1] == "width must be at most 16, got 17"
    assert check_visual(KIND, {"block": 0})[0][1] == "block must be at least 1, got 0"
    assert check_visual(KIND, {"block": 257})[0][1] == "block must be at most 256, got 257"
    assert check_visual(KIND, {"mask": "global"})[0][0] == ("params", "mask")

