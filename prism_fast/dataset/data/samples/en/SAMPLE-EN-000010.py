from manim import *


class EmpiricalRuleScene(Scene):
    def construct(self):
        title = Text("The 68-95-99.7 Rule", font_size=40).to_edge(UP, buff=0.3)
        self.play(Write(title))

        axes = Axes(
            x_range=[-4, 4, 1],
            y_range=[0, 0.5, 0.1],
            x_length=9,
            y_length=3.4,
            tips=False,
            x_axis_config={"include_numbers": False},
            y_axis_config={"include_ticks": False, "stroke_opacity": 0},
        )
        axes.shift(DOWN * 0.4)

        # Sigma labels under the x axis instead of plain numbers
        sigma_labels = VGroup()
        for k in range(-3, 4):
            text = "\\mu" if k == 0 else f"{k:+d}\\sigma"
            sigma_labels.add(MathTex(text, font_size=28).next_to(axes.c2p(k, 0), DOWN, buff=0.2))

        def pdf(x):
            return np.exp(-x ** 2 / 2) / np.sqrt(2 * np.pi)

        bell = axes.plot(pdf, x_range=[-4, 4], color=WHITE)
        self.play(Create(axes.x_axis), FadeIn(sigma_labels))
        self.play(Create(bell))

        formula = MathTex(
            "f(x) = \\frac{1}{\\sigma\\sqrt{2\\pi}}\\, e^{-\\frac{(x-\\mu)^2}{2\\sigma^2}}",
            font_size=34,
        )
        formula.next_to(title, DOWN, buff=0.3)
        self.play(Write(formula))

        # Areas for one, two and three standard deviations
        colors = [BLUE, TEAL, GREEN]
        shares = ["68\\%", "95\\%", "99.7\\%"]
        area = None
        share = None
        for k, (color, pct) in enumerate(zip(colors, shares), start=1):
            new_area = axes.get_area(bell, x_range=[-k, k], color=color, opacity=0.45)
            new_share = MathTex(
                f"P(|X - \\mu| < {k}\\sigma) \\approx {pct}", font_size=34, color=color
            )
            new_share.next_to(formula, DOWN, buff=0.35)
            if area is None:
                self.play(FadeIn(new_area), Write(new_share))
            else:
                self.play(
                    ReplacementTransform(area, new_area),
                    ReplacementTransform(share, new_share),
                )
            area, share = new_area, new_share
            self.wait(0.2)

        # Brace below the sigma labels showing the 3-sigma interval
        span = Line(axes.c2p(-3, 0), axes.c2p(3, 0))
        brace = Brace(span, DOWN, buff=0.65)
        brace_text = MathTex("\\mu \\pm 3\\sigma", font_size=30).next_to(brace, DOWN, buff=0.1)
        self.play(GrowFromCenter(brace), FadeIn(brace_text))
        self.wait(1)
