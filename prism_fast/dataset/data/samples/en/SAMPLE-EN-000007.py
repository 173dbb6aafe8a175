from manim import *


class BubbleSortScene(Scene):
    def construct(self):
        title = Text("Bubble Sort: the First Pass", font_size=38).to_edge(UP, buff=0.35)
        self.play(Write(title))

        values = [5, 3, 8, 2, 6]
        unit = 0.45
        baseline = DOWN * 2.2
        xs = [-4.0 + 2.0 * i for i in range(len(values))]

        # Build one bar (rectangle + value label) per element
        bars = []
        for i, v in enumerate(values):
            rect = Rectangle(
                width=1.2, height=v * unit, color=BLUE, fill_opacity=0.7
            )
            rect.move_to(np.array([xs[i], 0, 0]) + baseline, aligned_edge=DOWN)
            label = Text(str(v), font_size=30).next_to(rect, UP, buff=0.15)
            bars.append(VGroup(rect, label))

        axis = Line(LEFT * 5.2, RIGHT * 5.2, color=GRAY).move_to(baseline)
        self.play(
            Create(axis),
            LaggedStart(*[GrowFromEdge(b, DOWN) for b in bars], lag_ratio=0.15),
            run_time=1.5,
        )

        caption = Text("Compare neighbours, swap if out of order", font_size=26)
        caption.to_edge(DOWN, buff=0.6)
        self.play(FadeIn(caption))
        self.wait(0.4)

        order = list(range(len(values)))  # order[pos] = index of bar at that position
        for j in range(len(values) - 1):
            left_bar = bars[order[j]]
            right_bar = bars[order[j + 1]]
            pair = VGroup(left_bar, right_bar)
            frame = SurroundingRectangle(pair, color=YELLOW, buff=0.12)
            self.play(Create(frame), run_time=0.3)
            if values[order[j]] > values[order[j + 1]]:
                # Swap positions of the two bars
                self.play(
                    left_bar.animate.shift(RIGHT * 2.0),
                    right_bar.animate.shift(LEFT * 2.0),
                    run_time=0.6,
                )
                order[j], order[j + 1] = order[j + 1], order[j]
            else:
                self.play(Indicate(pair, scale_factor=1.05), run_time=0.5)
            self.play(FadeOut(frame), run_time=0.25)

        # The largest element is now in its final place
        last = bars[order[-1]]
        self.play(last[0].animate.set_fill(GREEN, opacity=0.8))

        result = MathTex("[3,\\ 5,\\ 2,\\ 6,\\ \\mathbf{8}]", font_size=40)
        result.next_to(title, DOWN, buff=0.3)
        cost = MathTex("\\text{Worst case: } \\frac{n(n-1)}{2} = O(n^2)", font_size=34)
        cost.move_to(caption)
        self.play(Write(result), ReplacementTransform(caption, cost))
        self.wait(1)
