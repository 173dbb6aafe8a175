"""Red team of the one-pass audit of failed renders (audit/onepass_failure.py, onepass_child.py): scripts past the
static rule whose one-pass row differed from the separate audit's row, or whose kept exec row differed from a plain
render's. Each script is rendered with the observers, plainly, and audited alone; the one-pass path must either not
share (audit separately / render again) or give exactly the other two's rows.

Real renders (prefork worker) and real audits; one worker shared through a module fixture."""

from __future__ import annotations


import pytest

from prism_fast.audit import onepass, onepass_store
from prism_fast.audit.config import AuditConfig
from prism_fast.audit.onepass_rule import static_reasons
from prism_fast.audit.runner import audit_one
from prism_fast.profile import REFERENCE
from tests.scratch_names import scratch_neutral

# a rate_func written in the script runs once per frame: 15 times in the render, 60 in the audit-only run; the
# script branches on the count after the play (render: IndexError; audit: no error, an out-of-bounds triangle)
RATE_FUNC = '''from manim import *

calls = []


class S(Scene):
    def construct(self):
        c = Circle()
        self.play(c.animate.shift(RIGHT), rate_func=lambda t: calls.append(t) or t)
        b = [0] * 30
        b[50 - len(calls)] = 1
        t = Triangle().shift(RIGHT * 30)
        self.play(Create(t))
'''

# the same through a method of a script-defined Mobject class that Create calls at every frame
MOBJECT_CLASS = '''from manim import *

calls = []


class Sq(Square):
    def pointwise_become_partial(self, mobject, a, b):
        calls.append(b)
        return super().pointwise_become_partial(mobject, a, b)


class S(Scene):
    def construct(self):
        c = Sq()
        self.play(Create(c))
        b = [0] * 30
        b[50 - len(calls)] = 1
        t = Triangle().shift(RIGHT * 30)
        self.play(Create(t))
'''

# the exception's text is the mobject's repr, built only when the error is printed: the injected name "c" in the
# one-pass render, "Circle" in a plain one
REPR_ARG = '''from manim import *


class S(Scene):
    def construct(self):
        c = Circle()
        self.play(Create(c))
        raise ValueError(c)
'''

REPR_CHAINED = '''from manim import *


class S(Scene):
    def construct(self):
        c = Circle()
        self.play(Create(c))
        raise ValueError("no") from KeyError(c)
'''

# a BaseException that is no Exception, raised by the module body: the audit-only run's process dies with it
BASE_EXCEPTION = '''from manim import *


class S(Scene):
    def construct(self):
        c = Circle()
        self.play(Create(c))


class Boom(BaseException):
    pass


raise Boom("x")
'''

# the scene's last frame time after a play: 14/15 s in the render, 59/60 s in the audit-only run
LAST_T = '''from manim import *


class S(Scene):
    def construct(self):
        c = Circle()
        self.play(c.animate.shift(RIGHT))
        k = 1 / (int(self.last_t * 60 + 0.5) - 56)
        t = Triangle().shift(RIGHT * 30)
        self.play(Create(t))
'''

# the audit's name injection calls b.set(name="b"): script code in the one-pass render only, which then fails
# where a plain render succeeds
INJECTED_SET = '''from manim import *

seen = []


class Box:
    def set(self, name):
        seen.append(name)


class S(Scene):
    def construct(self):
        c = Circle()
        self.play(Create(c))
        b = Box()
        k = [0][len(seen)]
        self.play(c.animate.shift(RIGHT))
'''

# a script Mobject class that is never animated: the render's camera and the one-pass audit's snapshots call its
# get_family a different number of times than a plain render or the audit-only run (plain 9, one-pass 12)
SNAPSHOT_METHOD = '''from manim import *

seen = []


class Sq(Square):
    def get_family(self, recurse=True):
        seen.append(1)
        return super().get_family(recurse)


class S(Scene):
    def construct(self):
        s = Sq()
        self.add(s)
        c = Circle()
        self.play(Create(c))
        self.remove(c)
        raise ValueError(len(seen))
'''

# the same through a patched library class, and through a method shadowed on an instance
CLASS_PATCH = SNAPSHOT_METHOD.replace('''class Sq(Square):
    def get_family(self, recurse=True):
        seen.append(1)
        return super().get_family(recurse)
''', '''real = Square.get_family


def counted(self, recurse=True):
    seen.append(1)
    return real(self, recurse)


Square.get_family = counted
''').replace("s = Sq()", "s = Square()")

