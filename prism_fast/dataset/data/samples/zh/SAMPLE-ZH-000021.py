from manim import *


class CircleAreaScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("圆的面积：化曲为直", font=cjk, font_size=42).to_edge(UP, buff=0.4)
        self.play(Write(title))

        n = 12
        r = 1.6
        theta = TAU / n
        center = LEFT * 3.6 + DOWN * 0.4
        colors = [BLUE, TEAL]

        # The circle cut into n equal sectors
        sectors = VGroup(
            *[
                Sector(
                    radius=r, start_angle=k * theta, angle=theta, arc_center=center,
                    color=colors[k % 2], fill_opacity=0.8, stroke_width=1, stroke_color=WHITE,
                )
                for k in range(n)
            ]
        )
        r_line = Line(center, center + RIGHT * r, color=YELLOW)
        r_label = MathTex("r", font_size=34, color=YELLOW).next_to(r_line, DOWN, buff=0.1)
        self.play(FadeIn(sectors), run_time=1)
        self.play(Create(r_line), FadeIn(r_label))

        cut_note = Text("平均分成 12 个小扇形", font=cjk, font_size=26)
        cut_note.next_to(sectors, DOWN, buff=0.5)
        self.play(FadeIn(cut_note))

        # Rearranged: up and down sectors interlock into a near-parallelogram
        width = 2 * r * np.sin(theta / 2)
        height = r * np.cos(theta / 2)
        origin = RIGHT * 0.2 + DOWN * 1.2
        targets = VGroup()
        for k in range(n):
            m = k // 2
            if k % 2 == 0:
                apex = origin + RIGHT * (m * width)
                start = PI / 2 - theta / 2
            else:
                apex = origin + RIGHT * ((m + 0.5) * width) + UP * height
                start = -PI / 2 - theta / 2
            targets.add(
                Sector(
                    radius=r, start_angle=start, angle=theta, arc_center=apex,
                    color=colors[k % 2], fill_opacity=0.8, stroke_width=1, stroke_color=WHITE,
                )
            )
        self.play(
            LaggedStart(*[TransformFromCopy(s, t) for s, t in zip(sectors, targets)], lag_ratio=0.08),
            run_time=2.5,
        )

        base_brace = Brace(targets, DOWN, buff=0.1)
        base_label = MathTex(r"\approx \pi r", font_size=34).next_to(base_brace, DOWN, buff=0.1)
        side_brace = Brace(targets, RIGHT, buff=0.1)
        side_label = MathTex(r"\approx r", font_size=34).next_to(side_brace, RIGHT, buff=0.1)
        self.play(GrowFromCenter(base_brace), FadeIn(base_label))
        self.play(GrowFromCenter(side_brace), FadeIn(side_label))

        formula = MathTex(r"S = \pi r \times r = \pi r^2", font_size=46, color=YELLOW)
        formula.next_to(targets, UP, buff=0.7)
        box = SurroundingRectangle(formula, color=YELLOW, buff=0.15)
        self.play(Write(formula))
        self.play(Create(box))
        self.wait(1)
