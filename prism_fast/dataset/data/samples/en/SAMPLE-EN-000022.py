from manim import *


class MatrixProductScene(Scene):
    def construct(self):
        title = Text("Matrix Multiplication: Row times Column", font_size=36)
        title.to_edge(UP, buff=0.35)
        rule = MathTex("c_{ij} = \\sum_{k} a_{ik}\\, b_{kj}", font_size=38)
        rule.next_to(title, DOWN, buff=0.3)
        self.play(Write(title), FadeIn(rule, shift=DOWN * 0.2))

        a_vals = [[1, 2], [3, 4]]
        b_vals = [[5, 6], [7, 8]]
        c_vals = [
            [sum(a_vals[i][k] * b_vals[k][j] for k in range(2)) for j in range(2)]
            for i in range(2)
        ]

        mat_a = Matrix(a_vals, h_buff=0.9)
        mat_b = Matrix(b_vals, h_buff=0.9)
        mat_c = Matrix(c_vals, h_buff=1.1)
        times = MathTex("\\times", font_size=44)
        equals = MathTex("=", font_size=44)
        product = VGroup(mat_a, times, mat_b, equals, mat_c).arrange(RIGHT, buff=0.4)
        product.move_to(UP * 0.2)

        names = VGroup(
            MathTex("A", font_size=36).next_to(mat_a, DOWN, buff=0.25),
            MathTex("B", font_size=36).next_to(mat_b, DOWN, buff=0.25),
            MathTex("C", font_size=36).next_to(mat_c, DOWN, buff=0.25),
        )

        c_entries = mat_c.get_entries()
        self.play(Write(mat_a), Write(mat_b), FadeIn(times), FadeIn(equals))
        self.play(Create(mat_c.get_brackets()), FadeIn(names))
        self.wait(0.4)

        rows = mat_a.get_rows()
        cols = mat_b.get_columns()
        work_anchor = DOWN * 2.3
        work = None
        for i in range(2):
            for j in range(2):
                row_box = SurroundingRectangle(rows[i], color=YELLOW, buff=0.05)
                col_box = SurroundingRectangle(cols[j], color=BLUE, buff=0.05)
                a0, a1 = a_vals[i]
                b0, b1 = b_vals[0][j], b_vals[1][j]
                text = (
                    f"c_{{{i + 1}{j + 1}}} = {a0} \\cdot {b0} + {a1} \\cdot {b1} = {c_vals[i][j]}"
                )
                new_work = MathTex(text, font_size=38).move_to(work_anchor)
                entry = c_entries[2 * i + j]
                animations = [Create(row_box), Create(col_box)]
                if work is None:
                    animations.append(Write(new_work))
                else:
                    animations.append(ReplacementTransform(work, new_work))
                self.play(*animations, run_time=0.6)
                self.play(Write(entry), run_time=0.4)
                self.play(FadeOut(row_box), FadeOut(col_box), run_time=0.2)
                work = new_work

        note = MathTex("AB \\neq BA \\text{ in general}", font_size=36, color=ORANGE)
        note.move_to(work_anchor)
        self.play(ReplacementTransform(work, note))
        self.play(Circumscribe(mat_c, color=GREEN))
        self.wait(1)
