from manim import *


class OhmsLawScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("欧姆定律", font=cjk, font_size=44).to_edge(UP, buff=0.4)
        law = MathTex(r"I = \frac{U}{R}", font_size=56, color=YELLOW)
        law.next_to(title, DOWN, buff=0.3)
        self.play(Write(title), Write(law))

        # A simple circuit: battery on the left, resistor on the top wire
        corners = [LEFT * 6 + UP * 0.3, LEFT * 1.6 + UP * 0.3, LEFT * 1.6 + DOWN * 2.9, LEFT * 6 + DOWN * 2.9]
        top_wire_a = Line(corners[0], LEFT * 4.6 + UP * 0.3)
        resistor = Rectangle(width=1.4, height=0.5, color=ORANGE).move_to(LEFT * 3.9 + UP * 0.3)
        top_wire_b = Line(LEFT * 3.2 + UP * 0.3, corners[1])
        right_wire = Line(corners[1], corners[2])
        bottom_wire = Line(corners[2], corners[3])
        left_wire_a = Line(corners[3], LEFT * 6 + DOWN * 1.55)
        plate_long = Line(LEFT * 6.45 + DOWN * 1.55, LEFT * 5.55 + DOWN * 1.55, stroke_width=6)
        plate_short = Line(LEFT * 6.25 + DOWN * 1.25, LEFT * 5.75 + DOWN * 1.25, stroke_width=6)
        left_wire_b = Line(LEFT * 6 + DOWN * 1.25, corners[0])
        circuit = VGroup(
            top_wire_a, resistor, top_wire_b, right_wire, bottom_wire,
            left_wire_a, plate_long, plate_short, left_wire_b,
        )
        r_label = MathTex(r"R = 5\,\Omega", font_size=32, color=ORANGE)
        r_label.next_to(resistor, UP, buff=0.2)
        u_label = MathTex("U", font_size=36).next_to(plate_long, RIGHT, buff=0.35)
        self.play(Create(circuit), run_time=1.5)
        self.play(FadeIn(r_label), FadeIn(u_label))

        current = Arrow(LEFT * 2.6 + DOWN * 0.3, LEFT * 2.6 + DOWN * 1.9, buff=0, color=BLUE)
        i_label = MathTex("I", font_size=36, color=BLUE).next_to(current, LEFT, buff=0.15)
        self.play(GrowArrow(current), FadeIn(i_label))

        # Measurement table built from rectangles and texts
        def cell(content, color=WHITE):
            box = Rectangle(width=1.9, height=0.7, color=GRAY, stroke_width=2)
            label = MathTex(content, font_size=32, color=color).move_to(box)
            return VGroup(box, label)

        rows = [(r"U/\mathrm{V}", r"I/\mathrm{A}"), ("1.0", "0.2"), ("2.0", "0.4"), ("3.0", "0.6")]
        table = VGroup(
            *[VGroup(cell(u), cell(i, BLUE)).arrange(RIGHT, buff=0) for u, i in rows]
        ).arrange(DOWN, buff=0)
        table.move_to(RIGHT * 2.6 + DOWN * 1.0)
        caption = Text("保持 R 不变，测量电流", font=cjk, font_size=26)
        caption.next_to(table, UP, buff=0.3)
        self.play(FadeIn(caption), FadeIn(table[0]))
        self.play(LaggedStart(*[FadeIn(row, shift=UP * 0.2) for row in table[1:]], lag_ratio=0.4, run_time=1.5))

        conclusion = Text("电流与电压成正比", font=cjk, font_size=28, color=GREEN)
        conclusion.next_to(table, DOWN, buff=0.35)
        highlight = SurroundingRectangle(table[3], color=YELLOW, buff=0.05)
        calc = MathTex(r"\frac{3.0}{5} = 0.6", font_size=34, color=YELLOW)
        calc.next_to(table[3], RIGHT, buff=0.3)
        self.play(Create(highlight), Write(calc))
        self.play(FadeIn(conclusion, shift=UP * 0.2), Indicate(law))
        self.wait(1)
