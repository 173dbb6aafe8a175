from manim import *


class CompoundInterestScene(Scene):
    def construct(self):
        title = Text("Simple vs Compound Interest", font_size=38).to_edge(UP, buff=0.3)
        self.play(Write(title))

        principal, rate, years = 1000, 0.10, 5
        simple = [principal * (1 + rate * n) for n in range(years + 1)]
        compound = [principal * (1 + rate) ** n for n in range(years + 1)]

        scale = 2.6 / 1000  # scene units per dollar
        base_y = -2.6
        bar_w = 0.75
        xs = [-5.6 + 1.25 * n for n in range(years + 1)]

        axis = Line([-6.3, base_y, 0], [1.3, base_y, 0], color=GRAY)
        year_labels = VGroup(
            *[
                Text(str(n), font_size=22).move_to([x, base_y - 0.3, 0])
                for n, x in enumerate(xs)
            ]
        )
        year_title = Text("year", font_size=22, color=GRAY_A)
        year_title.next_to(year_labels, RIGHT, buff=0.4)
        self.play(Create(axis), FadeIn(year_labels), FadeIn(year_title))

        def make_bars(values, color):
            bars = VGroup()
            for x, v in zip(xs, values):
                bar = Rectangle(
                    width=bar_w, height=v * scale, color=color, fill_opacity=0.75
                )
                bar.move_to([x, base_y, 0], aligned_edge=DOWN)
                bars.add(bar)
            return bars

        simple_bars = make_bars(simple, BLUE)
        compound_bars = make_bars(compound, GREEN)
        simple_vals = VGroup(
            *[Text(f"{v:.0f}", font_size=18).next_to(b, UP, buff=0.1) for v, b in zip(simple, simple_bars)]
        )
        compound_vals = VGroup(
            *[Text(f"{v:.0f}", font_size=18).next_to(b, UP, buff=0.1) for v, b in zip(compound, compound_bars)]
        )

        # Formulas on the right
        f_simple = MathTex("A = P(1 + rn)", font_size=36, color=BLUE)
        f_compound = MathTex("A = P(1 + r)^n", font_size=36, color=GREEN)
        params = MathTex("P = 1000,\\ r = 10\\%", font_size=32)
        gap = MathTex("1611 - 1500 = 111", font_size=32, color=YELLOW)
        rule = MathTex("\\text{Rule of 72: } \\tfrac{72}{10} \\approx 7.2 \\text{ years}", font_size=30)
        # Lay out the whole right column first so that it stays inside the frame
        column = VGroup(params, f_simple, f_compound, gap, rule)
        column.arrange(DOWN, aligned_edge=LEFT, buff=0.4)
        column.to_edge(RIGHT, buff=0.5).shift(UP * 0.3)

        self.play(Write(params), Write(f_simple))
        self.play(
            LaggedStart(*[GrowFromEdge(b, DOWN) for b in simple_bars], lag_ratio=0.15),
            FadeIn(simple_vals),
            run_time=1.5,
        )
        self.wait(0.5)

        # Morph into compound growth
        self.play(Write(f_compound))
        self.play(
            ReplacementTransform(simple_bars, compound_bars),
            ReplacementTransform(simple_vals, compound_vals),
            run_time=1.5,
        )

        self.play(compound_bars[-1].animate.set_fill(YELLOW, opacity=0.8), Write(gap))
        self.play(FadeIn(rule, shift=UP * 0.2))
        self.wait(1)
