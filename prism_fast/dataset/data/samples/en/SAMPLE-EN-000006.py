from manim import *


class BinarySearchScene(Scene):
    def construct(self):
        title = Text("Binary Search", font_size=42).to_edge(UP, buff=0.35)
        subtitle = Text("Find 23 in a sorted array", font_size=28, color=GRAY_A)
        subtitle.next_to(title, DOWN, buff=0.2)
        self.play(Write(title), FadeIn(subtitle))

        values = [2, 5, 8, 12, 16, 23, 38, 56, 72]
        cells = VGroup()
        for v in values:
            box = Square(side_length=1.0, color=BLUE_B, stroke_width=3)
            num = Text(str(v), font_size=30).move_to(box)
            cells.add(VGroup(box, num))
        cells.arrange(RIGHT, buff=0.12).move_to(UP * 0.4)

        indices = VGroup(
            *[
                Text(str(i), font_size=20, color=GRAY_B).next_to(cells[i], DOWN, buff=0.15)
                for i in range(len(values))
            ]
        )
        self.play(LaggedStart(*[FadeIn(c) for c in cells], lag_ratio=0.08), run_time=1.2)
        self.play(FadeIn(indices))

        # Status line at the bottom, replaced at every step
        status = Text("lo = 0, hi = 8", font_size=28).to_edge(DOWN, buff=0.9)
        self.play(FadeIn(status))

        # Sequence of (lo, hi, mid, message) for the search
        trace = [
            (0, 8, 4, "mid = 4: 16 < 23, go right"),
            (5, 8, 6, "mid = 6: 38 > 23, go left"),
            (5, 5, 5, "mid = 5: found 23"),
        ]

        window = None
        pointer = None
        for lo, hi, mid, message in trace:
            group = VGroup(*cells[lo:hi + 1])
            new_window = SurroundingRectangle(group, color=YELLOW, buff=0.1)
            new_pointer = Arrow(
                cells[mid].get_top() + UP * 1.1, cells[mid].get_top() + UP * 0.1,
                color=RED, buff=0,
            )
            new_status = Text(message, font_size=28).move_to(status)
            if window is None:
                self.play(Create(new_window), GrowArrow(new_pointer), run_time=0.8)
            else:
                self.play(
                    ReplacementTransform(window, new_window),
                    ReplacementTransform(pointer, new_pointer),
                    run_time=0.8,
                )
            self.play(ReplacementTransform(status, new_status), run_time=0.6)
            window, pointer, status = new_window, new_pointer, new_status
            self.wait(0.4)

        # Highlight the found element
        self.play(cells[5][0].animate.set_fill(GREEN, opacity=0.6), Indicate(cells[5][1]))

        complexity = MathTex("T(n) = O(\\log n)", font_size=38, color=YELLOW)
        complexity.next_to(status, DOWN, buff=0.3)
        self.play(Write(complexity))
        self.wait(1)
