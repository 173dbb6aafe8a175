from manim import *


class LeastSquaresScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("线性回归：最小二乘法", font=cjk, font_size=40).to_edge(UP, buff=0.35)
        self.play(Write(title))

        xs = np.array([1, 2, 3, 4, 5, 6], dtype=float)
        ys = np.array([2.1, 2.9, 4.2, 4.8, 6.1, 6.9])
        x_mean, y_mean = xs.mean(), ys.mean()
        slope = np.sum((xs - x_mean) * (ys - y_mean)) / np.sum((xs - x_mean) ** 2)
        intercept = y_mean - slope * x_mean

        axes = Axes(
            x_range=[0, 7, 1],
            y_range=[0, 8, 2],
            x_length=6.4,
            y_length=4.8,
            axis_config={"include_numbers": True, "font_size": 22},
        )
        axes.to_edge(LEFT, buff=0.9).shift(DOWN * 0.4)
        x_name = Text("广告费 x", font=cjk, font_size=22).next_to(axes.x_axis, DOWN, buff=0.45)
        y_name = Text("销售额 y", font=cjk, font_size=22).next_to(axes.y_axis, UP, buff=0.15)
        self.play(Create(axes), FadeIn(x_name), FadeIn(y_name))

        points = VGroup(*[Dot(axes.c2p(x, y), color=YELLOW, radius=0.08) for x, y in zip(xs, ys)])
        self.play(LaggedStart(*[FadeIn(p, scale=2) for p in points], lag_ratio=0.15, run_time=1.2))

        # A poor guess first, then the least-squares line
        guess = axes.plot(lambda x: 0.5 * x + 2.5, x_range=[0, 7], color=GRAY)
        best = axes.plot(lambda x: slope * x + intercept, x_range=[0, 7], color=BLUE)
        self.play(Create(guess))

        def residuals(a, b, color):
            return VGroup(
                *[
                    Line(axes.c2p(x, y), axes.c2p(x, a * x + b), color=color, stroke_width=3)
                    for x, y in zip(xs, ys)
                ]
            )

        res_guess = residuals(0.5, 2.5, RED)
        res_best = residuals(slope, intercept, GREEN)
        q_text = Text("残差平方和 Q 越小越好", font=cjk, font_size=26)
        formula = MathTex(r"Q = \sum_{i=1}^{n} (y_i - \hat{y}_i)^2", font_size=38)
        result = MathTex(r"\hat{y} = 0.97x + 1.1", font_size=42, color=BLUE)
        center_note = Text("直线经过样本中心 (3.5, 4.5)", font=cjk, font_size=24)
        panel = VGroup(q_text, formula, result, center_note).arrange(DOWN, buff=0.5)
        panel.to_edge(RIGHT, buff=0.6).shift(DOWN * 0.2)

        self.play(Create(res_guess), FadeIn(q_text), Write(formula))
        self.play(ReplacementTransform(guess, best), ReplacementTransform(res_guess, res_best), run_time=1.5)
        self.play(Write(result))

        center = Dot(axes.c2p(x_mean, y_mean), color=WHITE, radius=0.09)
        ring = Circle(radius=0.2, color=WHITE).move_to(center)
        self.play(FadeIn(center), Create(ring), FadeIn(center_note))
        self.play(Indicate(result, color=GREEN))
        self.wait(1)
