"""Deterministic toy word embeddings with readable features, and attention built on top of them.

A small lexicon gives each known word interpretable features; unknown words get stable hashed ones.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.engine import MultiHeadAttention
from app.engine.heads import check_head_split
from app.visuals.glyphs import missing_glyphs, named

MAX_TOKENS = 12

# Feature columns, from the most general (parts of speech) to the most specific, so that an
# embedding narrower than the feature list keeps the general ones (see `embed`).
FEATURE_NAMES: tuple[str, ...] = (
    "noun", "verb", "determiner", "adjective", "preposition", "pronoun",
    "animate", "animal", "person", "vehicle", "place", "nature",
    "young", "female", "royal",
    "cat+/dog−",  # signed: +1 for the cat family, −1 for the dog family, so kitten is nearest cat
)
FEATURE_COUNT = len(FEATURE_NAMES)
FEATURE_INDEX = {name: index for index, name in enumerate(FEATURE_NAMES)}

# word -> (category, semantic tags); "connective" words carry no features at all.
_LEXICON_SPEC: dict[str, tuple[str, tuple[str, ...]]] = {
    **{word: ("determiner", ()) for word in ("the", "a", "an", "this", "that", "every", "some")},
    "cat": ("noun", ("animate", "animal", "cat")),
    "kitten": ("noun", ("animate", "animal", "young", "cat")),
    "dog": ("noun", ("animate", "animal", "dog")),
    "puppy": ("noun", ("animate", "animal", "young", "dog")),
    **{word: ("noun", ("animate", "animal")) for word in ("bird", "fish", "horse")},
    "man": ("noun", ("animate", "person")),
    "woman": ("noun", ("animate", "person", "female")),
    "boy": ("noun", ("animate", "person", "young")),
    "girl": ("noun", ("animate", "person", "young", "female")),
    "king": ("noun", ("animate", "person", "royal")),
    "queen": ("noun", ("animate", "person", "royal", "female")),
    "student": ("noun", ("animate", "person")),
    "teacher": ("noun", ("animate", "person")),
    **{word: ("noun", ("vehicle",)) for word in ("car", "truck", "bus", "bike", "train")},
    **{word: ("noun", ()) for word in ("mat", "book", "ball", "food")},
    **{word: ("noun", ("place",)) for word in ("house", "bank", "school", "city")},
    "park": ("noun", ("place", "nature")),
    "river": ("noun", ("place", "nature")),
    **{word: ("noun", ("nature",)) for word in ("tree", "sky", "sun", "grass")},
    **{
        word: ("verb", ())
        for word in ("sat", "ran", "chased", "saw", "ate", "read", "is", "was", "sleeps",
                     "jumped", "likes", "flew", "drove", "barked", "sang")
    },
    **{word: ("adjective", ()) for word in ("big", "small", "red", "happy", "old", "quick", "lazy", "brown")},
    "young": ("adjective", ("young",)),
    **{word: ("preposition", ()) for word in ("on", "in", "over", "under", "with", "near", "at", "to", "by")},
    "he": ("pronoun", ("animate", "person")),
    "him": ("pronoun", ("animate", "person")),
    "she": ("pronoun", ("animate", "person", "female")),
    "her": ("pronoun", ("animate", "person", "female")),
    "they": ("pronoun", ("animate",)),
    **{word: ("pronoun", ()) for word in ("it", "i", "you")},
    **{word: ("connective", ()) for word in ("and", "while", "but", "because")},
}


@dataclass(frozen=True)
class WordInfo:
    """A word's toy features: `category` is a part of speech, "connective", or "unknown"."""

    word: str
    category: str
    features: np.ndarray  # (FEATURE_COUNT,), read-only

    @property
    def known(self) -> bool:
        return self.category != "unknown"


def _features_from_spec(category: str, tags: tuple[str, ...]) -> np.ndarray:
    features = np.zeros(FEATURE_COUNT)
    if category in FEATURE_INDEX:
        features[FEATURE_INDEX[category]] = 1.0
    for tag in tags:
        if tag == "cat":
            features[FEATURE_INDEX["cat+/dog−"]] = 1.0
        elif tag == "dog":
            features[FEATURE_INDEX["cat+/dog−"]] = -1.0
        else:
            features[FEATURE_INDEX[tag]] = 1.0
    features.setflags(write=False)
    return features


