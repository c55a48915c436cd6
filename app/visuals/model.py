"""The real pretrained model for the visuals and the bank: its cached runs, the sentence it accepts, each
head's computed character (previous/next token, [CLS], [SEP], entropy), and which tokens its font can show.

The characters are defined once here, for the model-heads and model-overview kinds and the bank's keys.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import AfterValidator, Field

from app.engine.pretrained import MAX_TOKENS, load_model  # noqa: F401 (MAX_TOKENS: for the kinds' controls)
from app.visuals.glyphs import drawable, font_sentence, missing_glyphs  # noqa: F401 (the kinds import them here)

NUM_LAYERS, NUM_HEADS = 6, 12  # all-MiniLM-L6-v2 (a test checks them against model.config)
SENTENCE_MAX_LENGTH = 400  # characters; the model's own bound is MAX_TOKENS tokens after WordPiece
DEFAULT_SENTENCE = "the cat sat on the mat because it was tired"
# A head is "focused" when its rows' mean entropy is below 1 nat: a row's weight acts as if it were spread
# evenly over fewer than e ≈ 2.7 keys. Otherwise it is "broad".
FOCUSED_BELOW = 1.0
SHARE_MARK = 0.5  # a head "is" a previous-token ([CLS], ...) head when at least half its weight goes there
TIE = 0.005  # a key's values closer than this (half a unit of the 2 decimals shown) are a tie, which it refuses
MIN_TOKENS = 4  # [CLS], two of the sentence's own tokens and [SEP]: one pair of neighbours to measure

CHARACTERS = ("previous", "next", "cls", "sep")
CHARACTER_WORDS = {"previous": "the previous token", "next": "the next token", "cls": "[CLS]", "sep": "[SEP]"}
CHARACTER_LETTERS = {"previous": "P", "next": "N", "cls": "C", "sep": "S", "broad": "b"}


def fits_the_model(text: str) -> str:
    encoding = load_model().tokenize(text)  # a ValueError with a sentence: too many tokens, control characters, ...
    if len(encoding.ids) < MIN_TOKENS:
        raise ValueError(f"the sentence is one token long after WordPiece ('{encoding.tokens[1]}'), and a head's "
                         "previous- and next-token shares are measured between the sentence's own tokens: "
                         "type at least two words")
    return text


# A sentence for the real model: MIN_TOKENS to MAX_TOKENS WordPiece tokens, [CLS] and [SEP] included.
ModelSentence = Annotated[str, Field(min_length=1, max_length=SENTENCE_MAX_LENGTH), AfterValidator(fits_the_model)]


@functools.lru_cache(maxsize=16)
def run(sentence: str):
    """The model's run on `sentence` (tokens, attentions (L, H, N, N), ...), cached: a page sizes, describes and
    draws it, and a bank's keys ask again. 16 runs: a 64-token run holds 2 MB (attentions and hidden states)."""
    return load_model().run(sentence)


@dataclass(frozen=True)
class HeadCharacters:
    """Per head (layer, head), 0-based: where its weight goes on average over its rows (queries)."""

    # Neighbours are the sentence's own tokens (1..N-2): [CLS] and [SEP] have shares of their own, and counting
    # query 1 → key 0 as "previous" too would call a head that parks its weight on [CLS] a previous-token head.
    previous: np.ndarray  # (L, H) mean weight of query i on key i - 1, over queries 2..N-2
    next: np.ndarray  # (L, H) mean weight of query i on key i + 1, over queries 1..N-3
    cls: np.ndarray  # (L, H) mean weight on [CLS] (key 0), over all queries
    sep: np.ndarray  # (L, H) mean weight on [SEP] (key N-1), over all queries
    entropy: np.ndarray  # (L, H) mean over queries of -Σ_k a_k ln a_k, in nats
    uniform_entropy: float  # ln N: the entropy of a row spread evenly over all N keys

    def share(self, character: str) -> np.ndarray:
        return getattr(self, character)

    def focused(self, layer: int, head: int) -> bool:
        return bool(self.entropy[layer, head] < FOCUSED_BELOW)

    def label(self, layer: int, head: int) -> str | None:
        """The head's dominant character: the largest share if at least SHARE_MARK, else "broad" or None."""
        shares = {character: float(self.share(character)[layer, head]) for character in CHARACTERS}
        best = max(shares, key=shares.get)
        if shares[best] >= SHARE_MARK:
            return best
        return None if self.focused(layer, head) else "broad"


def head_characters(attentions: np.ndarray) -> HeadCharacters:
    """The characters of every head of `attentions` (L, H, N, N), rows queries, columns keys, N ≥ MIN_TOKENS."""
    weights = np.asarray(attentions, dtype=np.float64)
    n = weights.shape[-1]
    assert n >= MIN_TOKENS, f"{n} tokens: a head's neighbour shares need two between [CLS] and [SEP]"
    diagonal_below = np.diagonal(weights, offset=-1, axis1=2, axis2=3)  # (L, H, N-1): a[j+1, j]
    diagonal_above = np.diagonal(weights, offset=1, axis1=2, axis2=3)  # (L, H, N-1): a[j, j+1]
    logs = np.log(np.where(weights > 0, weights, 1.0))  # 0 · ln 0 = 0
    # j = 1..N-3 in both: a[i, i-1] for queries i = 2..N-2, and a[i, i+1] for queries i = 1..N-3.
    return HeadCharacters(previous=diagonal_below[..., 1:n - 2].mean(axis=-1),
                          next=diagonal_above[..., 1:n - 2].mean(axis=-1),
                          cls=weights[..., 0].mean(axis=-1), sep=weights[..., n - 1].mean(axis=-1),
                          entropy=-(weights * logs).sum(axis=-1).mean(axis=-1), uniform_entropy=float(np.log(n)))


