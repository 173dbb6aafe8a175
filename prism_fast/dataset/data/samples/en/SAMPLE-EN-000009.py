from manim import *


class SupplyDemandScene(Scene):
    def construct(self):
        title = Text("Supply and Demand", font_size=40).to_edge(UP, buff=0.3)
        self.play(Write(title))

        axes = Axes(
            x_range=[0, 10, 1],
            y_range=[0, 12, 2],
            x_length=6.5,
            y_length=4.9,
            tips=False,
            axis_config={"include_numbers": True, "font_size": 20},
        )
        axes.to_edge(LEFT, buff=0.9).shift(UP * 0.05)
        x_title = Text("Quantity", font_size=22).next_to(axes.x_axis, DOWN, buff=0.4)
        y_title = Text("Price", font_size=22).rotate(PI / 2)
        y_title.next_to(axes.y_axis, LEFT, buff=0.45)
        self.play(Create(axes), FadeIn(x_title), FadeIn(y_title))

        demand = axes.plot(lambda q: 10 - q, x_range=[0.5, 9.5], color=BLUE)
        supply = axes.plot(lambda q: 2 + q, x_range=[0, 9.5], color=ORANGE)
        d_lab = Text("D", font_size=26, color=BLUE).next_to(axes.c2p(9.5, 0.5), UP, buff=0.15)
        s_lab = Text("S", font_size=26, color=ORANGE).next_to(axes.c2p(9.5, 11.5), RIGHT, buff=0.15)
        self.play(Create(demand), Create(supply), FadeIn(d_lab), FadeIn(s_lab), run_time=1.5)

        def equilibrium_marks(q, p, color):
            dot = Dot(axes.c2p(q, p), color=color)
            h_line = DashedLine(axes.c2p(0, p), axes.c2p(q, p), color=color, dash_length=0.1)
            v_line = DashedLine(axes.c2p(q, 0), axes.c2p(q, p), color=color, dash_length=0.1)
            return VGroup(h_line, v_line, dot)

        eq1 = equilibrium_marks(4, 6, YELLOW)
        self.play(Create(eq1))

        # Algebra panel on the right
        panel = VGroup(
            MathTex("D: P = 10 - Q", font_size=34, color=BLUE),
            MathTex("S: P = 2 + Q", font_size=34, color=ORANGE),
            MathTex("10 - Q = 2 + Q", font_size=34),
            MathTex("Q^* = 4,\\ P^* = 6", font_size=36, color=YELLOW),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.35)
        panel.to_edge(RIGHT, buff=0.7).shift(UP * 0.6)
        self.play(LaggedStart(*[Write(m) for m in panel], lag_ratio=0.5), run_time=2)
        self.wait(0.3)

        # Demand rises: the curve shifts to the right
        demand2 = axes.plot(lambda q: 12 - q, x_range=[0.5, 9.5], color=BLUE_B)
        d2_lab = Text("D'", font_size=26, color=BLUE_B).next_to(axes.c2p(9.5, 2.5), UP, buff=0.15)
        shift_note = Text("Incomes rise:\ndemand shifts right", font_size=24, line_spacing=0.8)
        shift_note.next_to(panel, DOWN, buff=0.5)
        self.play(
            ReplacementTransform(demand.copy(), demand2),
            FadeIn(d2_lab),
            FadeIn(shift_note),
            run_time=1.2,
        )

        eq2 = equilibrium_marks(5, 7, GREEN)
        new_result = MathTex("Q^* = 5,\\ P^* = 7", font_size=36, color=GREEN)
        new_result.next_to(shift_note, DOWN, buff=0.35)
        self.play(Create(eq2), Write(new_result))
        self.play(Indicate(eq2[2], color=GREEN), Indicate(new_result, color=GREEN))
        self.wait(1)
