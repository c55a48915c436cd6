"""Item-analysis statistics against hand-computed values and NumPy, plus the edges where none is reported."""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest

from app.instructor import stats

# Four students x three items (1 = right). Totals: 2, 1, 2, 3.
MATRIX = [
    [1, 1, 0],
    [1, 0, 0],
    [0, 1, 1],
    [1, 1, 1],
]
TOTALS = [sum(row) for row in MATRIX]


def _column(j):
    return [row[j] for row in MATRIX]


def test_point_biserial_matches_the_hand_computed_item_rest_correlation():
    # Item 0: x = (1, 1, 0, 1), rest = (1, 0, 2, 2). Deviations from the means 0.75 and 1.25 give
    # sum(dx*dr) = -0.75, sum(dx^2) = 0.75, sum(dr^2) = 2.75, so r = -0.75 / sqrt(0.75 * 2.75) = -sqrt(3/11).
    result = stats.point_biserial(_column(0), TOTALS, min_n=4)
    assert result.reason is None
    assert result.value == pytest.approx(-math.sqrt(3 / 11))


@pytest.mark.parametrize("item", [0, 1, 2])
def test_point_biserial_agrees_with_numpy_corrcoef_on_item_and_rest(item):
    x = np.array(_column(item), dtype=float)
    rest = np.array(TOTALS, dtype=float) - x
    expected = np.corrcoef(x, rest)[0, 1]
    assert stats.point_biserial(_column(item), TOTALS, min_n=4).value == pytest.approx(expected)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_point_biserial_with_partial_credit_agrees_with_numpy(seed):
    rng = np.random.default_rng(seed)
    scores = rng.choice([0.0, 0.5, 1.0], size=(12, 5))  # 12 students, 5 items, partial credit
    totals = scores.sum(axis=1)
    for j in range(5):
        expected = np.corrcoef(scores[:, j], totals - scores[:, j])[0, 1]
        got = stats.point_biserial(scores[:, j].tolist(), totals.tolist()).value
        assert got == pytest.approx(expected)


def test_point_biserial_is_not_reported_on_too_few_attempts():
    result = stats.point_biserial(_column(0), TOTALS)  # 4 < MIN_ATTEMPTS = 5
    assert result.value is None
    assert result.reason == "only 4 finished attempts answered it; at least 5 are needed"


def test_point_biserial_is_not_reported_when_everyone_scored_the_same_on_the_item():
    result = stats.point_biserial([1, 1, 1, 1, 1], [3, 2, 1, 2, 3])
    assert result.value is None
    assert "same score on it" in result.reason


def test_point_biserial_is_not_reported_when_the_rest_does_not_vary():
    result = stats.point_biserial([1, 0, 1, 0, 1], [3, 2, 3, 2, 3])  # rest is 2 for everyone
    assert result.value is None
    assert "other questions" in result.reason


def test_point_biserial_rejects_mismatched_lengths():
    with pytest.raises(ValueError):
        stats.point_biserial([1, 0], [1])


def test_upper_lower_difference_uses_the_top_and_bottom_27_percent():
    # n = 4: 27% of 4 = 1.08, so one student per group: the top total (student 3, total 3) and the
    # bottom (student 1, total 1).
    assert stats.group_size(4) == 1
    assert stats.upper_lower_difference(_column(0), TOTALS, min_n=4).value == pytest.approx(1 - 1)
    assert stats.upper_lower_difference(_column(1), TOTALS, min_n=4).value == pytest.approx(1 - 0)
    assert stats.upper_lower_difference(_column(2), TOTALS, min_n=4).value == pytest.approx(1 - 0)


def test_upper_lower_groups_round_half_up_and_average_each_group():
    assert [stats.group_size(n) for n in (5, 6, 10, 11)] == [1, 2, 3, 3]
    item = [1, 1, 0, 1, 0, 0, 1, 0, 0, 0]
    totals = [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]  # already ranked: top 3 and bottom 3
    # upper (1, 1, 0) mean 2/3; lower (0, 0, 0) mean 0
    assert stats.upper_lower_difference(item, totals).value == pytest.approx(2 / 3)


def test_students_tied_at_a_group_boundary_share_its_places_whatever_their_order():
    # Five students all at 2 of 4: each group is one place shared by all five, so D is 0 in any order.
    item = [1, 0, 0, 1, 0]
    assert stats.upper_lower_difference(item, [2] * 5).value == pytest.approx(0)
    assert stats.upper_lower_difference(item[::-1], [2] * 5).value == pytest.approx(0)
    # Ten students, groups of 3: totals 9 and 8 are in the top group; three tied at 7 share its last place.
    item = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    totals = [9, 8, 7, 7, 7, 5, 4, 3, 2, 0.1 + 0.2]
    upper = (1 + 1 + (1 + 0 + 0) / 3) / 3
    lower = (0 + 0 + 0) / 3
    assert stats.upper_lower_difference(item, totals).value == pytest.approx(upper - lower)
    order = [4, 3, 2, 1, 0, 9, 8, 7, 6, 5]
    assert stats.upper_lower_difference([item[i] for i in order], [totals[i] for i in order]).value == \
        pytest.approx(upper - lower)


