from manim import *


class DiceSumScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("掷两枚骰子：点数和的分布", font=cjk, font_size=40)
        title.to_edge(UP, buff=0.35)
        self.play(FadeIn(title, shift=DOWN * 0.2))

        sums = list(range(2, 13))
        counts = [6 - abs(s - 7) for s in sums]
        unit = 0.55
        bar_width = 0.62

        bars = VGroup()
        for s, c in zip(sums, counts):
            color = YELLOW if s == 7 else BLUE
            bar = Rectangle(width=bar_width, height=c * unit, color=color, fill_opacity=0.7)
            bars.add(bar)
        bars.arrange(RIGHT, buff=0.12, aligned_edge=DOWN)
        bars.to_edge(LEFT, buff=0.8).shift(DOWN * 0.7)

        baseline = Line(
            bars.get_corner(DL) + LEFT * 0.2, bars.get_corner(DR) + RIGHT * 0.2, color=GRAY
        )
        x_labels = VGroup(
            *[MathTex(str(s), font_size=28).next_to(bar, DOWN, buff=0.15) for s, bar in zip(sums, bars)]
        )
        count_labels = VGroup(
            *[Text(str(c), font=cjk, font_size=22).next_to(bar, UP, buff=0.1) for c, bar in zip(counts, bars)]
        )
        axis_name = Text("点数和 S", font=cjk, font_size=24).next_to(x_labels, DOWN, buff=0.25)

        self.play(Create(baseline), FadeIn(x_labels), FadeIn(axis_name))
        self.play(
            LaggedStart(*[GrowFromEdge(bar, DOWN) for bar in bars], lag_ratio=0.1),
            run_time=2,
        )
        self.play(FadeIn(count_labels))

        total = MathTex(r"6 \times 6 = 36", font_size=40)
        total_note = Text("等可能的样本点总数", font=cjk, font_size=24)
        prob = MathTex(r"P(S = 7) = \frac{6}{36} = \frac{1}{6}", font_size=40, color=YELLOW)
        expect = MathTex(r"E(S) = 7", font_size=40)
        panel = VGroup(total_note, total, prob, expect).arrange(DOWN, buff=0.45)
        panel.to_edge(RIGHT, buff=0.6).shift(DOWN * 0.2)

        self.play(FadeIn(total_note), Write(total))
        highlight = SurroundingRectangle(VGroup(bars[5], count_labels[5]), color=YELLOW, buff=0.08)
        self.play(Create(highlight), Write(prob))

        axis_start = highlight.get_top() + UP * 0.08
        sym_axis = DashedLine(axis_start, axis_start + UP * 0.6, color=GRAY_B)
        sym_note = Text("关于 S = 7 对称", font=cjk, font_size=24, color=GRAY_B)
        sym_note.next_to(sym_axis, UP, buff=0.1)
        self.play(Create(sym_axis), FadeIn(sym_note))
        self.play(Write(expect))
        self.play(Indicate(bars[0]), Indicate(bars[10]))
        self.wait(1)
