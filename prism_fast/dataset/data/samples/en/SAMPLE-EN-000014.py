from manim import *


class EuclidGcdScene(Scene):
    def construct(self):
        title = Text("The Euclidean Algorithm", font_size=40).to_edge(UP, buff=0.3)
        rule = MathTex("\\gcd(a, b) = \\gcd(b,\\ a \\bmod b)", font_size=38)
        rule.next_to(title, DOWN, buff=0.3)
        self.play(Write(title))
        self.play(Write(rule))

        cell_w, cell_h = 1.7, 0.65

        def make_row(entries, fill_color=None, text_color=WHITE):
            row = VGroup()
            for entry in entries:
                cell = Rectangle(width=cell_w, height=cell_h, color=GRAY_B, stroke_width=2)
                if fill_color is not None:
                    cell.set_fill(fill_color, opacity=0.6)
                label = Text(entry, font_size=26, color=text_color).move_to(cell)
                row.add(VGroup(cell, label))
            return row.arrange(RIGHT, buff=0)

        header = make_row(["a", "b", "a mod b"], fill_color=BLUE_E)
        steps = [(252, 105), (105, 42), (42, 21)]
        rows = [make_row([str(a), str(b), str(a % b)]) for a, b in steps]
        table = VGroup(header, *rows).arrange(DOWN, buff=0)
        table.to_edge(LEFT, buff=1.0).shift(DOWN * 0.7)

        # Division equations shown on the right, one per row
        equations = VGroup(
            MathTex("252 = 2 \\cdot 105 + 42", font_size=34),
            MathTex("105 = 2 \\cdot 42 + 21", font_size=34),
            MathTex("42 = 2 \\cdot 21 + 0", font_size=34),
        )
        for eq, row in zip(equations, rows):
            eq.next_to(row, RIGHT, buff=1.0)
            eq.set_x(3.4)

        self.play(FadeIn(header, shift=DOWN * 0.2))
        for i, (row, eq) in enumerate(zip(rows, equations)):
            self.play(FadeIn(row, shift=DOWN * 0.2), Write(eq), run_time=0.8)
            if i > 0:
                # The old b and remainder move into the new a and b columns
                prev = rows[i - 1]
                self.play(
                    Indicate(prev[1][1], color=YELLOW),
                    Indicate(row[0][1], color=YELLOW),
                    Indicate(prev[2][1], color=ORANGE),
                    Indicate(row[1][1], color=ORANGE),
                    run_time=0.6,
                )

        # Remainder zero: the last divisor is the gcd
        zero_box = SurroundingRectangle(rows[-1][2], color=RED, buff=0.05)
        gcd_box = SurroundingRectangle(rows[-1][1], color=GREEN, buff=0.05)
        self.play(Create(zero_box), Create(gcd_box))
        self.wait(0.4)

        answer = MathTex("\\gcd(252, 105) = 21", font_size=40, color=GREEN)
        answer.next_to(equations, DOWN, buff=0.6)
        complexity = Text("Steps grow like log(min(a, b))", font_size=24, color=GRAY_A)
        complexity.next_to(answer, DOWN, buff=0.3)
        self.play(Write(answer), FadeIn(complexity, shift=UP * 0.2))
        self.wait(1)
