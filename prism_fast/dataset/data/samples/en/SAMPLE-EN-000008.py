from manim import *


class PhotosynthesisScene(Scene):
    def construct(self):
        title = Text("Photosynthesis", font_size=42).to_edge(UP, buff=0.3)
        equation = MathTex(
            "6\\,\\text{CO}_2", "+", "6\\,\\text{H}_2\\text{O}",
            "\\xrightarrow{\\text{light}}",
            "\\text{C}_6\\text{H}_{12}\\text{O}_6", "+", "6\\,\\text{O}_2",
            font_size=38,
        )
        equation.next_to(title, DOWN, buff=0.35)
        self.play(Write(title))
        self.play(Write(equation), run_time=1.5)

        def stage_box(label, color):
            box = RoundedRectangle(
                width=3.6, height=1.3, corner_radius=0.2, color=color, fill_opacity=0.25
            )
            text = Text(label, font_size=26, line_spacing=0.8).move_to(box)
            return VGroup(box, text)

        light_stage = stage_box("Light reactions\n(thylakoid)", YELLOW)
        calvin_stage = stage_box("Calvin cycle\n(stroma)", GREEN)
        stages = VGroup(light_stage, calvin_stage).arrange(RIGHT, buff=2.2)
        stages.move_to(DOWN * 0.7)

        # Inputs above, outputs below
        light_in = Text("light", font_size=26, color=YELLOW)
        water_in = MathTex("\\text{H}_2\\text{O}", font_size=34, color=BLUE)
        co2_in = MathTex("\\text{CO}_2", font_size=34, color=GRAY_A)
        o2_out = MathTex("\\text{O}_2", font_size=34, color=BLUE_B)
        sugar_out = Text("glucose", font_size=26, color=GREEN_B)

        light_in.next_to(light_stage, UP, buff=0.9).shift(LEFT * 0.9)
        water_in.next_to(light_stage, UP, buff=0.9).shift(RIGHT * 0.9)
        co2_in.next_to(calvin_stage, UP, buff=0.9)
        o2_out.next_to(light_stage, DOWN, buff=0.9)
        sugar_out.next_to(calvin_stage, DOWN, buff=0.9)

        arrows_in = VGroup(
            Arrow(light_in.get_bottom(), light_stage.get_top() + LEFT * 0.9, buff=0.1),
            Arrow(water_in.get_bottom(), light_stage.get_top() + RIGHT * 0.9, buff=0.1),
            Arrow(co2_in.get_bottom(), calvin_stage.get_top(), buff=0.1),
        )
        arrows_out = VGroup(
            Arrow(light_stage.get_bottom(), o2_out.get_top(), buff=0.1),
            Arrow(calvin_stage.get_bottom(), sugar_out.get_top(), buff=0.1),
        )
        energy = Arrow(light_stage.get_right(), calvin_stage.get_left(), buff=0.1, color=ORANGE)
        energy_lab = Text("ATP, NADPH", font_size=22, color=ORANGE)
        energy_lab.next_to(energy, UP, buff=0.12)

        self.play(FadeIn(light_stage, shift=UP * 0.2), FadeIn(calvin_stage, shift=UP * 0.2))
        self.play(
            LaggedStart(FadeIn(light_in), FadeIn(water_in), FadeIn(co2_in), lag_ratio=0.3),
            LaggedStart(*[GrowArrow(a) for a in arrows_in], lag_ratio=0.3),
            run_time=1.5,
        )
        self.play(GrowArrow(energy), Write(energy_lab))
        self.play(
            LaggedStart(*[GrowArrow(a) for a in arrows_out], lag_ratio=0.3),
            FadeIn(o2_out),
            FadeIn(sugar_out),
        )
        self.wait(0.5)

        # Emphasise the product of each stage
        self.play(Indicate(o2_out), Indicate(equation[6]))
        self.play(Indicate(sugar_out), Indicate(equation[4]))
        self.play(Circumscribe(stages, color=WHITE))
        self.wait(1)
