from manim import *


class TangentSlopeScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("导数的几何意义：切线斜率", font=cjk, font_size=38)
        title.to_edge(UP, buff=0.35)
        self.play(Write(title))

        axes = Axes(
            x_range=[-3, 3, 1],
            y_range=[-1, 5, 1],
            x_length=6.5,
            y_length=5,
            tips=False,
            axis_config={"include_numbers": True, "font_size": 22},
        )
        axes.to_edge(LEFT, buff=0.8).shift(DOWN * 0.5)

        def f(x):
            return 0.5 * x ** 2

        curve = axes.plot(f, x_range=[-3, 3], color=BLUE)
        curve_label = MathTex(r"f(x) = \tfrac{1}{2}x^2", font_size=34, color=BLUE)
        curve_label.next_to(axes.c2p(2.2, 4.5), LEFT, buff=0.3)
        self.play(Create(axes), Create(curve), FadeIn(curve_label), run_time=1.5)

        x0 = ValueTracker(-2.0)

        # The tangent line, the point and the slope readout follow the tracker
        def tangent():
            a = x0.get_value()
            half = 1.2 / np.sqrt(1 + a ** 2)
            left = axes.c2p(a - half, f(a) - a * half)
            right = axes.c2p(a + half, f(a) + a * half)
            return Line(left, right, color=YELLOW, stroke_width=5)

        tangent_line = always_redraw(tangent)
        point = always_redraw(
            lambda: Dot(axes.c2p(x0.get_value(), f(x0.get_value())), color=RED)
        )

        slope_title = Text("切点横坐标与斜率", font=cjk, font_size=28)
        x_text = MathTex(r"x_0 =", font_size=40)
        k_text = MathTex(r"k = f'(x_0) =", font_size=40)
        readout = VGroup(slope_title, x_text, k_text).arrange(DOWN, aligned_edge=LEFT, buff=0.5)
        readout.to_edge(RIGHT, buff=2.2).shift(UP * 0.8)
        x_value = always_redraw(
            lambda: DecimalNumber(x0.get_value(), num_decimal_places=2, font_size=40)
            .next_to(x_text, RIGHT, buff=0.2)
        )
        k_value = always_redraw(
            lambda: DecimalNumber(x0.get_value(), num_decimal_places=2, font_size=40, color=YELLOW)
            .next_to(k_text, RIGHT, buff=0.2)
        )

        self.play(FadeIn(slope_title), Write(x_text), Write(k_text))
        self.add(tangent_line, point, x_value, k_value)
        self.wait(0.5)

        # Move the tangent point from x0 = -2 to x0 = 2
        self.play(x0.animate.set_value(0.0), run_time=2)
        flat = Text("x₀ = 0 处 k = 0，切线水平", font=cjk, font_size=26, color=GREEN)
        flat.next_to(readout, DOWN, buff=0.7, aligned_edge=LEFT)
        self.play(FadeIn(flat))
        self.play(x0.animate.set_value(2.0), run_time=2)

        rule = MathTex(r"f'(x) = x", font_size=44, color=YELLOW)
        rule.next_to(flat, DOWN, buff=0.5, aligned_edge=LEFT)
        frame_box = SurroundingRectangle(rule, color=YELLOW, buff=0.15)
        self.play(Write(rule), Create(frame_box))
        self.wait(1)