LEXICON: dict[str, WordInfo] = {
    word: WordInfo(word, category, _features_from_spec(category, tags))
    for word, (category, tags) in _LEXICON_SPEC.items()
}

# Letters and digits in any script, with an inner apostrophe kept ("don't"); everything else splits.
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def tokenize(text: str, max_tokens: int = MAX_TOKENS, *, min_tokens: int = 1, name: str = "the sentence",
             drawn: bool = True) -> list[str]:
    """Lowercase words of `text`, punctuation dropped.

    A ValueError naming `name` when there are fewer than `min_tokens` (at least one) or more
    than `max_tokens` words, or (`drawn`: the words are the figure's labels) a character the figures' font cannot
    draw.
    """
    tokens = _WORD.findall(text.lower())
    if len(tokens) < max(min_tokens, 1):
        raise ValueError(
            f"{name} has {len(tokens)} word{'s' if len(tokens) != 1 else ''}; "
            f"type at least {max(min_tokens, 1)} (letters or digits, separated by spaces)"
        )
    if len(tokens) > max_tokens:
        raise ValueError(
            f"{name} has {len(tokens)} words; use at most {max_tokens} so the picture stays readable"
        )
    missing = missing_glyphs("".join(tokens)) if drawn else []
    if missing:  # the figure would draw an empty box for each, under a label the alt text calls a word
        raise ValueError(
            f"{name} holds {named(missing[:5])}, which the figures' font cannot draw; the toy's words are drawn as labels, so "
            "use Latin, Greek or Cyrillic letters (the real-model visuals on /learn take any script)"
        )
    return tokens


def _hashed_features(word: str) -> np.ndarray:
    """Stable pseudo-random features in [0, 1) for an unknown word.

    Seeded from BLAKE2b of the word, not Python's hash(), which is salted per process; NumPy's
    PCG64 stream for a given seed is fixed, so every process and machine gets the same vector.
    """
    seed = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")
    features = np.random.default_rng(seed).random(FEATURE_COUNT)
    features.setflags(write=False)
    return features


def lookup(word: str) -> WordInfo:
    """The lexicon entry for `word` (lowercased), or hashed features marked "unknown"."""
    word = word.lower()
    info = LEXICON.get(word)
    if info is not None:
        return info
    return WordInfo(word, "unknown", _hashed_features(word))


def unknown_words(tokens: Sequence[str]) -> list[str]:
    """The distinct tokens not in the lexicon, in order of first appearance."""
    return list(dict.fromkeys(token for token in tokens if not lookup(token).known))


def column_names(d_model: int) -> tuple[str, ...]:
    """Names of the columns `embed` returns: the first features, then zero padding ("dim 17", ...)."""
    return FEATURE_NAMES[:d_model] + tuple(f"dim {i + 1}" for i in range(FEATURE_COUNT, d_model))


def embed(tokens: Sequence[str], d_model: int) -> np.ndarray:
    """(N, d_model) toy embeddings: row i holds token i's features.

    d_model >= FEATURE_COUNT: all features, then zero columns. d_model < FEATURE_COUNT: the
    first d_model features (an orthogonal projection that keeps the most general ones, so the
    columns stay nameable; e.g. at d_model=6 only the parts of speech remain).
    """
    if isinstance(d_model, bool) or not isinstance(d_model, (int, np.integer)) or d_model < 1:
        raise ValueError(f"d_model must be a whole number >= 1, got {d_model!r}")
    features = np.array([lookup(token).features for token in tokens]).reshape(len(tokens), FEATURE_COUNT)
    x = np.zeros((len(tokens), d_model))  # (N, d_model)
    kept = min(d_model, FEATURE_COUNT)
    x[:, :kept] = features[:, :kept]
    return x


@dataclass(frozen=True)
class Projections:
    """Q = X·W_Q, K = X·W_K, V = X·W_V for a single head with d_k-wide queries, keys and values."""

    w_q: np.ndarray  # (d_model, d_k)
    w_k: np.ndarray  # (d_model, d_k)
    w_v: np.ndarray  # (d_model, d_k)
    q: np.ndarray  # (N, d_k)
    k: np.ndarray  # (N, d_k)
    v: np.ndarray  # (N, d_k)


