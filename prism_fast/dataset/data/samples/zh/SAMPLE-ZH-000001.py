from manim import *


class PythagorasScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("勾股定理", font=cjk, font_size=44).to_edge(UP, buff=0.4)
        self.play(Write(title))

        # Right triangle with legs 4 and 3 (scaled by 0.5), right angle at A
        A = np.array([0.0, 0.0, 0.0])
        B = np.array([2.0, 0.0, 0.0])
        C = np.array([0.0, 1.5, 0.0])
        triangle = Polygon(A, B, C, color=WHITE, stroke_width=4, fill_opacity=0.15)
        right_mark = RightAngle(
            Line(A, B), Line(A, C), length=0.25, color=WHITE
        )

        sq_b = Polygon(A, B, B + DOWN * 2, A + DOWN * 2, color=BLUE, fill_opacity=0.45)
        sq_a = Polygon(A, C, C + LEFT * 1.5, A + LEFT * 1.5, color=GREEN, fill_opacity=0.45)
        normal = np.array([1.5, 2.0, 0.0])
        sq_c = Polygon(B, C, C + normal, B + normal, color=ORANGE, fill_opacity=0.45)
        # Shrink each square slightly so that neighbouring shapes do not share edges
        for square in (sq_a, sq_b, sq_c):
            square.scale(0.96)

        lab_a = MathTex("a^2", font_size=44).move_to(sq_a.get_center())
        lab_b = MathTex("b^2", font_size=44).move_to(sq_b.get_center())
        lab_c = MathTex("c^2", font_size=48).move_to(sq_c.get_center())

        figure = VGroup(sq_a, sq_b, sq_c, triangle, right_mark, lab_a, lab_b, lab_c)
        figure.to_edge(LEFT, buff=1.0).shift(DOWN * 0.5)

        self.play(Create(triangle), Create(right_mark))
        self.play(
            LaggedStart(
                FadeIn(sq_a), FadeIn(sq_b), FadeIn(sq_c), lag_ratio=0.3
            ),
            run_time=1.5,
        )
        self.play(Write(lab_a), Write(lab_b), Write(lab_c))

        # Right-hand side: statement and example
        statement = Text("两直角边的平方和等于斜边的平方", font=cjk, font_size=28)
        formula = MathTex("a^2", "+", "b^2", "=", "c^2", font_size=56)
        formula[0].set_color(GREEN)
        formula[2].set_color(BLUE)
        formula[4].set_color(ORANGE)
        example_title = Text("例：三边为 3、4、5", font=cjk, font_size=28)
        example = MathTex("3^2 + 4^2 = 9 + 16 = 25 = 5^2", font_size=40)

        right_col = VGroup(statement, formula, example_title, example)
        right_col.arrange(DOWN, buff=0.5)
        right_col.to_edge(RIGHT, buff=0.8).shift(DOWN * 0.3)

        self.play(FadeIn(statement, shift=UP * 0.2))
        self.play(Write(formula))
        box = SurroundingRectangle(formula, color=YELLOW, buff=0.15)
        self.play(Create(box))
        self.wait(0.5)

        self.play(FadeIn(example_title), Write(example))
        self.play(Indicate(lab_c, color=YELLOW), Indicate(formula[4], color=YELLOW))
        self.wait(1)
