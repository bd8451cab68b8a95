"""Every verdict reason reads as a sentence with its evidence
(``annotate.views.describe_reason``): the text ``annotate rate``, the monitor and
``report.md`` print for a flag."""

from __future__ import annotations

import pytest

from annotate.views import describe_reason


@pytest.mark.parametrize(
    ("reason", "statistic", "threshold", "p_value", "text"),
    [
        (
            "position_bias",
            1.0,
            None,
            0.0004,
            "position_bias: 100% of decisive votes for the left side (vs 50%, adjusted p = 0.0004)",
        ),
        (
            "too_fast",
            0.9,
            0.2,
            0.001,
            "too_fast: 90% fast votes (threshold 20%, adjusted p = 0.001)",
        ),
        (
            "low_agreement",
            0.2,
            0.5,
            0.01,
            "low_agreement: 20% agreement with the majority (chance 50%, adjusted p = 0.01)",
        ),
        ("random", None, None, None, "random: every vote is a tie"),
        (
            "adversarial",
            -0.8,
            0.0,
            0.002,
            "adversarial: ability -0.8 (threshold 0, adjusted p = 0.002)",
        ),
        (
            "low_gold_accuracy",
            0.3,
            0.7,
            0.004,
            "low_gold_accuracy: 30% of gold items right (threshold 70%, adjusted p = 0.004)",
        ),
        (
            "inconsistent",
            0.45,
            0.7,
            0.04,
            "inconsistent: 45% of swapped re-tests agree with the first vote "
            "(threshold 70%, adjusted p = 0.04)",
        ),
    ],
)
def test_each_reason_names_its_evidence(
    reason: str, statistic: float | None, threshold: float | None, p_value: float | None, text: str
) -> None:
    d = {"reason": reason, "statistic": statistic, "threshold": threshold, "p_value": p_value}
    assert describe_reason(d) == text
