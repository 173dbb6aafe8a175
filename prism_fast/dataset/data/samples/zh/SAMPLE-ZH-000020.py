from manim import *


class CompoundInterestScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("单利与复利的比较", font=cjk, font_size=40).to_edge(UP, buff=0.35)
        self.play(Write(title))

        axes = Axes(
            x_range=[0, 10, 2],
            y_range=[1000, 2800, 400],
            x_length=6.3,
            y_length=4.6,
            tips=False,
            axis_config={"include_numbers": True, "font_size": 22},
        )
        axes.to_edge(LEFT, buff=1.0).shift(DOWN * 0.45)
        x_name = Text("年数 n", font=cjk, font_size=22).next_to(axes.x_axis, DOWN, buff=0.45)
        y_name = Text("本利和（元）", font=cjk, font_size=22).next_to(axes.y_axis, UP, buff=0.2)
        self.play(Create(axes), FadeIn(x_name), FadeIn(y_name))

        principal, rate = 1000, 0.10
        simple = axes.plot(lambda n: principal * (1 + n * rate), x_range=[0, 10], color=BLUE)
        compound = axes.plot(lambda n: principal * (1 + rate) ** n, x_range=[0, 10], color=ORANGE)

        years = list(range(0, 11))
        dots = VGroup(
            *[Dot(axes.c2p(n, principal * (1 + rate) ** n), radius=0.05, color=ORANGE) for n in years]
        )

        f_simple = MathTex(r"A = P(1 + nr)", font_size=38, color=BLUE)
        f_compound = MathTex(r"A = P(1 + r)^n", font_size=38, color=ORANGE)
        t_simple = Text("单利：线性增长", font=cjk, font_size=24, color=BLUE)
        t_compound = Text("复利：指数增长", font=cjk, font_size=24, color=ORANGE)
        legend = VGroup(t_simple, f_simple, t_compound, f_compound).arrange(DOWN, buff=0.3)
        legend.to_edge(RIGHT, buff=0.9).shift(UP * 0.8)
        values = MathTex(r"1000 \times 1.1^{10} \approx 2593.74", font_size=34)
        values.next_to(legend, DOWN, buff=0.5)
        rule = VGroup(
            Text("72 法则：本金翻倍约需", font=cjk, font_size=24),
            MathTex(r"n \approx \frac{72}{100r}", font_size=34),
        ).arrange(RIGHT, buff=0.2)
        rule.next_to(values, DOWN, buff=0.4)
        right_col = VGroup(legend, values, rule)
        right_col.to_edge(RIGHT, buff=0.4)

        self.play(Create(simple), FadeIn(t_simple), Write(f_simple), run_time=1.5)
        self.play(Create(compound), FadeIn(t_compound), Write(f_compound), run_time=1.5)
        self.play(LaggedStart(*[FadeIn(d, scale=2) for d in dots], lag_ratio=0.1, run_time=1))

        # Gap after 10 years
        top = axes.c2p(10, principal * (1 + rate) ** 10)
        low = axes.c2p(10, principal * (1 + 10 * rate))
        gap = DoubleArrow(low, top, buff=0.05, color=YELLOW, tip_length=0.15)
        gap.shift(RIGHT * 0.3)
        gap_label = MathTex(r"\approx 594", font_size=32, color=YELLOW)
        gap_label.next_to(gap, RIGHT, buff=0.15)
        self.play(GrowFromCenter(gap), FadeIn(gap_label))

        self.play(Write(values))
        self.play(FadeIn(rule, shift=UP * 0.2), Indicate(f_compound))
        self.wait(1)
