from manim import *


class VertexFormScene(Scene):
    def construct(self):
        title = Text("Quadratic Functions: Vertex Form", font_size=36)
        title.to_edge(UP, buff=0.35)
        self.play(Write(title))

        # Coordinate system on the left half of the frame
        axes = Axes(
            x_range=[-3, 4, 1],
            y_range=[-3, 6, 1],
            x_length=6,
            y_length=5.4,
            tips=False,
            axis_config={"include_numbers": True, "font_size": 20},
            x_axis_config={"numbers_to_exclude": [0, 1]},
        )
        axes.to_edge(LEFT, buff=0.6).shift(DOWN * 0.4)
        self.play(Create(axes), run_time=1.2)

        # Basic parabola y = x^2
        base = axes.plot(lambda x: x ** 2, x_range=[-2.4, 2.4], color=BLUE)
        base_label = MathTex("y = x^2", color=BLUE, font_size=34)
        base_label.move_to([3.9, 2.05, 0])
        self.play(Create(base), FadeIn(base_label))
        self.wait(0.5)

        # Shifted parabola y = (x - 1)^2 - 2
        shifted = axes.plot(
            lambda x: (x - 1) ** 2 - 2, x_range=[-1.6, 3.6], color=YELLOW
        )
        shifted_label = MathTex("y = (x-1)^2 - 2", color=YELLOW, font_size=34)
        shifted_label.move_to(base_label)
        self.play(
            ReplacementTransform(base, shifted),
            ReplacementTransform(base_label, shifted_label),
            run_time=1.5,
        )

        # Vertex and axis of symmetry
        vertex = Dot(axes.c2p(1, -2), color=RED)
        vertex_label = MathTex("(1, -2)", font_size=30, color=RED)
        vertex_label.next_to(vertex, RIGHT, buff=0.25)
        sym_line = DashedLine(
            axes.c2p(1, -2), axes.c2p(1, 5.8), color=GRAY, dash_length=0.12
        )
        self.play(FadeIn(vertex, scale=1.5), Write(vertex_label))
        self.play(Create(sym_line))

        # Summary panel on the right
        facts = VGroup(
            MathTex("f(x) = a(x-h)^2 + k", font_size=36),
            MathTex("\\text{vertex: } (h, k) = (1, -2)", font_size=32),
            MathTex("\\text{axis: } x = 1", font_size=32),
            MathTex("\\text{roots: } x = 1 \\pm \\sqrt{2}", font_size=32),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.4)
        facts.to_edge(RIGHT, buff=0.6).shift(DOWN * 0.3)
        panel = SurroundingRectangle(facts, color=WHITE, buff=0.3)

        self.play(Create(panel), Write(facts[0]))
        self.play(
            LaggedStart(*[FadeIn(f, shift=RIGHT * 0.2) for f in facts[1:]], lag_ratio=0.4),
            run_time=1.5,
        )

        # Mark the two roots
        r1 = Dot(axes.c2p(1 - 2 ** 0.5, 0), color=GREEN)
        r2 = Dot(axes.c2p(1 + 2 ** 0.5, 0), color=GREEN)
        self.play(FadeIn(r1), FadeIn(r2), Indicate(facts[3]))
        self.wait(1)