def project_qkv(x: np.ndarray, d_k: int, seed: int = 0) -> Projections:
    """Project x (N, d_model) to queries, keys and values with seeded (d_model, d_k) weights.

    Each weight is Xavier/Glorot-uniform, bound sqrt(6 / (d_model + d_k)), the initialisation
    torch uses for attention projections; biases are left out so Q = X·W_Q exactly.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must have shape (N, d_model), got shape {x.shape}")
    if isinstance(d_k, bool) or not isinstance(d_k, (int, np.integer)) or d_k < 1:
        raise ValueError(f"d_k must be a whole number >= 1, got {d_k!r}")
    d_model = x.shape[1]
    rng = np.random.default_rng(seed)
    bound = math.sqrt(6.0 / (d_model + d_k))
    w_q, w_k, w_v = rng.uniform(-bound, bound, size=(3, d_model, d_k))  # each (d_model, d_k)
    return Projections(w_q=w_q, w_k=w_k, w_v=w_v, q=x @ w_q, k=x @ w_k, v=x @ w_v)


# The roles of the constructed heads, by head index.
NOUN_HEAD = 0
VERB_HEAD = 1
HEAD_ROLES = {NOUN_HEAD: "noun", VERB_HEAD: "verb"}
RANDOM_WEIGHT_STD = 0.6  # a token has about 3 active features, so random scores have std ≈ 3·0.6² ≈ 1


def constructed_multi_head(
    d_model: int, num_heads: int, seed: int = 0, strength: float = 4.0
) -> MultiHeadAttention:
    """Multi-head attention with hand-set heads: head 0 relates nouns to nouns, head 1 verbs to verbs.

    Head 0's query and key both read only the "noun" feature, in the head's first column, each
    scaled by g = sqrt(strength · sqrt(d_k)); so a noun query scores g·g/sqrt(d_k) = strength
    against a noun key and 0 against any other, and a non-noun query scores every key 0 (it
    spreads its weight evenly). Head 1 does the same with the "verb" feature. Further heads,
    and all value and output weights, are seeded random N(0, RANDOM_WEIGHT_STD²). This is a
    constructed illustration of "two simpler subspaces", not a trained model.
    """
    head_dim = check_head_split(d_model, num_heads)
    rng = np.random.default_rng(seed)
    w_q, w_k, w_v, w_o = rng.normal(0.0, RANDOM_WEIGHT_STD, size=(4, d_model, d_model))
    gain = math.sqrt(strength * math.sqrt(head_dim))
    for head, role in HEAD_ROLES.items():
        if head >= num_heads:
            break
        columns = slice(head * head_dim, (head + 1) * head_dim)
        feature = FEATURE_INDEX[role]  # < 2 <= d_model, so always present in the embedding
        for weight in (w_q, w_k):
            weight[:, columns] = 0.0
            weight[feature, head * head_dim] = gain
    return MultiHeadAttention(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, num_heads=num_heads)


# --- The subject/object model of the "multi-head" visual ------------------------------------------
#
# One query, two relations: the verb must find its subject (a noun or pronoun before it) and its
# object (one after it). The input is the toy features plus one signed position column, as if an
# earlier layer had marked which side of the verb each word stands on.

SIDE_COLUMN = "side of the verb"  # the input's last column: −1 before the first verb, +1 after, 0 on it
ARGUMENT_CATEGORIES = ("noun", "pronoun")  # the parts of speech a subject or an object can have
ROLE_STRENGTH = 4.0  # score units a feature adds (after the 1/sqrt(d_k) scaling); see relation_heads


def first_verb(tokens: Sequence[str]) -> int | None:
    """Index of the first token the lexicon calls a verb, or None (unknown words are never verbs)."""
    return next((i for i, token in enumerate(tokens) if lookup(token).category == "verb"), None)


def subject_object_inputs(tokens: Sequence[str], d_model: int) -> np.ndarray:
    """(N, d_model): embed(tokens, d_model - 1), then the SIDE_COLUMN (all 0 without a verb)."""
    if isinstance(d_model, bool) or not isinstance(d_model, (int, np.integer)) or d_model < 2:
        raise ValueError(f"d_model must be a whole number >= 2 (features and a side column), got {d_model!r}")
    verb = first_verb(tokens)
    positions = np.arange(len(tokens))
    side = np.zeros(len(tokens)) if verb is None else np.sign(positions - verb)  # (N,)
    return np.column_stack([embed(tokens, d_model - 1), side])  # (N, d_model)


def _score_gain(strength: float, head_dim: int) -> float:
    # q·k / sqrt(d_k) = g·g / sqrt(d_k) = strength when q and k each read one feature with weight g.
    return math.sqrt(strength * math.sqrt(head_dim))


def _value_columns(d_model: int, width: int) -> list[int]:
    """The input columns a head's `width`-wide value copies: the most specific toy features kept."""
    kept = min(d_model - 1, FEATURE_COUNT)  # feature columns of subject_object_inputs
    return list(range(max(kept - width, 0), kept))


