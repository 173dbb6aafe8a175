from manim import *


class BoyleLawScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("玻意耳定律：等温压缩", font=cjk, font_size=40).to_edge(UP, buff=0.35)
        state_eq = MathTex(r"pV = nRT", font_size=44, color=YELLOW)
        state_eq.next_to(title, DOWN, buff=0.3)
        self.play(Write(title), FadeIn(state_eq))

        # Cylinder (three walls) with a movable piston
        bottom_y, left_x, right_x = -3.0, -5.4, -2.4
        wall_left = Line([left_x, bottom_y, 0], [left_x, 1.3, 0], stroke_width=6)
        wall_right = Line([right_x, bottom_y, 0], [right_x, 1.3, 0], stroke_width=6)
        wall_bottom = Line([left_x, bottom_y, 0], [right_x, bottom_y, 0], stroke_width=6)
        cylinder = VGroup(wall_left, wall_right, wall_bottom)

        piston_y = 0.8
        piston = Rectangle(width=2.9, height=0.25, color=GRAY, fill_opacity=1)
        piston.move_to([(left_x + right_x) / 2, piston_y, 0])
        rod = Line(piston.get_top(), piston.get_top() + UP * 0.5, stroke_width=8, color=GRAY)
        piston_group = VGroup(piston, rod)
        self.play(Create(cylinder), FadeIn(piston_group))

        # Gas molecules with a fixed seed (deterministic)
        rng = np.random.default_rng(7)
        inner_top = piston_y - 0.35
        positions = rng.uniform([left_x + 0.25, bottom_y + 0.25], [right_x - 0.25, inner_top], size=(18, 2))
        molecules = VGroup(*[Dot([x, y, 0], radius=0.07, color=BLUE) for x, y in positions])
        self.play(LaggedStart(*[FadeIn(m) for m in molecules], lag_ratio=0.05, run_time=1))

        state1 = VGroup(
            MathTex(r"V_1 = 2\ \mathrm{L}", font_size=36),
            MathTex(r"p_1 = 1.0 \times 10^5\ \mathrm{Pa}", font_size=36),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.25)
        state1.move_to([2.2, 0.6, 0])
        self.play(FadeIn(state1))

        # Compress to half the volume: molecules squeezed into the lower half
        new_piston_y = bottom_y + (piston_y - bottom_y) / 2
        shift = DOWN * (piston_y - new_piston_y)
        squeezed = [
            m.animate.move_to([m.get_x(), bottom_y + (m.get_y() - bottom_y) * 0.45, 0]) for m in molecules
        ]
        force = Arrow(UP * 2.5, UP * 1.5, buff=0, color=RED).set_x((left_x + right_x) / 2)
        self.play(GrowArrow(force))
        self.play(piston_group.animate.shift(shift), force.animate.shift(shift), *squeezed, run_time=2)

        state2 = VGroup(
            MathTex(r"V_2 = 1\ \mathrm{L}", font_size=36),
            MathTex(r"p_2 = 2.0 \times 10^5\ \mathrm{Pa}", font_size=36, color=RED),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.25)
        state2.next_to(state1, DOWN, buff=0.6, aligned_edge=LEFT)
        self.play(FadeIn(state2, shift=UP * 0.2))

        law = MathTex(r"p_1 V_1 = p_2 V_2", font_size=44, color=YELLOW)
        law.next_to(state2, DOWN, buff=0.6, aligned_edge=LEFT)
        reason = Text("体积减半，分子密度加倍，压强加倍", font=cjk, font_size=24)
        reason.next_to(law, DOWN, buff=0.35, aligned_edge=LEFT)
        self.play(Write(law), FadeIn(reason))
        self.play(Circumscribe(law, color=YELLOW))
        self.wait(1)
