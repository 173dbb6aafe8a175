from manim import *


class CircularProjectionScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("简谐运动：匀速圆周运动的投影", font=cjk, font_size=38)
        title.to_edge(UP, buff=0.35)
        self.play(Write(title))

        radius = 2.0
        center = LEFT * 3.2 + DOWN * 0.6
        circle = Circle(radius=radius, color=BLUE_B).move_to(center)
        diameter = Line(
            center + LEFT * (radius + 0.4), center + RIGHT * (radius + 0.4), color=GRAY
        )
        o_label = MathTex("O", font_size=30).next_to(center, DL, buff=0.08)
        self.play(Create(circle), Create(diameter), FadeIn(o_label))

        theta = ValueTracker(0.0)

        def on_circle():
            a = theta.get_value()
            return center + radius * np.array([np.cos(a), np.sin(a), 0.0])

        mover = Dot(on_circle(), color=YELLOW, radius=0.1)
        mover.add_updater(lambda m: m.move_to(on_circle()))

        shadow = Dot(color=RED, radius=0.1)
        shadow.add_updater(lambda m: m.move_to([on_circle()[0], center[1], 0]))

        radius_line = Line(center, on_circle(), color=YELLOW_D)
        radius_line.add_updater(lambda m: m.put_start_and_end_on(center, on_circle()))

        drop_line = DashedLine(on_circle(), on_circle(), color=GRAY_B)
        drop_line.add_updater(
            lambda m: m.become(
                DashedLine(
                    on_circle(),
                    [on_circle()[0], center[1], 0],
                    color=GRAY_B,
                    dash_length=0.1,
                )
            )
        )
        self.add(radius_line, drop_line, mover, shadow)
        self.play(FadeIn(mover), FadeIn(shadow), run_time=0.5)

        # Formulas on the right
        formula = MathTex(r"x(t) = A\cos(\omega t)", font_size=44)
        relation = MathTex(r"\theta = \omega t", font_size=40)
        desc1 = Text("黄点：匀速圆周运动", font=cjk, font_size=26, color=YELLOW)
        desc2 = Text("红点：在直径上的投影", font=cjk, font_size=26, color=RED)
        desc3 = Text("投影点做简谐运动", font=cjk, font_size=28, color=GREEN)
        panel = VGroup(formula, relation, desc1, desc2, desc3).arrange(
            DOWN, buff=0.4, aligned_edge=LEFT
        )
        panel.to_edge(RIGHT, buff=0.9).shift(DOWN * 0.4)
        self.play(Write(formula), FadeIn(relation))
        self.play(FadeIn(desc1), FadeIn(desc2))

        # A bit more than one revolution: the red point oscillates between -A and A
        # (the tracker value stays below 7.1, inside the frame width)
        self.play(theta.animate.set_value(2 * PI + PI / 4), run_time=4, rate_func=linear)

        span = Line(center + LEFT * radius, center + RIGHT * radius)
        amplitude = Brace(span, DOWN, buff=0.1).next_to(circle, DOWN, buff=0.15)
        amp_text = MathTex(r"-A \le x \le A", font_size=34).next_to(amplitude, DOWN, buff=0.1)
        self.play(GrowFromCenter(amplitude), FadeIn(amp_text))
        self.play(FadeIn(desc3, shift=UP * 0.2), Indicate(shadow, scale_factor=1.6))
        self.wait(1)
