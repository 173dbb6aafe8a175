from manim import *


class BalancingEquationScene(Scene):
    def construct(self):
        title = Text("Balancing the Combustion of Methane", font_size=36)
        title.to_edge(UP, buff=0.35)
        self.play(Write(title))

        skeleton = MathTex(
            "\\text{CH}_4 + \\text{O}_2 \\rightarrow \\text{CO}_2 + \\text{H}_2\\text{O}",
            font_size=46,
        )
        skeleton.next_to(title, DOWN, buff=0.6)
        self.play(Write(skeleton))

        # Atom count table built from rectangles and text
        def make_table(rows):
            table = VGroup()
            header = ["Element", "Left", "Right"]
            all_rows = [header] + rows
            for r, row in enumerate(all_rows):
                row_group = VGroup()
                for c, entry in enumerate(row):
                    cell = Rectangle(width=2.0, height=0.6, color=GRAY_B, stroke_width=2)
                    if r == 0:
                        cell.set_fill(BLUE_E, opacity=0.6)
                    color = WHITE
                    if r > 0 and c > 0:
                        color = GREEN if row[1] == row[2] else RED
                    text = Text(entry, font_size=24, color=color).move_to(cell)
                    row_group.add(VGroup(cell, text))
                row_group.arrange(RIGHT, buff=0)
                table.add(row_group)
            table.arrange(DOWN, buff=0)
            return table

        before = make_table([["C", "1", "1"], ["H", "4", "2"], ["O", "2", "3"]])
        before.next_to(skeleton, DOWN, buff=0.6)
        self.play(FadeIn(before, shift=UP * 0.2))
        self.wait(0.5)

        hint = Text("Adjust coefficients, never subscripts", font_size=26, color=YELLOW)
        hint.to_edge(DOWN, buff=0.5)
        self.play(FadeIn(hint))

        # Step 1: balance hydrogen
        step1 = MathTex(
            "\\text{CH}_4 + \\text{O}_2 \\rightarrow \\text{CO}_2 + 2\\,\\text{H}_2\\text{O}",
            font_size=46,
        ).move_to(skeleton)
        mid = make_table([["C", "1", "1"], ["H", "4", "4"], ["O", "2", "4"]]).move_to(before)
        self.play(
            TransformMatchingShapes(skeleton, step1),
            ReplacementTransform(before, mid),
        )
        self.wait(0.4)

        # Step 2: balance oxygen
        balanced = MathTex(
            "\\text{CH}_4 + 2\\,\\text{O}_2 \\rightarrow \\text{CO}_2 + 2\\,\\text{H}_2\\text{O}",
            font_size=46,
        ).move_to(skeleton)
        after = make_table([["C", "1", "1"], ["H", "4", "4"], ["O", "4", "4"]]).move_to(before)
        self.play(
            TransformMatchingShapes(step1, balanced),
            ReplacementTransform(mid, after),
        )

        frame = SurroundingRectangle(balanced, color=GREEN, buff=0.2)
        done = Text("Balanced!", font_size=28, color=GREEN)
        self.play(Create(frame), ReplacementTransform(hint, done.move_to(hint)))
        self.play(Indicate(after[1:]))
        self.wait(1)
