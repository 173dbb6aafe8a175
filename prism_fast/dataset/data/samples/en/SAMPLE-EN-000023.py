from manim import *


class VectorAdditionScene(Scene):
    def construct(self):
        title = Text("Vector Addition", font_size=40).to_edge(UP, buff=0.3)
        self.play(Write(title))

        axes = Axes(
            x_range=[-1, 5, 1],
            y_range=[-1, 4, 1],
            x_length=6.0,
            y_length=5.0,
            tips=False,
            axis_config={"include_numbers": True, "font_size": 20},
        )
        axes.to_edge(LEFT, buff=0.8).shift(DOWN * 0.4)
        self.play(Create(axes))

        origin = axes.c2p(0, 0)
        u_end = axes.c2p(3, 1)
        v_end = axes.c2p(1, 2)
        sum_end = axes.c2p(4, 3)

        u_arrow = Arrow(origin, u_end, buff=0, color=BLUE)
        v_arrow = Arrow(origin, v_end, buff=0, color=GREEN)
        u_label = MathTex("\\vec{u}", font_size=34, color=BLUE).next_to(u_end, DOWN, buff=0.2)
        v_label = MathTex("\\vec{v}", font_size=34, color=GREEN).next_to(v_end, LEFT, buff=0.2)

        self.play(GrowArrow(u_arrow), Write(u_label))
        self.play(GrowArrow(v_arrow), Write(v_label))
        self.wait(0.4)

        # Tip-to-tail: move a copy of v to the tip of u
        v_moved = Arrow(u_end, sum_end, buff=0, color=GREEN)
        v_moved_label = MathTex("\\vec{v}", font_size=34, color=GREEN)
        v_moved_label.next_to(v_moved.get_center(), RIGHT, buff=0.2)
        self.play(
            TransformFromCopy(v_arrow, v_moved),
            TransformFromCopy(v_label, v_moved_label),
            run_time=1.2,
        )

        # Resultant and parallelogram
        sum_arrow = Arrow(origin, sum_end, buff=0, color=YELLOW)
        sum_label = MathTex("\\vec{u} + \\vec{v}", font_size=34, color=YELLOW)
        sum_label.next_to(sum_end, UP, buff=0.15)
        u_moved = DashedLine(v_end, sum_end, color=BLUE, dash_length=0.1)
        self.play(GrowArrow(sum_arrow), Write(sum_label), Create(u_moved))

        # Component computation on the right
        algebra = VGroup(
            MathTex("\\vec{u} = (3, 1)", font_size=36, color=BLUE),
            MathTex("\\vec{v} = (1, 2)", font_size=36, color=GREEN),
            MathTex("\\vec{u} + \\vec{v} = (3 + 1,\\ 1 + 2)", font_size=36),
            MathTex("= (4, 3)", font_size=36, color=YELLOW),
            MathTex("|\\vec{u} + \\vec{v}| = \\sqrt{4^2 + 3^2} = 5", font_size=34),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.3)
        algebra.to_edge(RIGHT, buff=0.6).shift(DOWN * 0.2)

        self.play(
            LaggedStart(*[FadeIn(line, shift=LEFT * 0.2) for line in algebra[:4]], lag_ratio=0.35),
            run_time=1.5,
        )
        self.play(Write(algebra[4]))
        self.play(Indicate(sum_arrow, color=YELLOW), Indicate(algebra[3]))
        self.wait(1)
