from manim import *


class ArithmeticSumScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("倒序相加：求 1 + 2 + … + 10", font=cjk, font_size=38)
        title.to_edge(UP, buff=0.4)
        self.play(FadeIn(title, shift=DOWN * 0.2))

        n = 10
        cell_w = 0.8

        def make_row(numbers, color):
            row = VGroup()
            for v in numbers:
                box = Square(side_length=cell_w, color=color, fill_opacity=0.2)
                num = MathTex(str(v), font_size=34).move_to(box)
                row.add(VGroup(box, num))
            row.arrange(RIGHT, buff=0.08)
            return row

        forward = make_row(range(1, n + 1), BLUE)
        backward = make_row(range(n, 0, -1), ORANGE)
        sums = make_row([n + 1] * n, GREEN)
        grid = VGroup(forward, backward, sums).arrange(DOWN, buff=0.35)
        grid.shift(RIGHT * 0.5 + UP * 0.5)

        tags = VGroup(
            MathTex("S", font_size=40),
            MathTex("S", font_size=40),
            MathTex("2S", font_size=40),
        )
        for tag, row in zip(tags, grid):
            tag.next_to(row, LEFT, buff=0.4)

        self.play(FadeIn(tags[0]), LaggedStart(*[FadeIn(c) for c in forward], lag_ratio=0.08, run_time=1))
        note = Text("正着写一遍，倒着再写一遍", font=cjk, font_size=26)
        note.next_to(grid, UP, buff=0.3)
        self.play(FadeIn(tags[1]), FadeIn(note), TransformFromCopy(forward, backward), run_time=1.2)

        # Each column adds up to 11
        column = SurroundingRectangle(VGroup(forward[0], backward[0]), color=YELLOW, buff=0.06)
        self.play(Create(column))
        self.play(column.animate.move_to(VGroup(forward[4], backward[4])), run_time=0.8)
        self.play(FadeOut(column), FadeIn(tags[2]), LaggedStart(*[FadeIn(c) for c in sums], lag_ratio=0.06, run_time=1))

        brace = Brace(sums, DOWN, buff=0.15)
        brace_text = Text("共 10 个 11", font=cjk, font_size=26).next_to(brace, DOWN, buff=0.12)
        self.play(GrowFromCenter(brace), FadeIn(brace_text))

        result = MathTex(
            r"S_{10} = \frac{10 \times (1 + 10)}{2} = 55", font_size=40, color=YELLOW
        )
        result.next_to(brace_text, DOWN, buff=0.35)
        general = MathTex(r"S_n = \frac{n(a_1 + a_n)}{2}", font_size=40)
        general.move_to(result)
        self.play(Write(result))
        self.play(ReplacementTransform(result, general))
        self.play(Indicate(general, color=GREEN))
        self.wait(1)