@functools.lru_cache(maxsize=16)
def characters(sentence: str) -> HeadCharacters:
    """The characters of every head on `sentence`, cached beside its run: a real-model answer page asks for them
    about five times (its key, its explanation, its visual), and each computation took 1 ms (measured)."""
    found = head_characters(run(sentence).attentions)
    for values in (found.previous, found.next, found.cls, found.sep, found.entropy):
        values.setflags(write=False)  # shared by every reader of the cache
    return found


def _tops(values: np.ndarray, within: float | None) -> np.ndarray:
    """Where `values` is the largest: shown the same to 2 decimals as the largest (the words' ties), or within
    `within` of it (a key's, which must not hang on rounding: see _only)."""
    best = float(values.max())
    if within is not None:
        return values >= best - within
    return np.vectorize(lambda value: f"{value:.2f}")(values) == f"{best:.2f}"


def top_heads(values: np.ndarray, layer: int | None = None, within: float | None = None) -> list[tuple[int, int]]:
    """The (layer, head) pairs, 0-based, whose value is the largest (ties: see _tops), of one layer or of all."""
    grid = values if layer is None else values[layer: layer + 1]
    offset = 0 if layer is None else layer
    return [(int(i) + offset, int(j)) for i, j in np.argwhere(_tops(grid, within))]


def top_keys(row: np.ndarray, within: float | None = None) -> list[int]:
    """The keys a query's row of weights puts the most on, ties (see _tops) included, in order."""
    return [int(k) for k in np.flatnonzero(_tops(row, within))]


def beside(value: float, mark: float) -> str:
    """`value` with 2 decimals, or with as many more as keep it on its side of `mark`, a bound the words compare
    it with: an entropy of 0.997 nats, focused (below 1), is "0.997", not "1.00"; a share of 0.4991, short of
    a letter's 0.5, is "0.499"."""
    return next(text for decimals in range(2, 17)
                if ((float(text := f"{value:.{decimals}f}") < mark) == (value < mark)) or decimals == 16)


def letters_sentence(shown: str) -> str:
    """What a map's letter means, for the figures that title each head's map with it (`shown`: what follows the
    letter, e.g. " (with that share)")."""
    return (f"A map's letter names the place that gets the largest mean weight, when it gets at least {SHARE_MARK:g}: "
            f"P the previous token, N the next, C [CLS], S [SEP]{shown}; b a broad head with no such place; no letter "
            "a focused head with no such place.")


def head_name(layer: int, head: int) -> str:
    """1-based, as the controls count: 'layer 1 head 3'."""
    return f"layer {layer + 1} head {head + 1}"


# --- computed answer keys for the bank (app.bank.expressions), layers and heads 1-based -----------------

def _characters_of(sentence) -> HeadCharacters:
    if not isinstance(sentence, str):
        raise ValueError(f"the sentence must be text, got {sentence!r}")
    return characters(fits_the_model(sentence))  # a one-token sentence: a ValueError, as on a visual


def _index(value, count: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or not 1 <= value <= count:
        raise ValueError(f"{what} must be a whole number from 1 to {count}, got {value!r}")
    return int(value) - 1


def _only(indices: list, what: str, base: int) -> int:
    """The one index (counted from `base`), or an error naming the tie: a key must not depend on rounding."""
    if len(indices) > 1:
        raise ValueError(f"{what} is a tie ({', '.join(str(i + base) for i in indices)}): choose another sentence")
    return indices[0] + base


def strongest_head(sentence, layer, character: str) -> int:
    """The head (1-based) of `layer` whose mean weight on `character` is the largest; a tie is an error."""
    values = _characters_of(sentence).share(character)
    return _only([head for _, head in top_heads(values, _index(layer, NUM_LAYERS, "layer"), within=TIE)],
                 "the strongest head", 1)


def share(sentence, layer, head, character: str) -> float:
    return float(_characters_of(sentence).share(character)[_index(layer, NUM_LAYERS, "layer"),
                                                            _index(head, NUM_HEADS, "head")])


def is_focused(sentence, layer, head) -> bool:
    return _characters_of(sentence).focused(_index(layer, NUM_LAYERS, "layer"), _index(head, NUM_HEADS, "head"))


def heads_on(sentence, layer, character: str) -> int:
    """How many heads of `layer` put on average at least SHARE_MARK of their weight on `character`."""
    return int((_characters_of(sentence).share(character)[_index(layer, NUM_LAYERS, "layer")] >= SHARE_MARK).sum())


def strongest_key(sentence, layer, head, position) -> int:
    """The key position ([CLS] is 0) the query at `position` puts the most weight on; a tie is an error."""
    token_count(sentence)  # the sentence is text
    attentions = run(sentence).attentions
    n = attentions.shape[-1]
    if isinstance(position, bool) or not isinstance(position, (int, float)) or position != int(position) \
            or not 0 <= position < n:
        raise ValueError(f"position must be a whole number from 0 to {n - 1} (the sentence has {n} tokens), "
                         f"got {position!r}")
    row = attentions[_index(layer, NUM_LAYERS, "layer"), _index(head, NUM_HEADS, "head"), int(position)]
    return _only(top_keys(row, within=TIE), "the strongest key", 0)


def token_count(sentence) -> int:
    if not isinstance(sentence, str):
        raise ValueError(f"the sentence must be text, got {sentence!r}")
    return len(run(sentence).tokens)
