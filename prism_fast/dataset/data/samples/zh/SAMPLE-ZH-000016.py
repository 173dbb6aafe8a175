from manim import *


class TriangleAngleSumScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("三角形内角和等于 180°", font=cjk, font_size=40).to_edge(UP, buff=0.4)
        self.play(Write(title))

        B = np.array([-5.6, -2.4, 0])
        C = np.array([-0.6, -2.4, 0])
        A = np.array([-3.8, 1.0, 0])
        triangle = Polygon(A, B, C, color=WHITE, stroke_width=4)
        names = VGroup(
            MathTex("A", font_size=36).next_to(A, UP, buff=0.15),
            MathTex("B", font_size=36).next_to(B, DL, buff=0.1),
            MathTex("C", font_size=36).next_to(C, DR, buff=0.1),
        )
        self.play(Create(triangle), FadeIn(names))

        angle_b = Angle(Line(B, C), Line(B, A), radius=0.55, color=BLUE)
        angle_c = Angle(Line(C, A), Line(C, B), radius=0.55, color=GREEN)
        angle_a = Angle(Line(A, B), Line(A, C), radius=0.5, color=RED)
        self.play(Create(angle_a), Create(angle_b), Create(angle_c))

        # Parallel line through A
        direction = (C - B) / np.linalg.norm(C - B)
        parallel = DashedLine(A - direction * 2.4, A + direction * 2.4, color=YELLOW)
        l_label = MathTex(r"l \parallel BC", font_size=32, color=YELLOW)
        l_label.next_to(parallel.get_end(), UP, buff=0.15)
        self.play(Create(parallel), FadeIn(l_label))

        # Alternate interior angles at A equal to B and C
        copy_b = Angle(Line(A, A - direction), Line(A, B), radius=0.55, color=BLUE)
        copy_c = Angle(Line(A, C), Line(A, A + direction), radius=0.55, color=GREEN)
        self.play(
            TransformFromCopy(angle_b, copy_b),
            TransformFromCopy(angle_c, copy_c),
            run_time=1.5,
        )
        straight = Text("三个角拼成一个平角", font=cjk, font_size=26)
        straight.next_to(l_label, UP, buff=0.2).shift(LEFT * 0.6)
        self.play(FadeIn(straight, shift=DOWN * 0.2))

        # Proof text on the right
        lines = VGroup(
            Text("内错角相等：", font=cjk, font_size=28),
            MathTex(r"\angle 1 = \angle B,\quad \angle 2 = \angle C", font_size=36),
            Text("平角为 180°：", font=cjk, font_size=28),
            MathTex(r"\angle A + \angle B + \angle C = 180^\circ", font_size=38, color=YELLOW),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.35)
        lines.to_edge(RIGHT, buff=0.5).shift(DOWN * 0.6)
        tags = VGroup(
            MathTex("1", font_size=28, color=BLUE).move_to(A + np.array([-0.95, -0.25, 0])),
            MathTex("2", font_size=28, color=GREEN).move_to(A + np.array([0.95, -0.25, 0])),
        )
        self.play(FadeIn(tags), FadeIn(lines[0]), Write(lines[1]))
        self.play(FadeIn(lines[2]), Write(lines[3]))
        box = SurroundingRectangle(lines[3], color=YELLOW, buff=0.15)
        self.play(Create(box))
        self.wait(1)
