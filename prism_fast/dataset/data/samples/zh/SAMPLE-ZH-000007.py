from manim import *


class SupplyDemandScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("供给与需求：市场均衡", font=cjk, font_size=40)
        title.to_edge(UP, buff=0.35)
        self.play(FadeIn(title))

        axes = Axes(
            x_range=[0, 10, 2],
            y_range=[0, 10, 2],
            x_length=5.5,
            y_length=4.8,
            axis_config={"include_numbers": True, "font_size": 22},
        )
        axes.to_edge(LEFT, buff=1.0).shift(DOWN * 0.15)
        q_label = Text("数量 Q", font=cjk, font_size=22).next_to(axes.x_axis, DOWN, buff=0.45)
        p_label = Text("价格 P", font=cjk, font_size=22).next_to(axes.y_axis, UP, buff=0.15)
        self.play(Create(axes), FadeIn(q_label), FadeIn(p_label))

        # Q_d = 10 - P  ->  P = 10 - Q ;  Q_s = 2 + P  ->  P = Q - 2
        demand = axes.plot(lambda q: 10 - q, x_range=[1, 9], color=BLUE)
        supply = axes.plot(lambda q: q - 2, x_range=[2.5, 10], color=ORANGE)
        d_tag = Text("需求 D", font=cjk, font_size=24, color=BLUE)
        d_tag.next_to(axes.c2p(9, 1), UR, buff=0.1)
        s_tag = Text("供给 S", font=cjk, font_size=24, color=ORANGE)
        s_tag.next_to(axes.c2p(10, 8), LEFT, buff=0.25)
        self.play(Create(demand), FadeIn(d_tag))
        self.play(Create(supply), FadeIn(s_tag))

        # Equilibrium: the two curves meet at Q = 6, P = 4
        eq_point = axes.c2p(6, 4)
        dot = Dot(eq_point, color=YELLOW, radius=0.09)
        h_line = DashedLine(axes.c2p(0, 4), eq_point, color=GRAY)
        v_line = DashedLine(axes.c2p(6, 0), eq_point, color=GRAY)
        self.play(FadeIn(dot, scale=2), Create(h_line), Create(v_line))
        eq_tag = Text("均衡点 E", font=cjk, font_size=24, color=YELLOW)
        eq_tag.next_to(dot, RIGHT, buff=0.25)
        self.play(FadeIn(eq_tag))

        # Algebra on the right side
        lines = VGroup(
            MathTex(r"Q_d = 10 - P", font_size=38, color=BLUE),
            MathTex(r"Q_s = 2 + P", font_size=38, color=ORANGE),
            MathTex(r"10 - P = 2 + P", font_size=38),
            MathTex(r"P^* = 4,\quad Q^* = 6", font_size=42, color=YELLOW),
        ).arrange(DOWN, buff=0.4)
        lines.to_edge(RIGHT, buff=1.2).shift(UP * 0.4)
        self.play(Write(lines[0]), Write(lines[1]))
        self.play(TransformFromCopy(VGroup(lines[0], lines[1]), lines[2]))
        self.play(Write(lines[3]))
        box = SurroundingRectangle(lines[3], color=YELLOW, buff=0.15)
        self.play(Create(box))

        note = Text("需求量 = 供给量 时市场出清", font=cjk, font_size=26)
        note.next_to(box, DOWN, buff=0.5)
        self.play(FadeIn(note, shift=UP * 0.2), Indicate(dot, scale_factor=1.8))
        self.wait(0.5)