def relation_heads(d_model: int, num_heads: int, strength: float = ROLE_STRENGTH) -> MultiHeadAttention:
    """num_heads heads of width d_k = d_model / num_heads; head 1 finds the verb's subject, head 2 its object.

    In column 0 of each relation head the query reads the "verb" feature and the key reads
    noun + pronoun ∓ side, each with gain g (see _score_gain), so the verb scores a word
    strength · (noun + pronoun − side) in head 1: a noun before the verb 2·strength, another
    word before it strength, a noun after it 0, another word after it −strength (head 2: + side,
    the mirror image). Any other query reads nothing and spreads its weight evenly. Each relation
    head's value copies the d_k most specific features its word has; further heads are idle (all
    zero weights). W_O is the identity, so the output is the heads' concatenation. Constructed by
    hand for the visual, not trained.
    """
    head_dim = check_head_split(d_model, num_heads)
    if num_heads < 2:
        raise ValueError(f"relation_heads needs num_heads >= 2 (a subject head and an object head), got {num_heads}")
    gain = _score_gain(strength, head_dim)
    w_q, w_k, w_v = np.zeros((3, d_model, d_model))
    side = d_model - 1
    for head, sign in ((0, -1.0), (1, 1.0)):
        column = head * head_dim  # the head's first query/key column
        w_q[FEATURE_INDEX["verb"], column] = gain
        for category in ARGUMENT_CATEGORIES:
            if FEATURE_INDEX[category] < d_model - 1:  # narrow inputs drop "pronoun"
                w_k[FEATURE_INDEX[category], column] = gain
        w_k[side, column] = sign * gain
        for offset, feature in enumerate(_value_columns(d_model, head_dim)):
            w_v[feature, column + offset] = 1.0
    return MultiHeadAttention(w_q=w_q, w_k=w_k, w_v=w_v, w_o=np.eye(d_model), num_heads=num_heads)


def one_head_for_both(d_model: int, strength: float = ROLE_STRENGTH) -> MultiHeadAttention:
    """The best single head of width d_model for "find the subject and the object".

    The verb's query reads "verb" and every key noun + pronoun (gain g, as in relation_heads),
    so the verb scores the subject and the object the same, strength, and every other word 0: as
    close to half its weight on each as one softmax row gets (even split is the best a single row
    can do for both; more weight on one is less on the other). The value is the whole input row
    (W_V = W_O = identity). Constructed by hand for the visual, not trained.
    """
    gain = _score_gain(strength, d_model)
    w_q, w_k = np.zeros((2, d_model, d_model))
    w_q[FEATURE_INDEX["verb"], 0] = gain
    for category in ARGUMENT_CATEGORIES:
        if FEATURE_INDEX[category] < d_model - 1:
            w_k[FEATURE_INDEX[category], 0] = gain
    identity = np.eye(d_model)
    return MultiHeadAttention(w_q=w_q, w_k=w_k, w_v=identity, w_o=identity, num_heads=1)


def averaging_self_attention(d_model: int, seed: int = 0, score_std: float = 1.0) -> MultiHeadAttention:
    """One-head self-attention whose output rows are weighted averages of its input rows.

    W_Q and W_K are seeded random N(0, score_std²), so queries prefer different keys; W_V and
    W_O are the identity, so output row i = sum_j weight_ij · x_j is readable in the input's
    own feature columns. A constructed illustration, not a trained model.
    """
    rng = np.random.default_rng(seed)
    w_q, w_k = rng.normal(0.0, score_std, size=(2, d_model, d_model))
    identity = np.eye(d_model)
    return MultiHeadAttention(w_q=w_q, w_k=w_k, w_v=identity, w_o=identity, num_heads=1)

