from manim import *


class MitosisStagesScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("有丝分裂的四个时期", font=cjk, font_size=42).to_edge(UP, buff=0.4)
        self.play(Write(title))

        def chromosome(color, angle=0.0):
            arm_a = Line(UP * 0.25, DOWN * 0.25, color=color, stroke_width=7)
            arm_b = arm_a.copy().rotate(PI / 3)
            return VGroup(arm_a, arm_b).rotate(angle)

        def cell_shape():
            return Circle(radius=1.1, color=GREEN, fill_opacity=0.12)

        # Prophase: chromosomes scattered inside the cell
        pro_cell = cell_shape()
        pro_chromos = VGroup(
            chromosome(RED, 0.3).move_to(UL * 0.45),
            chromosome(BLUE, -0.6).move_to(DR * 0.45),
            chromosome(RED, 1.2).move_to(UR * 0.4),
            chromosome(BLUE, 0.9).move_to(DL * 0.4),
        )
        prophase = VGroup(pro_cell, pro_chromos)

        # Metaphase: chromosomes lined up on the equatorial plate
        meta_cell = cell_shape()
        meta_chromos = VGroup(*[chromosome(c) for c in (RED, BLUE, RED, BLUE)])
        meta_chromos.arrange(DOWN, buff=0.02)
        plate = DashedLine(UP * 1.0, DOWN * 1.0, color=GRAY, dash_length=0.1)
        metaphase = VGroup(meta_cell, plate, meta_chromos)

        # Anaphase: chromatids pulled to both poles
        ana_cell = Ellipse(width=2.8, height=2.0, color=GREEN, fill_opacity=0.12)
        left_set = VGroup(*[Line(UP * 0.2, DOWN * 0.2, color=c, stroke_width=7) for c in (RED, BLUE, RED, BLUE)])
        left_set.arrange(DOWN, buff=0.08).shift(LEFT * 0.85)
        right_set = left_set.copy().shift(RIGHT * 1.7)
        anaphase = VGroup(ana_cell, left_set, right_set)

        # Telophase: two daughter cells
        daughter_a = Circle(radius=0.75, color=GREEN, fill_opacity=0.12)
        daughter_b = daughter_a.copy()
        daughters = VGroup(daughter_a, daughter_b).arrange(RIGHT, buff=0.1)
        nucleus_a = Circle(radius=0.3, color=PURPLE, fill_opacity=0.4).move_to(daughter_a)
        nucleus_b = Circle(radius=0.3, color=PURPLE, fill_opacity=0.4).move_to(daughter_b)
        telophase = VGroup(daughters, nucleus_a, nucleus_b)

        stages = VGroup(prophase, metaphase, anaphase, telophase).arrange(RIGHT, buff=0.55)
        stages.scale_to_fit_width(12.6).shift(UP * 0.5)

        names = ["前期", "中期", "后期", "末期"]
        details = ["出现染色体和纺锤体", "着丝粒排在赤道板", "姐妹染色单体分离", "形成两个子细胞"]
        captions = VGroup()
        for stage, name, detail in zip(stages, names, details):
            head = Text(name, font=cjk, font_size=30, color=YELLOW)
            body = Text(detail, font=cjk, font_size=22)
            block = VGroup(head, body).arrange(DOWN, buff=0.2)
            block.next_to(stages, DOWN, buff=0.5).set_x(stage.get_x())
            captions.add(block)

        arrows = VGroup(
            *[
                Arrow(stages[i].get_right(), stages[i + 1].get_left(), buff=0.05, max_tip_length_to_length_ratio=0.35)
                for i in range(3)
            ]
        )
        for i in range(4):
            anims = [FadeIn(stages[i], scale=0.8), FadeIn(captions[i], shift=UP * 0.2)]
            if i > 0:
                anims.append(GrowArrow(arrows[i - 1]))
            self.play(*anims, run_time=1.2)

        summary = MathTex(r"2n \rightarrow 4n \rightarrow 2n", font_size=44)
        note = Text("后期染色体数目暂时加倍", font=cjk, font_size=26)
        bottom = VGroup(note, summary).arrange(RIGHT, buff=0.5).to_edge(DOWN, buff=0.5)
        self.play(FadeIn(bottom, shift=UP * 0.2))
        self.play(Indicate(stages[2], color=ORANGE), Indicate(captions[2], color=ORANGE))
        self.wait(1.5)