def test_upper_lower_is_not_reported_without_spread_or_enough_attempts():
    assert stats.upper_lower_difference([1] * 6, [1, 2, 3, 4, 5, 6]).value is None
    assert stats.upper_lower_difference([1, 0], [1, 0]).reason.startswith("only 2 finished attempts")


def test_facility_and_full_credit():
    assert stats.mean([1, 0.5, 0, 1]) == pytest.approx(0.625)
    assert stats.full_credit_rate([1, 0.5, 0, 1]) == pytest.approx(0.5)
    assert stats.mean([]) is None and stats.full_credit_rate([]) is None


def test_histogram_bands_include_the_lower_edge_and_put_full_marks_in_the_last_band():
    fractions = [0.0, 0.05, 0.1, 2.7 / 9, 0.3, 0.99, 1.0]
    bins = stats.histogram(fractions, bins=10)
    assert [b.count for b in bins] == [2, 1, 0, 2, 0, 0, 0, 0, 0, 2]
    assert (bins[3].lower, bins[3].upper) == (pytest.approx(0.3), pytest.approx(0.4))
    assert sum(b.count for b in bins) == len(fractions)


def test_pick_counts_count_every_selected_id_and_set_aside_unknown_ones():
    counts, other = stats.pick_counts([["a"], ["a", "b"], ["c"], ["gone"]], ["a", "b", "c", "d"])
    assert counts == {"a": 2, "b": 1, "c": 1, "d": 0}
    assert list(counts) == ["a", "b", "c", "d"]
    assert other == 1


def test_most_common_keeps_first_seen_order_among_ties_and_sums_the_rest():
    shown, rest = stats.most_common(["8", "7", "8", "16", "7", "3"], limit=2)
    assert shown == [("8", 2), ("7", 2)]
    assert rest == 2


@pytest.mark.parametrize("facility, discrimination, responses, codes", [
    (0.25, 0.5, 20, ["hard"]),
    (0.95, 0.5, 20, ["easy"]),
    (0.6, 0.1, 20, ["weak-discrimination"]),
    (0.6, -0.3, 20, ["negative-discrimination"]),
    (0.95, 0.1, 20, ["easy", "weak-discrimination"]),
    (0.3, 0.2, 20, []),  # the thresholds themselves are fine
    (0.9, 0.2, 20, []),
    (0.0, None, 3, []),  # too few responses to judge facility
    (0.6, None, 20, []),
    (0.6, 0.196, 20, ["weak-discrimination"]),  # the exact value, not the "0.20" the table shows
    (0.6, -1.0, 19, []),  # shown, but too few students to act on a correlation
    (0.25, -1.0, 8, ["hard"]),
])
def test_item_flags_follow_the_standard_thresholds(facility, discrimination, responses, codes):
    flags = stats.item_flags(facility, discrimination, responses, sample=responses)
    assert [f.code for f in flags] == codes
    assert all(f.explanation for f in flags)


def test_the_report_counts_matrix_answers_as_values_and_cells_one_by_one():
    from app.bank.loader import load_bank_file
    from app.instructor.report import Response, answer_breakdown

    bank = load_bank_file(pathlib.Path(__file__).parent.parent / "quizzes" / "attention-practice.yaml",
                          "attention-practice.yaml").bank
    matrix, cells = bank.question("softmax-of-scores"), bank.question("causal-mask-query-4")
    key = matrix.answer
    given = [Response("a", matrix.id, key, 1.0), Response("b", matrix.id, key, 1.0),
             Response("c", matrix.id, [[1 / 3, 1 / 3, 1 / 3]], 0.0)]
    rows, other = answer_breakdown(matrix, given)
    assert [(row.label, row.correct, row.count) for row in rows][1] == ("[0.333333, 0.333333, 0.333333]", False, 1)
    assert rows[0].count == 2 and rows[0].correct and rows[0].label.startswith("[0.66") and other == 0
    picks = [Response("a", cells.id, [[0, 0], [0, 1], [0, 2], [0, 3]], 1.0),
             Response("b", cells.id, [[0, 0], [0, 4], [0, 5]], 0.0)]
    rows, other = answer_breakdown(cells, picks)
    counted = {row.label: (row.count, row.correct) for row in rows}
    assert counted == {"on → the (1)": (2, True), "on → cat": (1, True), "on → sat": (1, True), "on → on": (1, True),
                       "on → the (5)": (1, False), "on → mat": (1, False)} and other == 0
