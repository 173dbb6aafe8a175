from manim import *


class NewtonSecondLawScene(Scene):
    def construct(self):
        title = Text("Newton's Second Law", font_size=40)
        title.to_edge(UP, buff=0.35)
        law = MathTex("F_{\\text{net}} = m a", font_size=44)
        law.next_to(title, DOWN, buff=0.3)
        self.play(Write(title))
        self.play(Write(law))

        # Floor and box on the left side
        floor = Line(LEFT * 6.2, LEFT * 0.6, color=GRAY).shift(DOWN * 1.6)
        box = Square(side_length=1.4, color=BLUE, fill_opacity=0.6)
        box.next_to(floor, UP, buff=0).shift(LEFT * 0.2)
        mass = MathTex("5\\,\\text{kg}", font_size=34).move_to(box)
        self.play(Create(floor), FadeIn(box), Write(mass))

        # Force arrows drawn from the edges of the box
        applied = Arrow(
            box.get_right(), box.get_right() + RIGHT * 1.9, buff=0, color=GREEN
        )
        friction = Arrow(
            box.get_left(), box.get_left() + LEFT * 1.3, buff=0, color=RED
        )
        normal = Arrow(box.get_top(), box.get_top() + UP * 1.3, buff=0, color=YELLOW)
        weight = Arrow(
            box.get_bottom(), box.get_bottom() + DOWN * 1.3, buff=0, color=ORANGE
        )

        f_lab = MathTex("F = 30\\,\\text{N}", font_size=28, color=GREEN)
        f_lab.next_to(applied, UP, buff=0.15)
        fr_lab = MathTex("f = 10\\,\\text{N}", font_size=26, color=RED)
        fr_lab.next_to(friction, UP, buff=0.15)
        n_lab = MathTex("N", font_size=30, color=YELLOW).next_to(normal, RIGHT, buff=0.15)
        w_lab = MathTex("W", font_size=30, color=ORANGE).next_to(weight, RIGHT, buff=0.15)

        self.play(GrowArrow(normal), GrowArrow(weight), Write(n_lab), Write(w_lab))
        self.play(GrowArrow(applied), GrowArrow(friction), Write(f_lab), Write(fr_lab))
        self.wait(0.4)

        # Calculation on the right side
        calc = VGroup(
            MathTex("N = W \\Rightarrow \\text{vertical forces cancel}", font_size=30),
            MathTex("F_{\\text{net}} = 30 - 10 = 20\\,\\text{N}", font_size=32),
            MathTex("a = \\frac{F_{\\text{net}}}{m} = \\frac{20}{5}", font_size=32),
            MathTex("a = 4\\,\\text{m/s}^2", font_size=38, color=YELLOW),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.4)
        calc.to_edge(RIGHT, buff=0.5).shift(DOWN * 0.8)

        for line in calc:
            self.play(FadeIn(line, shift=LEFT * 0.2), run_time=0.6)

        result_box = SurroundingRectangle(calc[-1], color=YELLOW, buff=0.15)
        self.play(Create(result_box))

        # Show the net force as a single arrow
        net_start = box.get_corner(UR) + UP * 0.9 + RIGHT * 0.4
        net = Arrow(net_start, net_start + RIGHT * 1.3, buff=0, color=WHITE)
        net_lab = MathTex("F_{\\text{net}}", font_size=28).next_to(net, UP, buff=0.12)
        self.play(GrowArrow(net), FadeIn(net_lab))
        self.play(Indicate(calc[1]))
        self.wait(1)
