from manim import *


class SeriesCircuitScene(Scene):
    def construct(self):
        title = Text("Ohm's Law in a Series Circuit", font_size=38)
        title.to_edge(UP, buff=0.35)
        law = MathTex("V = I R", font_size=44).next_to(title, DOWN, buff=0.3)
        self.play(Write(title), FadeIn(law))

        # Circuit loop drawn as a rectangle of wires on the left
        w, h = 5.0, 3.0
        center = LEFT * 3.3 + DOWN * 0.9
        ul = center + np.array([-w / 2, h / 2, 0])
        ur = center + np.array([w / 2, h / 2, 0])
        dl = center + np.array([-w / 2, -h / 2, 0])
        dr = center + np.array([w / 2, -h / 2, 0])

        # Resistors are boxes placed on the top wire
        r1 = Rectangle(width=1.2, height=0.5, color=ORANGE, fill_opacity=0.8)
        r2 = Rectangle(width=1.2, height=0.5, color=ORANGE, fill_opacity=0.8)
        r1.move_to(center + np.array([-1.1, h / 2, 0]))
        r2.move_to(center + np.array([1.1, h / 2, 0]))
        r1_lab = MathTex("2\\,\\Omega", font_size=28, color=BLACK).move_to(r1)
        r2_lab = MathTex("4\\,\\Omega", font_size=28, color=BLACK).move_to(r2)

        # Battery symbol on the left wire: long and short plates
        bat_long = Line(LEFT * 0.4, RIGHT * 0.4, stroke_width=6).move_to(
            ul + DOWN * (h / 2 - 0.12)
        )
        bat_short = Line(LEFT * 0.22, RIGHT * 0.22, stroke_width=6).move_to(
            ul + DOWN * (h / 2 + 0.12)
        )
        bat_lab = MathTex("12\\,\\text{V}", font_size=30).next_to(bat_long, RIGHT, buff=0.3)

        wires = VGroup(
            Line(ul, r1.get_left()),
            Line(r1.get_right(), r2.get_left()),
            Line(r2.get_right(), ur),
            Line(ur, dr),
            Line(dr, dl),
            Line(dl, bat_short.get_center()),
            Line(bat_long.get_center(), ul),
        ).set_color(GRAY_B)

        self.play(Create(wires), run_time=1.5)
        self.play(
            FadeIn(r1), FadeIn(r2), Write(r1_lab), Write(r2_lab),
            Create(bat_long), Create(bat_short), Write(bat_lab),
        )

        # Current direction arrow inside the loop
        current = Arrow(
            center + np.array([-1.0, 0.6, 0]), center + np.array([1.0, 0.6, 0]),
            color=YELLOW, buff=0,
        )
        cur_lab = MathTex("I", font_size=32, color=YELLOW).next_to(current, DOWN, buff=0.15)
        self.play(GrowArrow(current), FadeIn(cur_lab))
        self.wait(0.4)

        # Step-by-step solution on the right
        steps = VGroup(
            MathTex("R_{\\text{eq}} = 2 + 4 = 6\\,\\Omega", font_size=34),
            MathTex("I = \\frac{V}{R_{\\text{eq}}} = \\frac{12}{6} = 2\\,\\text{A}", font_size=34),
            MathTex("V_1 = 2 \\cdot 2 = 4\\,\\text{V}", font_size=34),
            MathTex("V_2 = 2 \\cdot 4 = 8\\,\\text{V}", font_size=34),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.4)
        steps.to_edge(RIGHT, buff=0.7).shift(DOWN * 0.8)

        self.play(Write(steps[0]))
        self.play(Indicate(r1), Indicate(r2))
        self.play(Write(steps[1]))
        self.play(
            LaggedStart(FadeIn(steps[2]), FadeIn(steps[3]), lag_ratio=0.5), run_time=1.2
        )
        check = MathTex("4 + 8 = 12\\,\\text{V}", font_size=34, color=GREEN)
        check.next_to(steps, DOWN, buff=0.45, aligned_edge=LEFT)
        self.play(Write(check), Create(SurroundingRectangle(check, color=GREEN, buff=0.12)))
        self.wait(1)
