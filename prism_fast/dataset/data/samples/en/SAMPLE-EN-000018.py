from manim import *


class GrowthRatesScene(Scene):
    def construct(self):
        title = Text("How Running Times Grow", font_size=40).to_edge(UP, buff=0.3)
        self.play(Write(title))

        axes = Axes(
            x_range=[0, 10, 1],
            y_range=[0, 30, 5],
            x_length=7.2,
            y_length=5.0,
            tips=False,
            axis_config={"include_numbers": True, "font_size": 20},
        )
        axes.to_edge(LEFT, buff=0.9).shift(DOWN * 0.4)
        n_label = MathTex("n", font_size=30).next_to(axes.x_axis, RIGHT, buff=0.2)
        t_label = Text("steps", font_size=22).next_to(axes.y_axis, UP, buff=0.15)
        self.play(Create(axes), FadeIn(n_label), FadeIn(t_label))

        # (tex, color, function, x range) for each growth class
        classes = [
            ("O(\\log n)", GREEN, lambda n: np.log2(n), [1, 10]),
            ("O(n)", BLUE, lambda n: n, [0, 10]),
            ("O(n \\log n)", ORANGE, lambda n: n * np.log2(n), [1, 8.4]),
            ("O(n^2)", RED, lambda n: n ** 2, [0, 5.4]),
        ]

        legend = VGroup()
        curves = VGroup()
        for tex, color, func, x_range in classes:
            curve = axes.plot(func, x_range=x_range, color=color, stroke_width=4)
            swatch = Line(ORIGIN, RIGHT * 0.6, color=color, stroke_width=6)
            name = MathTex(tex, font_size=34, color=color)
            entry = VGroup(swatch, name).arrange(RIGHT, buff=0.25)
            curves.add(curve)
            legend.add(entry)
        legend.arrange(DOWN, aligned_edge=LEFT, buff=0.35)
        legend.move_to([4.6, 1.15, 0])
        legend_box = SurroundingRectangle(legend, color=GRAY_B, buff=0.3)

        self.play(Create(legend_box))
        for curve, entry in zip(curves, legend):
            self.play(Create(curve), FadeIn(entry, shift=LEFT * 0.2), run_time=0.7)

        # Compare values at n = 5 with a vertical guide
        guide = DashedLine(axes.c2p(5, 0), axes.c2p(5, 25), color=GRAY_B, dash_length=0.1)
        dots = VGroup(
            *[
                Dot(axes.c2p(5, func(5)), color=color, radius=0.07)
                for _, color, func, _ in classes
            ]
        )
        self.play(Create(guide), LaggedStart(*[FadeIn(d) for d in dots], lag_ratio=0.2))
        self.wait(0.4)

        values = MathTex(
            "n = 5:\\ 2.3 < 5 < 11.6 < 25", font_size=30
        ).next_to(legend_box, DOWN, buff=0.5)
        note = MathTex(
            "n \\to 2n:\\ n^2 \\to 4n^2", font_size=32, color=RED
        ).next_to(values, DOWN, buff=0.35)
        self.play(Write(values))
        self.play(Indicate(curves[3]), FadeIn(note))
        self.wait(1)
