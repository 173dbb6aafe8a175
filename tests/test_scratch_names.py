"""The tests' scratch-name mask (tests/scratch_names.py) hides only the 8 random characters, wrapped or not."""

from tests.scratch_names import scratch_neutral


def test_a_wrapped_random_name_is_masked_and_the_wrap_kept():
    a = "ValueError: see the log file:\n/tmp/p/render_eq_hgo\n1v0go/media/Tex/e.log"
    b = "ValueError: see the log file:\n/tmp/p/render_eq_k2_\nazz91/media/Tex/e.log"
    assert scratch_neutral(a, "render_eq_") == scratch_neutral(b, "render_eq_") == \
        "ValueError: see the log file:\n/tmp/p/render_eq_XXX\nXXXXX/media/Tex/e.log"
    boxed = ["│ /tmp/render_s_ab │\n│ cdefgh/s.py  │", "│ /tmp/render_s_zy │\n│ xwvuts/s.py  │"]
    assert scratch_neutral(boxed[0], "render_s_") == scratch_neutral(boxed[1], "render_s_")


def test_anything_else_still_differs():
    assert scratch_neutral("render_s_abcdefgh/s.py line 3", "render_s_") != \
        scratch_neutral("render_s_abcdefgh/s.py line 4", "render_s_")
    assert scratch_neutral("render_s_abcdefgh/s.py", "render_s_") != \
        scratch_neutral("render_s_abcdefgh\n/s.py", "render_s_")  # a line break is kept
    assert scratch_neutral("render_t_abcdefgh", "render_s_") == "render_t_abcdefgh"  # another sample's name
    assert scratch_neutral(None, "render_s_") is None
