from manim import *


class TangentSlopeScene(Scene):
    def construct(self):
        title = Text("Derivative = Slope of the Tangent", font_size=36)
        title.to_edge(UP, buff=0.35)
        self.play(Write(title))

        axes = Axes(
            x_range=[-3, 3, 1],
            y_range=[-1, 5, 1],
            x_length=6.5,
            y_length=4.6,
            tips=False,
            axis_config={"include_numbers": True, "font_size": 20},
        )
        axes.to_edge(LEFT, buff=0.6).shift(DOWN * 0.6)

        def f(x):
            return 0.5 * x ** 2

        curve = axes.plot(f, x_range=[-2.9, 2.9], color=BLUE)
        self.play(Create(axes), Create(curve), run_time=1.5)

        # The tracker holds the x coordinate of the point of tangency
        x_tracker = ValueTracker(-2.0)

        def tangent_line():
            x0 = x_tracker.get_value()
            slope = x0
            half = 0.9
            start = axes.c2p(x0 - half, f(x0) - slope * half)
            end = axes.c2p(x0 + half, f(x0) + slope * half)
            return Line(start, end, color=YELLOW, stroke_width=5)

        def moving_dot():
            x0 = x_tracker.get_value()
            return Dot(axes.c2p(x0, f(x0)), color=RED)

        tangent = always_redraw(tangent_line)
        dot = always_redraw(moving_dot)

        # Readout panel on the right, updated every frame
        formula = MathTex("f(x) = \\tfrac{1}{2}x^2", font_size=38)
        deriv = MathTex("f'(x) = x", font_size=38)
        x_label = MathTex("x =", font_size=36)
        slope_label = MathTex("f'(x) =", font_size=36)
        x_value = DecimalNumber(-2.0, num_decimal_places=2, font_size=36)
        slope_value = DecimalNumber(-2.0, num_decimal_places=2, font_size=36)

        x_row = VGroup(x_label, x_value).arrange(RIGHT, buff=0.2)
        s_row = VGroup(slope_label, slope_value).arrange(RIGHT, buff=0.2)
        panel = VGroup(formula, deriv, x_row, s_row).arrange(
            DOWN, aligned_edge=LEFT, buff=0.45
        )
        panel.to_edge(RIGHT, buff=0.8).shift(DOWN * 0.4)
        frame = SurroundingRectangle(panel, color=GRAY, buff=0.3)

        x_value.add_updater(lambda m: m.set_value(x_tracker.get_value()))
        slope_value.add_updater(lambda m: m.set_value(x_tracker.get_value()))

        self.play(Create(frame), Write(formula), Write(deriv))
        self.play(FadeIn(dot), Create(tangent), FadeIn(x_row), FadeIn(s_row))
        self.wait(0.5)

        # Slide the point of tangency along the parabola
        self.play(x_tracker.animate.set_value(0.0), run_time=1.8)
        flat = Text("slope 0: minimum", font_size=24, color=GREEN)
        flat.next_to(frame, DOWN, buff=0.3)
        self.play(FadeIn(flat))
        self.play(FadeOut(flat), x_tracker.animate.set_value(2.0), run_time=2)
        self.play(Indicate(s_row))

        x_value.clear_updaters()
        slope_value.clear_updaters()
        self.wait(1)
