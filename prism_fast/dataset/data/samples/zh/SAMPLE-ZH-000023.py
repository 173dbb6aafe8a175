from manim import *


class PunnettSquareScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("分离定律：Aa × Aa 的棋盘法", font=cjk, font_size=38).to_edge(UP, buff=0.35)
        self.play(Write(title))

        size = 1.3
        gametes = ["A", "a"]
        offspring = [["AA", "Aa"], ["Aa", "aa"]]
        fill = {"AA": GREEN, "Aa": TEAL, "aa": GRAY}

        # Header cells for gametes of each parent
        top_headers = VGroup()
        left_headers = VGroup()
        for g in gametes:
            top_headers.add(
                VGroup(Square(size, color=YELLOW, stroke_width=2), MathTex(g, font_size=42, color=YELLOW))
            )
            left_headers.add(
                VGroup(Square(size, color=ORANGE, stroke_width=2), MathTex(g, font_size=42, color=ORANGE))
            )
        top_headers.arrange(RIGHT, buff=0)
        left_headers.arrange(DOWN, buff=0)

        grid = VGroup()
        for i in range(2):
            for j in range(2):
                genotype = offspring[i][j]
                box = Square(size, color=WHITE, stroke_width=2)
                box.set_fill(fill[genotype], opacity=0.35)
                grid.add(VGroup(box, MathTex(genotype, font_size=40)))
        grid.arrange_in_grid(rows=2, cols=2, buff=0)
        grid.move_to(LEFT * 2.6 + DOWN * 0.9)
        top_headers.next_to(grid, UP, buff=0)
        left_headers.next_to(grid, LEFT, buff=0)
        for header in list(top_headers) + list(left_headers):
            header[1].move_to(header[0])

        father = Text("父本配子", font=cjk, font_size=24, color=YELLOW).next_to(top_headers, UP, buff=0.2)
        mother = Text("母本配子", font=cjk, font_size=24, color=ORANGE)
        mother.rotate(PI / 2).next_to(left_headers, LEFT, buff=0.2)

        self.play(FadeIn(top_headers), FadeIn(father))
        self.play(FadeIn(left_headers), FadeIn(mother))
        self.play(LaggedStart(*[FadeIn(cell, scale=0.8) for cell in grid], lag_ratio=0.25), run_time=2)

        # Ratios on the right
        genotype_ratio = MathTex(r"AA : Aa : aa = 1 : 2 : 1", font_size=38)
        phenotype_ratio = Text("高茎 : 矮茎 = 3 : 1", font=cjk, font_size=30)
        note = Text("含 A 即表现为高茎（显性）", font=cjk, font_size=24, color=GRAY_A)
        ratios = VGroup(genotype_ratio, phenotype_ratio, note).arrange(DOWN, buff=0.5)
        ratios.move_to(RIGHT * 3.6 + DOWN * 0.6)

        self.play(Write(genotype_ratio))
        self.play(Indicate(grid[1]), Indicate(grid[2]))
        # Each cell containing A is tall: mark the three cells one by one
        tall_boxes = VGroup(
            *[SurroundingRectangle(grid[k], color=GREEN, buff=-0.08) for k in range(3)]
        )
        self.play(Create(tall_boxes), FadeIn(phenotype_ratio, shift=UP * 0.2))
        self.play(FadeIn(note))
        self.wait(1)
