from manim import *


class PythagorasScene(Scene):
    def construct(self):
        # Title
        title = Text("The Pythagorean Theorem", font_size=40)
        title.to_edge(UP, buff=0.4)
        self.play(Write(title))

        # Right triangle with legs 3 and 4 (scaled)
        u = 0.45
        a_pt = np.array([0.0, 0.0, 0.0])
        b_pt = np.array([4 * u, 0.0, 0.0])
        c_pt = np.array([0.0, 3 * u, 0.0])
        triangle = Polygon(a_pt, b_pt, c_pt, color=WHITE, stroke_width=4)
        right_mark = Square(side_length=0.22, color=WHITE, stroke_width=2)
        right_mark.move_to(a_pt + np.array([0.11, 0.11, 0.0]))

        # Squares built on each side
        sq_a = Polygon(
            a_pt, a_pt + LEFT * 3 * u, c_pt + LEFT * 3 * u, c_pt,
            color=BLUE, fill_opacity=0.45,
        )
        sq_b = Polygon(
            a_pt, b_pt, b_pt + DOWN * 4 * u, a_pt + DOWN * 4 * u,
            color=GREEN, fill_opacity=0.45,
        )
        normal = np.array([3 * u, 4 * u, 0.0])
        sq_c = Polygon(
            b_pt, b_pt + normal, c_pt + normal, c_pt,
            color=ORANGE, fill_opacity=0.45,
        )

        # A small gap keeps the squares from touching each other at the corners
        for sq in (sq_a, sq_b, sq_c):
            sq.scale(0.96)

        lab_a = MathTex("a^2", font_size=34).move_to(sq_a.get_center())
        lab_b = MathTex("b^2", font_size=34).move_to(sq_b.get_center())
        lab_c = MathTex("c^2", font_size=34).move_to(sq_c.get_center())

        figure = VGroup(sq_a, sq_b, sq_c, triangle, right_mark, lab_a, lab_b, lab_c)
        figure.move_to(LEFT * 3.4 + DOWN * 0.45)

        self.play(Create(triangle), Create(right_mark))
        self.play(
            LaggedStart(FadeIn(sq_a), FadeIn(sq_b), FadeIn(sq_c), lag_ratio=0.3),
            run_time=1.5,
        )
        self.play(Write(lab_a), Write(lab_b), Write(lab_c))
        self.wait(0.3)

        # Algebraic steps on the right
        steps = VGroup(
            MathTex("a^2 + b^2 = c^2"),
            MathTex("3^2 + 4^2 = c^2"),
            MathTex("9 + 16 = 25"),
            MathTex("c = \\sqrt{25} = 5"),
        ).arrange(DOWN, buff=0.45)
        steps.move_to(RIGHT * 3.3 + DOWN * 0.3)

        for step in steps:
            self.play(Write(step), run_time=0.8)

        box = SurroundingRectangle(steps[-1], color=YELLOW, buff=0.15)
        self.play(Create(box))
        # Emphasise the largest square without moving it
        self.play(sq_c.animate.set_fill(ORANGE, opacity=0.8))

        note = Text("Area of the big square = sum of the two small ones", font_size=24)
        note.to_edge(DOWN, buff=0.35)
        self.play(FadeIn(note, shift=UP * 0.2))
        self.wait(1)
