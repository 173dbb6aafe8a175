from manim import *


class NewtonSecondLawScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("牛顿第二定律", font=cjk, font_size=44).to_edge(UP, buff=0.4)
        law = MathTex(r"F = m a", font_size=60, color=YELLOW)
        law.next_to(title, DOWN, buff=0.4)
        self.play(Write(title))
        self.play(Write(law))

        # Ground and block (left part of the screen)
        ground = Line(LEFT * 6.2, RIGHT * 0.8, color=GRAY).shift(DOWN * 1.2)
        block = Rectangle(width=1.6, height=1.2, color=BLUE, fill_opacity=0.6)
        block.next_to(ground, UP, buff=0).shift(LEFT * 3.5)
        mass_label = MathTex(r"m = 2\,\mathrm{kg}", font_size=30).move_to(block)
        body = VGroup(block, mass_label)
        self.play(Create(ground), FadeIn(body, shift=UP * 0.3))

        force = Arrow(
            block.get_right(), block.get_right() + RIGHT * 1.5,
            buff=0, color=RED, stroke_width=6,
        )
        force_label = MathTex(r"F = 10\,\mathrm{N}", font_size=32, color=RED)
        force_label.next_to(force, UP, buff=0.15)
        self.play(GrowArrow(force), FadeIn(force_label))

        # Computation on the right
        calc1 = MathTex(
            r"a = \frac{F}{m} = \frac{10}{2} = 5\ \mathrm{m/s^2}", font_size=38
        )
        note1 = Text("拉力 10 N 时的加速度", font=cjk, font_size=26)
        group1 = VGroup(note1, calc1).arrange(DOWN, buff=0.25)
        group1.to_edge(RIGHT, buff=0.6).shift(UP * 0.6)
        self.play(FadeIn(note1), Write(calc1))

        # Block accelerates: move it to the right together with the force arrow
        moving = VGroup(body, force, force_label)
        self.play(moving.animate.shift(RIGHT * 1.2), rate_func=rush_into)

        # Double the force: the arrow becomes twice as long
        force2 = Arrow(
            block.get_right(), block.get_right() + RIGHT * 3.0,
            buff=0, color=RED, stroke_width=6,
        )
        force_label2 = MathTex(r"F = 20\,\mathrm{N}", font_size=32, color=RED)
        force_label2.next_to(force2, UP, buff=0.15)
        self.play(
            ReplacementTransform(force, force2),
            ReplacementTransform(force_label, force_label2),
        )

        calc2 = MathTex(r"a = \frac{20}{2} = 10\ \mathrm{m/s^2}", font_size=38)
        note2 = Text("拉力加倍，加速度也加倍", font=cjk, font_size=26, color=GREEN)
        group2 = VGroup(note2, calc2).arrange(DOWN, buff=0.25)
        group2.next_to(group1, DOWN, buff=0.6)
        self.play(FadeIn(note2), Write(calc2))

        summary = Text("加速度与合外力成正比，与质量成反比", font=cjk, font_size=28)
        summary.to_edge(DOWN, buff=0.5)
        frame_box = SurroundingRectangle(summary, color=YELLOW, buff=0.15)
        self.play(FadeIn(summary), Create(frame_box))
        self.play(Indicate(calc2, color=YELLOW))
        self.wait(1)
