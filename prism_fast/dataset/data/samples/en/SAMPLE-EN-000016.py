from manim import *


class CircleMeasuresScene(Scene):
    def construct(self):
        title = Text("Circumference and Area of a Circle", font_size=38)
        title.to_edge(UP, buff=0.3)
        self.play(Write(title))

        r = 0.9
        center = np.array([-3.6, 1.0, 0])
        circle = Circle(radius=r, color=BLUE, stroke_width=5).move_to(center)
        dot = Dot(center, radius=0.05)
        radius = Line(center, center + RIGHT * r, color=YELLOW)
        r_label = MathTex("r", font_size=32, color=YELLOW).next_to(radius, UP, buff=0.1)

        self.play(Create(circle), FadeIn(dot))
        self.play(Create(radius), Write(r_label))

        # Diameter: the radius grows into a chord through the centre
        diameter = Line(center + LEFT * r, center + RIGHT * r, color=ORANGE)
        d_label = MathTex("d = 2r", font_size=30, color=ORANGE)
        d_label.next_to(circle, LEFT, buff=0.3)
        self.play(
            ReplacementTransform(radius, diameter),
            r_label.animate.next_to(center + RIGHT * r / 2, UP, buff=0.1),
            FadeIn(d_label),
        )

        # Unroll the circumference into a straight segment
        start = np.array([-3.6 - PI * r, -1.4, 0])
        segment = Line(start, start + RIGHT * 2 * PI * r, color=BLUE, stroke_width=5)
        # (a copy of the circle is morphed, the original stays in place)
        unrolled = circle.copy()
        self.play(Transform(unrolled, segment), run_time=1.2)
        brace = Brace(segment, DOWN, buff=0.15)
        c_label = brace.get_tex("C = 2\\pi r")
        self.play(GrowFromCenter(brace), Write(c_label))
        self.wait(0.4)

        # Fill the disc to talk about area
        a_label = MathTex("A = \\pi r^2", font_size=32).next_to(circle, RIGHT, buff=0.4)
        self.play(circle.animate.set_fill(BLUE, opacity=0.35), Write(a_label))

        # Worked example on the right
        example = VGroup(
            Text("Example: r = 3 cm", font_size=28),
            MathTex("C = 2\\pi \\cdot 3 \\approx 18.85\\,\\text{cm}", font_size=34),
            MathTex("A = \\pi \\cdot 3^2 \\approx 28.27\\,\\text{cm}^2", font_size=34),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.35)
        example.to_edge(RIGHT, buff=0.6).shift(DOWN * 0.2)
        frame = SurroundingRectangle(example, color=GRAY_B, buff=0.3)

        self.play(Create(frame), FadeIn(example[0]))
        self.play(
            Write(example[1]),
            Write(example[2]),
            run_time=1.2,
        )
        pi_note = MathTex("\\pi = \\frac{C}{d} \\approx 3.14159", font_size=32, color=YELLOW)
        pi_note.next_to(frame, DOWN, buff=0.4)
        self.play(FadeIn(pi_note, shift=UP * 0.2))
        self.wait(1)
