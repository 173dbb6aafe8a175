from manim import *


class MatrixMultiplicationScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("矩阵乘法：行乘列", font=cjk, font_size=42).to_edge(UP, buff=0.4)
        self.play(Write(title))

        mat_a = Matrix([[1, 2], [3, 4]], h_buff=0.9)
        mat_b = Matrix([[5, 6], [7, 8]], h_buff=0.9)
        eq = MathTex("=", font_size=48)
        mat_c = Matrix([[19, 22], [43, 50]], h_buff=1.1)
        mat_a.set_color(BLUE)
        mat_b.set_color(GREEN)
        product = VGroup(mat_a, mat_b, eq, mat_c).arrange(RIGHT, buff=0.35)
        product.shift(UP * 0.9)

        names = VGroup(
            MathTex("A", font_size=36, color=BLUE).next_to(mat_a, DOWN, buff=0.2),
            MathTex("B", font_size=36, color=GREEN).next_to(mat_b, DOWN, buff=0.2),
            MathTex("C = AB", font_size=36).next_to(mat_c, DOWN, buff=0.2),
        )

        entries_c = mat_c.get_entries()
        entries_c.set_opacity(0)
        self.play(Write(mat_a), Write(mat_b), FadeIn(names[:2]))
        self.play(FadeIn(eq), Create(mat_c.get_brackets()), FadeIn(names[2]))

        rows_a = mat_a.get_rows()
        cols_b = mat_b.get_columns()
        formulas = [
            r"c_{11} = 1 \times 5 + 2 \times 7 = 19",
            r"c_{12} = 1 \times 6 + 2 \times 8 = 22",
            r"c_{21} = 3 \times 5 + 4 \times 7 = 43",
            r"c_{22} = 3 \times 6 + 4 \times 8 = 50",
        ]
        calc = MathTex(formulas[0], font_size=40)
        calc.next_to(product, DOWN, buff=1.0)

        row_box = SurroundingRectangle(rows_a[0], color=YELLOW, buff=0.12)
        col_box = SurroundingRectangle(cols_b[0], color=YELLOW, buff=0.12)
        self.play(Create(row_box), Create(col_box), Write(calc))
        self.play(entries_c[0].animate.set_opacity(1).set_color(YELLOW), run_time=0.6)

        for k in range(1, 4):
            i, j = divmod(k, 2)
            new_calc = MathTex(formulas[k], font_size=40).move_to(calc)
            self.play(
                row_box.animate.move_to(rows_a[i]),
                col_box.animate.move_to(cols_b[j]),
                Transform(calc, new_calc),
                run_time=0.8,
            )
            self.play(entries_c[k].animate.set_opacity(1).set_color(YELLOW), run_time=0.4)

        self.play(FadeOut(row_box), FadeOut(col_box), entries_c.animate.set_color(WHITE), run_time=0.6)

        general = MathTex(r"c_{ij} = \sum_{k=1}^{n} a_{ik} b_{kj}", font_size=44)
        warning = Text("一般情况下 AB ≠ BA", font=cjk, font_size=28, color=RED)
        bottom = VGroup(general, warning).arrange(RIGHT, buff=1.0)
        bottom.next_to(calc, DOWN, buff=0.6)
        self.play(Write(general), FadeIn(warning, shift=UP * 0.2))
        self.wait(1)
