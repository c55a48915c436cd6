"""The "position-encoding" visual (Q7): one panel per property of the sinusoidal encoding, the student's ticks
marked: (a) relative, PE(p)·PE(q) depends only on q − p; (b) unique, no offset k ≥ 1 brings two positions
together; (c) any length, the same formula past the training length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pydantic import Field, model_validator

from app.engine import sinusoidal_positional_encoding

from .. import register
from ..base import AcrossFields, NARROW_WIDTH, WIDTH, Control, VisualKind, VisualParams, chosen, option_choice
from ..words import format_small, plural

# Q7's options (quizzes/attention-transformers.yaml), all three correct, and the panel that shows each.
PANELS = {"unique": "(b)", "relative": "(a)", "any-length": "(c)"}
OPTIONS = tuple(PANELS)

WAVE_ROWS = 4  # frequency pairs drawn in (c): the fastest, the slowest and two between
FINE_SAMPLES = 16  # samples per position for the curves of (c), so the fastest wave (period 2π) is smooth
SMOOTHED_LENGTH = 128  # above this many positions a cell of (a) is smaller than a pixel: the image filters it
DOTTED_LENGTH = 96  # up to this many positions (c) marks the engine's value at each whole position
NEAR_COLLISION = 0.1  # the closest pair is a near-collision below this fraction of the neighbours' distance


class PositionEncodingParams(VisualParams):
    length: int = Field(default=64, ge=2, le=512)
    d_model: int = Field(default=32, ge=2, le=256)
    train_length: int = Field(default=32, ge=1, le=512)
    choice: option_choice(OPTIONS) = ""  # the options the student ticked in Q7 ("" on a page without an answer)

    @model_validator(mode="after")
    def _consistent(self) -> PositionEncodingParams:
        if self.d_model % 2:
            raise AcrossFields(f"d_model must be even, got {self.d_model}: each frequency needs a sine and a cosine "
                               "column, which is what makes PE(p)·PE(p+k) depend only on k", "d_model")
        if self.train_length > self.length:
            raise AcrossFields(f"train_length ({self.train_length}) must be at most length ({self.length}): "
                               "lower the training length or show more positions", "train_length", "length")
        return self


@dataclass(frozen=True)
class Wave:  # one frequency pair i of (c): dimensions 2i (sine) and 2i+1 (cosine)
    pair: int
    period: float  # 2π / ω_i, in positions
    fine_sine: np.ndarray  # (samples,) sin(p ω_i) at the fine positions
    fine_cosine: np.ndarray  # (samples,) cos(p ω_i)


@dataclass(frozen=True)
class PositionEncodingResult:
    encoding: np.ndarray  # (length, d_model) from the engine
    similarity: np.ndarray  # (length, length) PE(p)·PE(q)
    relative_spread: float  # max |PE(p)·PE(q) − PE(0)·PE(|q − p|)| over all p, q
    offset_distance: np.ndarray  # (length,) ||PE(0) − PE(k)|| for k = 0..length-1
    distance_spread: float  # max | ||PE(p) − PE(q)|| − offset_distance[|q − p|] | over all p, q
    closest_offset: int  # the k >= 1 with the smallest distance: every pair k apart is that close
    min_distance: float  # offset_distance[closest_offset]
    near_collision: bool  # min_distance is under NEAR_COLLISION of the neighbours' distance
    waves: tuple[Wave, ...]
    fine_positions: np.ndarray  # (samples,) p from 0 to length - 1, FINE_SAMPLES per position
    train_length: int
    prefix_difference: float | None  # max |engine(train_length) − engine(length)[:train_length]|
    unseen_min_distance: float | None  # smallest distance from a position >= train_length to a trained one
    chosen: tuple[str, ...]  # the option ids the student ticked, in the options' order


def format_period(period: float) -> str:
    """6.283 -> "6.28", 58434.2 -> "58,434": positions per turn of a wave."""
    return f"{period:,.0f}" if period >= 1000 else f"{period:.3g}"


def choice_sentence(result: PositionEncodingResult) -> str:
    """What the student ticked and, since all three options are correct, which true ones they left out."""
    def listed(options):
        names = [f"'{option.replace('-', ' ')}' {PANELS[option]}" for option in options]
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

    missed = [option for option in OPTIONS if option not in result.chosen]
    if not result.chosen:
        return "All three properties hold."  # no answer to speak to (a tutorial page, a figure's own address)
    if not missed:
        return ("You ticked all three options, and each is correct: each panel shows one property holding "
                "for this encoding.")
    verb, shown = ("is", "its panel shows") if len(missed) == 1 else ("are", "their panels show")
    return (f"You ticked {listed(result.chosen)}; {listed(missed)} {verb} correct too, as {shown}: all three "
            "options are correct.")


@register
class PositionEncodingKind(VisualKind[PositionEncodingResult]):
    name = "position-encoding"
    title = "Sinusoidal positional encoding: unique, relative, any length"
    Params = PositionEncodingParams
    controls = (
        Control("length", "Positions shown", "int", min=2, max=512, step=1),
        Control("d_model", "Encoding width d_model (even)", "int", min=2, max=256, step=2),
        Control("train_length", "Training length (longest sequence seen in training)", "int",
                min=1, max=512, step=1, help="At most the number of positions shown."),
    )
    choice_param = "choice"
    learn = "/learn/position-encoding#sinusoidal"
    inches = (WIDTH, 6.7)
    narrow_inches = (NARROW_WIDTH, 10.3)

    def compute(self, params: PositionEncodingParams) -> PositionEncodingResult:
        encoding = sinusoidal_positional_encoding(params.length, params.d_model)  # (length, d_model)
        length, d_model = encoding.shape

        # (a) Relative: the Gram matrix, checked against its first row at the same offset |q − p|.
        similarity = encoding @ encoding.T  # (length, length)
        offsets = np.abs(np.subtract.outer(np.arange(length), np.arange(length)))  # (length, length) |q - p|
        relative_spread = float(np.max(np.abs(similarity - similarity[0][offsets])))

        # (b) Unique: ||PE(p) − PE(q)||² = |PE(p)|² + |PE(q)|² − 2 PE(p)·PE(q), clipped at 0 against rounding,
        # against the distances from position 0 taken directly.
        squared_norms = np.diag(similarity)
        distances = np.sqrt(np.clip(squared_norms[:, None] + squared_norms[None, :] - 2.0 * similarity, 0.0, None))
        offset_distance = np.sqrt(np.einsum("kd,kd->k", encoding - encoding[0], encoding - encoding[0]))  # (length,)
        distance_spread = float(np.max(np.abs(distances - offset_distance[offsets])))
        closest_offset = 1 + int(np.argmin(offset_distance[1:]))
        min_distance = float(offset_distance[closest_offset])

        # (c) Any length: ω_i = atan2(sin ω_i, cos ω_i) from the engine's row p = 1 (ω_i lies in (0, 1]), so the
        # curves between integer positions are the same formula and pass through the engine's values. The pairs
        # drawn: the fastest (0), the slowest (d/2 − 1) and evenly between.
        fine_positions = np.linspace(0.0, length - 1, FINE_SAMPLES * (length - 1) + 1)  # (samples,)
        waves = []
        for pair in dict.fromkeys(round(step * (d_model // 2 - 1) / (WAVE_ROWS - 1)) for step in range(WAVE_ROWS)):
            frequency = math.atan2(encoding[1, 2 * pair], encoding[1, 2 * pair + 1])
            angles = fine_positions * frequency
            waves.append(Wave(pair, 2 * math.pi / frequency, np.sin(angles), np.cos(angles)))

        train_length = params.train_length
        prefix_difference = unseen_min_distance = None
        if train_length < length:
            trained = sinusoidal_positional_encoding(train_length, d_model)  # the table a length-T run would use
            prefix_difference = float(np.max(np.abs(trained - encoding[:train_length])))
            unseen_min_distance = float(distances[train_length:, :train_length].min())  # (unseen, trained)

        return PositionEncodingResult(
            encoding=encoding, similarity=similarity, relative_spread=relative_spread, offset_distance=offset_distance,
            distance_spread=distance_spread, closest_offset=closest_offset, min_distance=min_distance,
            near_collision=bool(min_distance < NEAR_COLLISION * offset_distance[1]), waves=tuple(waves),
            fine_positions=fine_positions, train_length=train_length, prefix_difference=prefix_difference,
            unseen_min_distance=unseen_min_distance, chosen=chosen(params.choice),
        )

    def alt(self, params: PositionEncodingParams, result: PositionEncodingResult) -> str:
        length, d_model = result.encoding.shape
        train_length, k, closest = result.train_length, result.closest_offset, format_small(result.min_distance)

        def within(spread: float) -> str:  # how closely two computations agree
            return "exactly" if spread == 0 else f"to within {format_small(spread)}"

        alt = (
            f"Sinusoidal positional encoding for positions 0 to {length - 1} with d_model = {d_model}. "
            f"(a) Relative: the matrix of dot products PE(p)·PE(q) is constant along every diagonal: each entry "
            f"equals PE(0)·PE(|q − p|) {within(result.relative_spread)}, so it depends only on the offset, not on "
            f"the position; its diagonal is PE(p)·PE(p) = {format_small(result.similarity[0, 0])}. "
            f"(b) Unique: the distance ‖PE(p) − PE(p+k)‖ against the offset k, the same for every p "
            f"({within(result.distance_spread)}). "
        )
        if length == 2:  # (b)'s claim, honest about the closest pair at every width
            alt += (f"The only pair, positions 0 and 1, is {closest} apart, so the two positions have different "
                    "encodings")
        elif k == 1:
            distances = result.offset_distance
            alt += (f"The closest positions are neighbours (k = 1), {closest} apart; every larger offset is further "
                    f"apart, at least {format_small(distances[2:].min())}")
            steps = np.diff(distances[1:])  # steps[i]: from offset k = i + 1 to k = i + 2
            if steps.size and steps.min() < 0:  # the distance need not grow with k: say so, where it falls most
                j = int(steps.argmin()) + 1
                alt += (f", though the distance does not grow steadily with k: k = {j + 1} is "
                        f"{format_small(distances[j + 1])} apart, closer than k = {j} at {format_small(distances[j])}")
            alt += "; no distance for k ≥ 1 is 0, so no two positions share an encoding"
        else:
            turns = round(k / (2 * math.pi))  # whole turns of the fastest wave (ω_0 = 1, period 2π) nearest to k
            alt += (f"The closest positions are {k} apart (positions 0 and {k}, or any pair {k} apart): "
                    f"{closest}, closer than neighbours ({format_small(result.offset_distance[1])}), because {k} ≈ "
                    f"{turns} × 2π = {turns * 2 * math.pi:.2f} is nearly a whole number of turns of the fastest "
                    "wave. No distance for k ≥ 1 is 0, so no two positions share an encoding")
        if d_model == 2:
            alt += ("; with d_model = 2 the encoding is a single sine and cosine pair, a point going round a circle "
                    "every 2π ≈ 6.28 positions, and whole-numbered positions never land exactly on each other only "
                    "because 2π is irrational")
        if result.near_collision:
            alt += f"; at under a tenth of the neighbours' distance, positions 0 and {k} nearly collide"
        alt += ". "
        periods = [format_period(wave.period) for wave in result.waves]
        if len(result.waves) == 1:
            alt += (f"(c) Any length: the one sine and cosine pair, of period {periods[0]} positions, drawn from "
                    f"p = 0 to {length - 1}. ")
        else:
            alt += (f"(c) Any length: {len(result.waves)} of the sine and cosine pairs, drawn from p = 0 to "
                    f"{length - 1}; the waves slow down from dimension 0 to dimension {d_model - 1} (periods "
                    f"{', '.join(periods)} positions). ")
        if result.prefix_difference is not None:
            unseen = (f"position {train_length} is" if train_length == length - 1
                      else f"positions {train_length} to {length - 1} are")
            alt += (
                f"Past the training length {train_length}, {unseen} defined by the same formula: "
                + ("position 0 gets" if train_length == 1 else f"the first {train_length} positions get")
                + f" the same encoding whether the engine computes {train_length} "
                f"or {length} positions (difference {format_small(result.prefix_difference)}), and no position past "
                f"training comes closer than {format_small(result.unseen_min_distance)} to a trained one. "
            )
        else:
            alt += (f"{'Both' if length == 2 else f'All {length}'} positions lie within the training length "
                    f"{train_length}, so nothing lies beyond it here; lower the training length to see positions no "
                    "training sequence reached. ")
        return alt + choice_sentence(result)

    def caption(self, params: PositionEncodingParams, result: PositionEncodingResult) -> str:
        length, d_model = result.encoding.shape
        k = result.closest_offset
        dot = float(result.similarity[0, k])
        squared = result.min_distance ** 2
        # Enough decimals that d − 2·dot, worked out by hand from the printed dot, keeps 3 figures.
        decimals = max(4, math.ceil(-math.log10(squared * 1e-3)) if squared > 0 else 4)
        caption = (
            "PE[p, 2i] = sin(p·ω_i) and PE[p, 2i+1] = cos(p·ω_i) with ω_i = 10000^(−2i/d) (Vaswani et al. 2017, "
            "§3.5), computed by the engine. (a) Each sine has a cosine partner at the same frequency, so "
            "PE(p)·PE(q) = Σ_i cos((q − p)·ω_i): one value per offset, the same along each diagonal, and "
            f"PE(p)·PE(p) = d/2 = {format_small(result.similarity[0, 0])}. (b) ‖PE(p) − PE(q)‖² = d − "
            f"2·PE(p)·PE(q); for the closest offset k = {k}, PE(0)·PE({k}) = {dot:.{decimals}f}, so the distance "
            f"is √({d_model} − 2·{dot:.{decimals}f}) = √{format_small(squared)} = {format_small(result.min_distance)}. "
            "A collision would need every cos(k·ω_i) = 1, k a whole number of turns of every wave at once, which "
            "the fastest wave (ω_0 = 1, period 2π) never allows for a whole k ≥ 1, since π is irrational. "
            "(c) The curves are the formula at every p, "
            + ("the dots the engine's values at whole positions; " if length <= DOTTED_LENGTH
               else "passing through the engine's values at whole positions; ")
            + "nothing in it depends on the sequence length, so a position past the training length gets an "
            "encoding too, where a learned table of positions has no row."
        )
        if result.train_length < length:
            caption += (f" The dashed square in (a) holds the {plural(result.train_length, 'trained position')}; "
                        "the diagonals run on past it unchanged.")
        if length > SMOOTHED_LENGTH:
            caption += (f" With {length} positions a cell of (a) is smaller than a pixel: the image averages "
                        "neighbouring cells, so stripes finer than a pixel (the fastest wave turns every 6.28 "
                        "positions) fade to their mean.")
        return caption + (" " + choice_sentence(result) if result.chosen else "")

    def draw(self, params: PositionEncodingParams, result: PositionEncodingResult, inches):
        from app.plots.position_encoding import draw_position_encoding

        return draw_position_encoding(result, inches)