INSTANCE_PATCH = SNAPSHOT_METHOD.replace('''class Sq(Square):
    def get_family(self, recurse=True):
        seen.append(1)
        return super().get_family(recurse)
''', "").replace('''        s = Sq()
''', '''        s = Square()
        real = s.get_family
        s.get_family = lambda recurse=True: seen.append(1) or real(recurse)
''')

# the same through a mixin of the script's (the Mobject subclass itself defines nothing)
MIXIN = SNAPSHOT_METHOD.replace('''class Sq(Square):
    def get_family(self, recurse=True):
        seen.append(1)
        return super().get_family(recurse)
''', '''class Mix:
    def get_family(self, recurse=True):
        seen.append(1)
        return Square.get_family(self, recurse)


class Sq(Mix, Square):
    pass
''')

SCRIPTS = {"snapshot_method": SNAPSHOT_METHOD, "class_patch": CLASS_PATCH, "instance_patch": INSTANCE_PATCH,
           "mixin": MIXIN, "rate_func": RATE_FUNC, "mobject_class": MOBJECT_CLASS, "repr_arg": REPR_ARG,
           "repr_chained": REPR_CHAINED, "base_exception": BASE_EXCEPTION}
STATIC = {"last_t": (LAST_T, "attr:last_t"), "injected_set": (INJECTED_SET, "binds:set")}

TIMING = {"runtime_sec", "wall_s", "cpu_s", "peak_rss_mb", "written_at_ns", "onepass", "onepass_reasons",
          "manim_executions", "audit_sec", "engine", "report_path", "audit_pass", "file_path", "video_path",
          "sandbox", "sandbox_protections"}
AUDIT_FIELDS = ("audit_success", "visual_audit_report", "visual_issue_total", "visual_structure_pass",
                "visual_issue_breakdown", "scene_errors", "error_kind", "error_msg", "error_detail", "returncode")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from prism_fast.execute.render import RenderConfig, prefork_worker, render_one

    base = tmp_path_factory.mktemp("redteam")
    cfg = RenderConfig(timeout_s=20)
    acfg = AuditConfig().to_dict()
    worker = prefork_worker(cfg, preload=onepass.PRELOAD)
    out = {}
    try:
        for name, script in SCRIPTS.items():
            one = onepass.render_with_onepass(f"R-{name}", script, base / "onepass", cfg, REFERENCE, None,
                                              worker.run, acfg)
            plain = render_one(f"R-{name}", script, base / "plain", cfg, REFERENCE, None, worker.run)
            out[name] = (one, plain)
    finally:
        worker.close()
    audits = {name: audit_one(f"R-{name}", script, base / "audit_only", AuditConfig())
              for name, script in SCRIPTS.items()}
    return base, out, audits


def _norm(sample_id: str, value):
    return scratch_neutral(value, f"render_{sample_id}_")


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_a_kept_failed_render_is_the_plain_render_and_its_shared_audit_the_audit_only_row(runs, name):
    base, out, audits = runs
    one, plain = out[name]
    sid = f"R-{name}"
    assert not plain["success"]
    assert one["onepass"] in ("shared", "separate", "fallback"), one
    diff = {k: (plain.get(k), one.get(k)) for k in plain
            if k not in TIMING and _norm(sid, plain.get(k)) != _norm(sid, one.get(k))}
    assert diff == {}, (one["onepass"], one.get("onepass_reasons"), diff)
    shared = one.get("_onepass_audit")
    if one["onepass"] != "shared":
        assert shared is None
        return
    row = onepass_store.write_shared_audit(sid, str(base / f"{name}.py"), shared, base / "shared_audit")
    expected = audits[name]
    assert {k: row.get(k) for k in AUDIT_FIELDS} == {k: expected.get(k) for k in AUDIT_FIELDS}


@pytest.mark.parametrize("name", list(STATIC))
def test_the_static_rule_refuses_what_the_render_cannot_share(name):
    script, reason = STATIC[name]
    assert reason in static_reasons(script)


def test_the_word_set_in_drawn_text_is_not_a_field_name():
    head = "from manim import *\nclass A(Scene):\n    def construct(self):\n"
    drawn = ['t = Text("the set of integers")', 't = Tex(r"a set $S$")', 'k = 3\n        t = MathTex(f"set {k}")',
             'b = BulletedList("set up", "go")']
    for line in drawn:
        assert "string:set" not in onepass.static_reasons(head + "        " + line + "\n"), line
    fields = ['import collections\nP = collections.namedtuple("P", "set")', 'd = {"set": 1}',
              'Text = collections.namedtuple\np = Text("P", "set")']
    for line in fields:
        assert "string:set" in onepass.static_reasons("import collections\n" + line + "\n"), line
