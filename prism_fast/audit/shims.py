"""Compatibility shims of the authors' auditor (spec spatial_audit.md §2.2; removed by Q-SPATIAL-3).

Installed into the (child) process before user code runs. They change which scripts crash, so the
``reference`` profile must install them.
"""

from __future__ import annotations

from types import SimpleNamespace


def install_shims() -> None:
    import manim
    from manim import BLUE_A, BOLD, DL, DR, ORIGIN, RIGHT, DOWN, LEFT, UP, TEAL_A, UL, UR, WHITE
    from manim import Mobject, Text, VGroup

    aliases = {"CENTER": ORIGIN, "UP_LEFT": UL, "UP_RIGHT": UR, "DOWN_LEFT": DL, "DOWN_RIGHT": DR,
               "LIGHT_BLUE": BLUE_A, "CYAN": TEAL_A}
    for name, value in aliases.items():
        if not hasattr(manim, name):
            setattr(manim, name, value)

    if not hasattr(manim, "HGroup"):
        manim.HGroup = type("HGroup", (VGroup,), {})

    if not hasattr(manim, "BulletList"):
        class BulletList(VGroup):
            def __init__(self, *items, buff=0.3, font_size=24, dot_scale_factor=1.0, **kwargs):
                rows = []
                for item in items:
                    if isinstance(item, Mobject):
                        rows.append(item)
                        continue
                    dot = Text("•", font_size=font_size).scale(dot_scale_factor)
                    body = Text(str(item), font_size=font_size)
                    rows.append(VGroup(dot, body).arrange(RIGHT, buff=0.15, aligned_edge=UP))
                super().__init__(*rows)
                if len(self.submobjects) > 1:
                    self.arrange(DOWN, aligned_edge=LEFT, buff=buff)
                for key in ("name", "z_index"):  # every other kwarg is ignored
                    if key in kwargs:
                        try:
                            setattr(self, key, kwargs[key])
                        except Exception:
                            pass

        manim.BulletList = BulletList

    try:
        from manim.utils import color as color_module

        if not hasattr(color_module, "Colors"):
            class _Colors(SimpleNamespace):
                def __getattr__(self, item):
                    return getattr(manim, item.upper(), WHITE)

            color_module.Colors = _Colors()
    except Exception:
        pass

    real_align_to = Mobject.align_to

    def align_to(self, *args, **kwargs):
        kwargs.pop("buff", None)
        return real_align_to(self, *args, **kwargs)

    Mobject.align_to = align_to

    real_init = Mobject.__init__

    def mobject_init(self, *args, **kwargs):
        for old, new in (("font_name", "font"), ("font_weight", "weight")):
            if old in kwargs and new not in kwargs:
                kwargs[new] = kwargs.pop(old)
            else:
                kwargs.pop(old, None)
        if "bold" in kwargs and "weight" not in kwargs:
            if kwargs.pop("bold"):
                kwargs["weight"] = BOLD
        else:
            kwargs.pop("bold", None)
        for key in ("line_height", "line_spacing_height", "line_spacing_ratio", "alignment", "height",
                    "corner_radius"):
            kwargs.pop(key, None)
        return real_init(self, *args, **kwargs)

    Mobject.__init__ = mobject_init

    if hasattr(manim, "Code"):
        real_code_init = manim.Code.__init__

        def code_init(self, *args, **kwargs):
            if "code" in kwargs and "code_string" not in kwargs and not args:
                kwargs["code_string"] = kwargs.pop("code")
            return real_code_init(self, *args, **kwargs)

        manim.Code.__init__ = code_init
