from manim import *


class BalanceEquationScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("化学方程式的配平", font=cjk, font_size=42).to_edge(UP, buff=0.4)
        self.play(Write(title))

        raw = MathTex(
            r"\mathrm{H_2}", "+", r"\mathrm{O_2}", r"\longrightarrow", r"\mathrm{H_2O}",
            font_size=56,
        )
        balanced = MathTex(
            r"2\,\mathrm{H_2}", "+", r"\mathrm{O_2}", r"\longrightarrow", r"2\,\mathrm{H_2O}",
            font_size=56,
        )
        raw.next_to(title, DOWN, buff=0.6)
        balanced.move_to(raw)
        self.play(Write(raw))

        # Atom count table built from rectangles and texts
        def cell(content, width=2.2, color=WHITE, is_tex=False):
            box = Rectangle(width=width, height=0.8, color=GRAY, stroke_width=2)
            if is_tex:
                label = MathTex(content, font_size=34, color=color)
            else:
                label = Text(content, font=cjk, font_size=26, color=color)
            label.move_to(box)
            return VGroup(box, label)

        header = VGroup(cell("原子"), cell("左边"), cell("右边")).arrange(RIGHT, buff=0)
        row_h = VGroup(cell("H"), cell("2", is_tex=True), cell("2", is_tex=True)).arrange(RIGHT, buff=0)
        row_o = VGroup(cell("O"), cell("2", is_tex=True), cell("1", is_tex=True, color=RED)).arrange(RIGHT, buff=0)
        table = VGroup(header, row_h, row_o).arrange(DOWN, buff=0)
        table.next_to(raw, DOWN, buff=0.7).shift(LEFT * 2.5)
        self.play(FadeIn(table, shift=UP * 0.2))

        note = Text("氧原子不守恒！", font=cjk, font_size=28, color=RED)
        note.next_to(table, RIGHT, buff=0.8)
        self.play(FadeIn(note), Indicate(row_o[2], color=RED))

        # Step 1: put 2 in front of H2O; step 2: put 2 in front of H2
        step1 = Text("在 H₂O 前配 2", font=cjk, font_size=26, color=YELLOW)
        step2 = Text("再在 H₂ 前配 2", font=cjk, font_size=26, color=YELLOW)
        steps = VGroup(step1, step2).arrange(DOWN, aligned_edge=LEFT, buff=0.3)
        steps.next_to(table, RIGHT, buff=0.8)
        self.play(ReplacementTransform(note, step1))

        new_o = cell("2", is_tex=True, color=GREEN).move_to(row_o[2])
        new_h_right = cell("4", is_tex=True, color=RED).move_to(row_h[2])
        self.play(
            Transform(row_o[2], new_o),
            Transform(row_h[2], new_h_right),
            Transform(raw[4], balanced[4]),
        )
        self.play(FadeIn(step2, shift=UP * 0.2))
        new_h_left = cell("4", is_tex=True, color=GREEN).move_to(row_h[1])
        new_h_right2 = cell("4", is_tex=True, color=GREEN).move_to(row_h[2])
        self.play(
            Transform(row_h[1], new_h_left),
            Transform(row_h[2], new_h_right2),
            Transform(raw[0], balanced[0]),
        )

        check = Text("两边各原子个数相等，配平完成", font=cjk, font_size=28, color=GREEN)
        check.to_edge(DOWN, buff=0.6)
        box = SurroundingRectangle(raw, color=GREEN, buff=0.2)
        self.play(FadeIn(check), Create(box))
        self.wait(1.5)
