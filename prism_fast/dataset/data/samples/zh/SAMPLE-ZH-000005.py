from manim import *


class PhotosynthesisScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("光合作用", font=cjk, font_size=46).to_edge(UP, buff=0.4)
        self.play(FadeIn(title, shift=DOWN * 0.3))

        def make_box(label, color, width=3.0):
            box = RoundedRectangle(
                width=width, height=1.2, corner_radius=0.2,
                color=color, fill_opacity=0.25,
            )
            text = Text(label, font=cjk, font_size=28).move_to(box)
            return VGroup(box, text)

        inputs = make_box("二氧化碳 + 水", BLUE)
        plant = make_box("叶绿体", GREEN, width=2.4)
        outputs = make_box("葡萄糖 + 氧气", ORANGE)
        flow = VGroup(inputs, plant, outputs).arrange(RIGHT, buff=1.3)
        flow.shift(UP * 0.35)

        arrow1 = Arrow(inputs.get_right(), plant.get_left(), buff=0.1, color=WHITE)
        arrow2 = Arrow(plant.get_right(), outputs.get_left(), buff=0.1, color=WHITE)

        sun = Star(n=8, outer_radius=0.45, inner_radius=0.25, color=YELLOW)
        sun.set_fill(YELLOW, opacity=0.9)
        sun.next_to(plant, UP, buff=0.6)
        light = Text("光能", font=cjk, font_size=24, color=YELLOW)
        light.next_to(sun, RIGHT, buff=0.2)
        light_arrow = Arrow(sun.get_bottom(), plant.get_top(), buff=0.08, color=YELLOW)

        self.play(FadeIn(inputs, shift=RIGHT * 0.3))
        self.play(GrowArrow(arrow1), FadeIn(plant))
        self.play(SpinInFromNothing(sun), FadeIn(light), GrowArrow(light_arrow))
        self.play(GrowArrow(arrow2), FadeIn(outputs, shift=RIGHT * 0.3))

        equation = MathTex(
            r"6\,\mathrm{CO_2}", "+", r"6\,\mathrm{H_2O}",
            r"\longrightarrow",
            r"\mathrm{C_6H_{12}O_6}", "+", r"6\,\mathrm{O_2}",
            font_size=44,
        )
        equation.next_to(flow, DOWN, buff=0.9)
        self.play(Write(equation), run_time=1.5)
        self.play(
            Indicate(equation[0], color=BLUE),
            Indicate(equation[2], color=BLUE),
            Indicate(equation[4], color=ORANGE),
            Indicate(equation[6], color=ORANGE),
        )

        stage1 = Text("光反应：水的光解，产生 ATP 和氧气", font=cjk, font_size=26)
        stage2 = Text("暗反应：固定二氧化碳，合成有机物", font=cjk, font_size=26)
        stages = VGroup(stage1, stage2).arrange(DOWN, aligned_edge=LEFT, buff=0.3)
        stages.next_to(equation, DOWN, buff=0.6)
        self.play(LaggedStart(FadeIn(stage1), FadeIn(stage2), lag_ratio=0.5))
        highlight = SurroundingRectangle(plant, color=GREEN, buff=0.12)
        self.play(Create(highlight))
        self.wait(1)
