from manim import *


class BubbleSortScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("冒泡排序：第一轮", font=cjk, font_size=42).to_edge(UP, buff=0.4)
        self.play(Write(title))

        values = [5, 2, 4, 1, 3]
        unit = 0.7
        bars = []
        for v in values:
            rect = Rectangle(
                width=1.0, height=v * unit, color=BLUE, fill_opacity=0.7
            )
            num = Text(str(v), font=cjk, font_size=30)
            num.next_to(rect, UP, buff=0.12)
            bars.append(VGroup(rect, num))

        # Bars stand on a common baseline
        slot_x = [-3.2 + 1.6 * i for i in range(len(values))]
        baseline_y = -2.3
        for bar, x in zip(bars, slot_x):
            bar[0].move_to([x, baseline_y + bar[0].height / 2, 0])
            bar[1].next_to(bar[0], UP, buff=0.12)
        chart = VGroup(*bars).shift(LEFT * 1.2)
        slot_x = [x - 1.2 for x in slot_x]
        base = Line(
            [slot_x[0] - 0.8, baseline_y, 0], [slot_x[-1] + 0.8, baseline_y, 0],
            color=GRAY,
        )
        self.play(Create(base), LaggedStart(*[FadeIn(b, shift=UP * 0.3) for b in chart], lag_ratio=0.15))

        rule = Text("相邻比较，逆序则交换", font=cjk, font_size=26)
        cost = MathTex(r"T(n) = O(n^2)", font_size=36)
        info = VGroup(rule, cost).arrange(DOWN, buff=0.35)
        info.to_edge(RIGHT, buff=0.5).shift(UP * 1.2)
        self.play(FadeIn(info))

        order = list(range(len(values)))  # order[k] = index of bar at slot k
        for j in range(len(values) - 1):
            left, right = bars[order[j]], bars[order[j + 1]]
            self.play(
                left[0].animate.set_color(YELLOW),
                right[0].animate.set_color(YELLOW),
                run_time=0.35,
            )
            if values[order[j]] > values[order[j + 1]]:
                self.play(
                    left.animate.shift(RIGHT * 1.6),
                    right.animate.shift(LEFT * 1.6),
                    run_time=0.7,
                )
                order[j], order[j + 1] = order[j + 1], order[j]
            self.play(
                left[0].animate.set_color(BLUE),
                right[0].animate.set_color(BLUE),
                run_time=0.2,
            )

        largest = bars[order[-1]]
        self.play(largest[0].animate.set_color(GREEN))
        done = Text("最大值 5 已浮到末尾", font=cjk, font_size=28, color=GREEN)
        done.next_to(info, DOWN, buff=0.6)
        self.play(FadeIn(done, shift=UP * 0.2), Indicate(largest))
        self.wait(1)
