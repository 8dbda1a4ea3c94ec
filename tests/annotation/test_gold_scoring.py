"""The one comparison of a gold answer with its reference, part by part, and the Wilson interval (pure functions:
no database)."""

from __future__ import annotations

import math

import pytest

from annotation.quality.scoring import GoldAnswer, Screen, compare, difference_words, point_distance, wilson_interval

REFERENCE = GoldAnswer(
    verdict="error",
    tau=3,
    error_category="wrong element",
    corrected_action="click(start_box='(300,260)')",
    target_box=(280, 240, 340, 280),
    reflection_action="hotkey(key='alt left')",
)
SCREEN = Screen(convention="relative-1000")


def _answer(**changes) -> GoldAnswer:
    return GoldAnswer(**{**REFERENCE.as_dict(), **changes})


def test_the_reference_itself_is_right_in_every_part():
    result = compare(_answer(), REFERENCE, screen=SCREEN, tolerance=0.05)
    assert result.correct and not result.differences
    assert result.parts == {
        "verdict": True,
        "tau_exact": True,
        "tau_within_one": True,
        "category": True,
        "action_type": True,
        "point": True,
        "reflection": True,
    }
    assert result.in_box is True and result.distance == 0


def test_tau_one_step_off_is_within_one_but_not_exact_and_the_correction_is_not_judged_on_another_screen():
    result = compare(_answer(tau=4), REFERENCE, screen=SCREEN, tolerance=0.05)
    assert result.parts["tau_exact"] is False and result.parts["tau_within_one"] is True
    assert result.parts["action_type"] is False and result.parts["point"] is False  # placed on o_4, not o_3
    assert not result.correct
    assert [d["part"] for d in result.differences] == ["tau_exact"]
    assert "You marked step 4; the reference step 3 (1 step off)." in result.differences[0]["words"]


def test_tau_two_steps_off_is_wrong_both_ways():
    result = compare(_answer(tau=5), REFERENCE, screen=SCREEN, tolerance=0.05)
    assert result.parts["tau_exact"] is False and result.parts["tau_within_one"] is False
    assert "2 steps off" in result.differences[0]["words"]


def test_a_no_error_answer_to_an_error_reference_misses_every_part_that_applies():
    result = compare(GoldAnswer(verdict="no_error"), REFERENCE, screen=SCREEN, tolerance=0.05)
    assert not result.correct
    assert result.parts == dict.fromkeys(result.parts, False)
    assert result.differences[0]["words"] == "You said no error; the reference says a first error at step 3."


def test_a_no_error_reference_judges_the_verdict_only():
    reference = GoldAnswer(verdict="no_error")
    assert compare(GoldAnswer(verdict="no_error"), reference, screen=SCREEN, tolerance=0.05).correct
    wrong = compare(_answer(), reference, screen=SCREEN, tolerance=0.05)
    assert not wrong.correct
    assert {p: v for p, v in wrong.parts.items() if v is not None} == {"verdict": False}


def test_a_point_outside_the_box_counts_within_the_tolerance_and_not_beyond():
    # 45 units of 1000 right of the reference point, 5 past the box's edge (280..340): 0.045 of the screen.
    near = compare(_answer(corrected_action="click(start_box='(345,260)')"), REFERENCE, screen=SCREEN, tolerance=0.05)
    assert near.in_box is False and near.parts["point"] is True and math.isclose(near.distance, 0.045)
    far = compare(_answer(corrected_action="click(start_box='(500,260)')"), REFERENCE, screen=SCREEN, tolerance=0.05)
    assert far.parts["point"] is False and far.parts["action_type"] is True and not far.correct
    assert "outside the reference's element box, 0.200 of the screen" in far.differences[0]["words"]


def test_without_a_box_the_distance_alone_judges_the_point():
    reference = GoldAnswer(**{**REFERENCE.as_dict(), "target_box": None})
    result = compare(_answer(corrected_action="click(start_box='(320,260)')"), reference, screen=SCREEN, tolerance=0.01)
    assert result.in_box is None and result.parts["point"] is False
    assert compare(
        _answer(corrected_action="click(start_box='(305,260)')"), reference, screen=SCREEN, tolerance=0.01
    ).parts["point"]


def test_category_action_type_and_reflection_are_parts_of_their_own():
    result = compare(
        _answer(error_category="premature stop", corrected_action="type(content='x')", reflection_action=""),
        REFERENCE,
        screen=SCREEN,
        tolerance=0.05,
    )
    assert result.parts["category"] is False and result.parts["action_type"] is False
    assert result.parts["point"] is False and result.parts["reflection"] is False
    assert result.parts["tau_exact"] is True
    assert {d["part"] for d in result.differences} == {"category", "action_type", "point", "reflection"}


def test_a_pixel_convention_needs_the_screen_size_for_a_distance():
    pixels = Screen(convention="screen-pixels", width=1000, height=500)
    assert math.isclose(point_distance((0, 0), (100, 50), pixels), math.hypot(0.1, 0.1))
    assert point_distance((0, 0), (100, 50), Screen(convention="screen-pixels")) is None


def test_the_comparison_json_lists_the_parts_that_apply_with_their_labels():
    data = compare(
        GoldAnswer(verdict="no_error"), GoldAnswer(verdict="no_error"), screen=SCREEN, tolerance=0.05
    ).as_dict()
    assert data["parts"] == [{"part": "verdict", "label": "Verdict", "right": True}]
    assert data["reference"]["verdict"] == "no_error" and data["correct"] is True


@pytest.mark.parametrize(
    ("right", "n", "low", "high"),
    [
        # Values from the closed form (Wilson 1927), as statsmodels' proportion_confint(method="wilson") gives them.
        (5, 10, 0.2366, 0.7634),
        (0, 5, 0.0, 0.4345),
        (5, 5, 0.5655, 1.0),
        (81, 100, 0.7222, 0.8749),
    ],
)
def test_wilson_interval_matches_the_closed_form(right, n, low, high):
    got = wilson_interval(right, n)
    assert got is not None
    assert math.isclose(got[0], low, abs_tol=1e-4) and math.isclose(got[1], high, abs_tol=1e-4)
    assert got[0] <= right / n <= got[1]


def test_wilson_interval_of_nothing_is_none_and_bad_counts_are_refused():
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(4, 3)


def test_what_differed_follows_its_reader():
    result = compare(
        _answer(error_category="{odd} category", corrected_action="click(start_box='(500,260)')"),
        REFERENCE,
        screen=SCREEN,
        tolerance=0.05,
    )
    said = {d["part"]: d for d in result.differences}
    assert said["category"]["words"].startswith("You chose '{odd} category'")
    assert difference_words(said["category"]["template"], "ann").startswith("ann chose '{odd} category'")
    assert difference_words(said["point"]["template"]).startswith("Your point is outside")
    assert difference_words(said["point"]["template"], "ann").startswith("ann's point is outside")
