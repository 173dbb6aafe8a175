from manim import *


class BinarySearchScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("二分查找：在有序数组中找 23", font=cjk, font_size=38)
        title.to_edge(UP, buff=0.4)
        self.play(Write(title))

        data = [2, 5, 8, 12, 16, 23, 38, 45, 56, 72]
        cells = VGroup()
        for value in data:
            square = Square(side_length=1.0, color=BLUE_B, fill_opacity=0.15)
            number = Text(str(value), font=cjk, font_size=28).move_to(square)
            cells.add(VGroup(square, number))
        cells.arrange(RIGHT, buff=0.12).move_to(UP * 0.6)

        indices = VGroup(
            *[
                Text(str(i), font=cjk, font_size=20, color=GRAY).next_to(cells[i], UP, buff=0.12)
                for i in range(len(data))
            ]
        )
        self.play(LaggedStart(*[FadeIn(c) for c in cells], lag_ratio=0.08), FadeIn(indices))

        def pointer(i, name, color):
            arrow = Arrow(UP * 0.0, UP * 0.8, buff=0, color=color, stroke_width=5)
            arrow.next_to(cells[i], DOWN, buff=0.1)
            label = Text(name, font=cjk, font_size=22, color=color)
            label.next_to(arrow, DOWN, buff=0.08)
            return VGroup(arrow, label)

        steps = [(0, 9, 4, "16 < 23，向右找"), (5, 9, 7, "45 > 23，向左找"), (5, 6, 5, "23 = 23，找到！")]
        status = Text("", font=cjk, font_size=28)
        status.move_to(DOWN * 2.6)
        low_p = pointer(0, "low", GREEN)
        high_p = pointer(9, "high", RED)
        self.play(FadeIn(low_p), FadeIn(high_p))

        for k, (low, high, mid, message) in enumerate(steps):
            new_low = pointer(low, "low", GREEN)
            new_high = pointer(high, "high", RED)
            self.play(Transform(low_p, new_low), Transform(high_p, new_high), run_time=0.6)
            # Grey out cells outside [low, high]
            fades = [
                cells[i].animate.set_opacity(0.25)
                for i in range(len(data))
                if i < low or i > high
            ]
            if fades:
                self.play(*fades, run_time=0.4)
            mid_box = SurroundingRectangle(cells[mid], color=YELLOW, buff=0.06)
            new_status = Text(f"mid = {mid}：{message}", font=cjk, font_size=28)
            new_status.move_to(DOWN * 2.6)
            self.play(Create(mid_box), ReplacementTransform(status, new_status), run_time=0.7)
            status = new_status
            if k < len(steps) - 1:
                self.play(FadeOut(mid_box), run_time=0.3)

        self.play(cells[5][0].animate.set_fill(GREEN, opacity=0.6))
        cost = MathTex(r"T(n) = O(\log n)", font_size=40, color=YELLOW)
        cost.next_to(status, DOWN, buff=0.35)
        self.play(Write(cost))
        self.wait(1)
