from manim import *


class NormalDistributionScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("正态分布与 3σ 原则", font=cjk, font_size=40)
        title.to_edge(UP, buff=0.35)
        self.play(Write(title))

        axes = Axes(
            x_range=[-4, 4, 1],
            y_range=[0, 0.5, 0.1],
            x_length=7.2,
            y_length=3.6,
            tips=False,
            x_axis_config={"include_numbers": True, "font_size": 24},
            y_axis_config={"include_ticks": True},
        )
        axes.to_edge(LEFT, buff=0.6).shift(DOWN * 0.9)

        def pdf(x):
            return np.exp(-x ** 2 / 2) / np.sqrt(2 * np.pi)

        curve = axes.plot(pdf, x_range=[-4, 4], color=BLUE)
        formula = MathTex(
            r"f(x) = \frac{1}{\sqrt{2\pi}}\, e^{-x^2/2}", font_size=38
        )
        formula.next_to(title, DOWN, buff=0.35)
        self.play(Create(axes), run_time=1)
        self.play(Create(curve), Write(formula), run_time=1.5)

        # Shade the three bands one after the other
        colors = [GREEN, YELLOW, ORANGE]
        texts = ["68.3\\%", "95.4\\%", "99.7\\%"]
        area = None
        label = None
        for k in range(1, 4):
            new_area = axes.get_area(
                curve, x_range=[-k, k], color=colors[k - 1], opacity=0.45
            )
            new_label = MathTex(
                rf"P(|X| < {k}\sigma) \approx {texts[k - 1]}", font_size=34,
                color=colors[k - 1],
            )
            new_label.move_to([4.4, 0.9, 0])
            if area is None:
                self.play(FadeIn(new_area), Write(new_label), run_time=1)
            else:
                self.play(
                    ReplacementTransform(area, new_area),
                    ReplacementTransform(label, new_label),
                    run_time=1,
                )
            area, label = new_area, new_label
            self.wait(0.4)

        brace = Brace(Line(axes.c2p(-1, 0), axes.c2p(1, 0)), DOWN, buff=0.55)
        brace_text = MathTex(r"\mu \pm \sigma", font_size=30).next_to(brace, DOWN, buff=0.1)
        self.play(GrowFromCenter(brace), FadeIn(brace_text))

        note = VGroup(
            Text("曲线关于 x = μ 对称", font=cjk, font_size=26),
            Text("曲线下总面积为 1", font=cjk, font_size=26),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.25)
        note.move_to([4.4, -0.6, 0])
        self.play(FadeIn(note, shift=RIGHT * 0.2))
        self.play(Indicate(curve, color=YELLOW))
        self.wait(1)
