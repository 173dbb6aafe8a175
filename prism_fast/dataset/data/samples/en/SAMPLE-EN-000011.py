from manim import *


class CentralTendencyScene(Scene):
    def construct(self):
        title = Text("Mean, Median and Mode", font_size=40).to_edge(UP, buff=0.3)
        data_tex = MathTex("\\text{Data: } 2,\\ 3,\\ 3,\\ 5,\\ 7,\\ 10", font_size=36)
        data_tex.next_to(title, DOWN, buff=0.3)
        self.play(Write(title))
        self.play(FadeIn(data_tex, shift=DOWN * 0.2))

        line = NumberLine(
            x_range=[0, 11, 1],
            length=10.5,
            include_numbers=True,
            font_size=26,
        )
        line.shift(DOWN * 0.6)
        self.play(Create(line))

        # Stack repeated values as a dot plot
        data = [2, 3, 3, 5, 7, 10]
        dots = VGroup()
        seen = {}
        for value in data:
            level = seen.get(value, 0)
            seen[value] = level + 1
            dot = Dot(line.n2p(value) + UP * (0.35 + 0.4 * level), radius=0.14, color=BLUE)
            dots.add(dot)
        self.play(LaggedStart(*[FadeIn(d, shift=DOWN * 0.3) for d in dots], lag_ratio=0.2))
        self.wait(0.3)

        def marker(value, text, color, length, side):
            # Arrow pointing up at the number line, label beside or below its tail
            tail = line.n2p(value) + DOWN * (0.5 + length)
            arrow = Arrow(
                tail,
                line.n2p(value) + DOWN * 0.5,
                buff=0,
                color=color,
                stroke_width=4,
                max_tip_length_to_length_ratio=0.25,
            )
            label = Text(text, font_size=24, color=color)
            if side is DOWN:
                label.next_to(tail, DOWN, buff=0.12)
            else:
                label.next_to(tail, side, buff=0.12)
            return VGroup(arrow, label)

        mode_mark = marker(3, "mode = 3", GREEN, 0.9, LEFT)
        median_mark = marker(4, "median = 4", YELLOW, 1.4, DOWN)
        mean_mark = marker(5, "mean = 5", RED, 0.9, RIGHT)

        # Calculations in a row above the number line
        mean_calc = MathTex("\\bar{x} = \\frac{30}{6} = 5", font_size=34, color=RED)
        median_calc = MathTex("\\text{median} = \\frac{3 + 5}{2} = 4", font_size=34, color=YELLOW)
        mode_calc = MathTex("\\text{mode} = 3", font_size=34, color=GREEN)
        calcs = VGroup(mean_calc, median_calc, mode_calc).arrange(RIGHT, buff=0.9)
        calcs.next_to(data_tex, DOWN, buff=0.45)

        self.play(Write(mean_calc), GrowFromEdge(mean_mark, DOWN))
        self.play(Write(median_calc), GrowFromEdge(median_mark, DOWN))
        self.play(Write(mode_calc), GrowFromEdge(mode_mark, DOWN))
        self.play(Indicate(VGroup(dots[1], dots[2]), color=GREEN))

        # The outlier pulls the mean upward
        outlier_box = SurroundingRectangle(dots[5], color=ORANGE, buff=0.12)
        outlier_note = Text("outlier pulls the mean", font_size=22, color=ORANGE)
        outlier_note.next_to(outlier_box, UP, buff=0.15)
        self.play(Create(outlier_box), FadeIn(outlier_note))
        self.wait(1)
