from manim import *


class InequalityNumberLineScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("一元一次不等式与数轴", font=cjk, font_size=40)
        title.to_edge(UP, buff=0.4)
        self.play(FadeIn(title, shift=DOWN * 0.2))

        # Step-by-step solution, each step replaces the previous one
        steps = [
            MathTex(r"2x - 3 > 1", font_size=52),
            MathTex(r"2x > 4", font_size=52),
            MathTex(r"x > 2", font_size=52, color=YELLOW),
        ]
        for step in steps:
            step.next_to(title, DOWN, buff=0.6)
        hints = [
            Text("原不等式", font=cjk, font_size=26),
            Text("两边同时加 3", font=cjk, font_size=26),
            Text("两边同时除以 2，不等号方向不变", font=cjk, font_size=26),
        ]
        for hint in hints:
            hint.next_to(steps[0], DOWN, buff=0.35)

        self.play(Write(steps[0]), FadeIn(hints[0]))
        for k in range(1, 3):
            self.play(
                ReplacementTransform(steps[k - 1], steps[k]),
                ReplacementTransform(hints[k - 1], hints[k]),
                run_time=0.9,
            )
            self.wait(0.3)

        number_line = NumberLine(
            x_range=[-5, 5, 1],
            length=10,
            include_numbers=True,
            font_size=30,
        )
        number_line.shift(DOWN * 1.3)
        self.play(Create(number_line), run_time=1)

        # Open circle at 2 and a ray to the right
        open_dot = Circle(radius=0.12, color=YELLOW, stroke_width=4)
        open_dot.move_to(number_line.n2p(2))
        ray = Arrow(
            number_line.n2p(2) + RIGHT * 0.12,
            number_line.n2p(5) + RIGHT * 0.3,
            buff=0,
            color=YELLOW,
            stroke_width=6,
        ).shift(UP * 0.45)
        riser = Line(open_dot.get_top(), ray.get_start(), color=YELLOW, stroke_width=4)
        self.play(Create(open_dot))
        self.play(Create(riser), GrowArrow(ray))

        rule = VGroup(
            Text("空心圆圈：不包含端点 2", font=cjk, font_size=26),
            Text("射线向右：所有大于 2 的数", font=cjk, font_size=26),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.25)
        rule.next_to(number_line, DOWN, buff=0.8)
        self.play(LaggedStart(*[FadeIn(r, shift=UP * 0.2) for r in rule], lag_ratio=0.4))
        self.play(Indicate(steps[2], color=GREEN), Indicate(open_dot, color=GREEN))
        self.wait(1)
