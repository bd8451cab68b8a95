"""The alignment functions take int64 votes without copying them (session 14: the checked
``vote`` is the caller's array when it is int64 already, as ``pair`` and ``annotator``
were): the same results as from lists (always new arrays), and the caller's arrays left as
they were."""

from __future__ import annotations

import numpy as np

from ranking.alignment import alignment_report, human_difficulty_scale, vote_consensus
from tests.ranking.bits import bits


def test_int64_votes_only_read():
    rng = np.random.default_rng(7)
    n_q, n_a = 20, 30
    pairs = np.array([(i, (i + 1 + k) % n_q) for i in range(n_q) for k in range(4)])
    cells = [(p, a) for p in range(len(pairs)) for a in range(n_a) if rng.random() < 0.8]
    pair = np.array([c[0] for c in cells], dtype=np.int64)
    annotator = np.array([c[1] for c in cells], dtype=np.int64)
    latent = rng.normal(size=n_q)
    first = latent[pairs[pair, 0]] - latent[pairs[pair, 1]] + rng.logistic(size=pair.size) > 0
    vote = np.where(first, 1, 2).astype(np.int64)
    vote[rng.random(pair.size) < 0.1] = 0  # some skips
    difficulty = latent + rng.normal(scale=0.5, size=(3, n_q))
    arrays = (pair, annotator, vote)
    before = [x.tobytes() for x in arrays]
    calls = [
        lambda p, a, v: vote_consensus(p, a, v, n_pairs=len(pairs), n_annotators=n_a),
        lambda p, a, v: alignment_report(
            difficulty, pairs, p, a, v, n_annotators=n_a, n_boot=20, rng=1, resample="both"
        ),
        lambda p, a, v: human_difficulty_scale(
            pairs, p, a, v, difficulty=difficulty, n_annotators=n_a
        ),
    ]
    for call in calls:
        want = bits(call(*(x.tolist() for x in arrays)))
        assert bits(call(*arrays)) == want
        assert [x.tobytes() for x in arrays] == before
