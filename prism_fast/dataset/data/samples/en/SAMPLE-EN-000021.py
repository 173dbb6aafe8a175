from manim import *


class BayesTreeScene(Scene):
    def construct(self):
        title = Text("Bayes' Theorem: a Positive Test", font_size=38).to_edge(UP, buff=0.3)
        self.play(Write(title))

        def node(text, color):
            box = RoundedRectangle(width=2.4, height=0.65, corner_radius=0.12, color=color, fill_opacity=0.2)
            label = Text(text, font_size=22).move_to(box)
            return VGroup(box, label)

        root = node("1000 people", WHITE).move_to([-5.3, -0.4, 0])
        sick = node("10 sick", RED).move_to([-2.5, 0.9, 0])
        healthy = node("990 healthy", GREEN).move_to([-2.5, -1.7, 0])
        sick_pos = node("9 test +", YELLOW).move_to([0.8, 1.6, 0])
        sick_neg = node("1 test -", GRAY).move_to([0.8, 0.4, 0])
        healthy_pos = node("89 test +", YELLOW).move_to([0.8, -1.1, 0])
        healthy_neg = node("901 test -", GRAY).move_to([0.8, -2.3, 0])

        def branch(a, b, text, up):
            arrow = Arrow(a.get_right(), b.get_left(), buff=0.1, stroke_width=3,
                          max_tip_length_to_length_ratio=0.12)
            direction = arrow.get_unit_vector()
            normal = np.array([-direction[1], direction[0], 0])
            if not up:
                normal = -normal
            label = Text(text, font_size=20, color=GRAY_A)
            label.move_to(arrow.get_center() + normal * 0.3)
            return VGroup(arrow, label)

        level1 = [branch(root, sick, "1%", True), branch(root, healthy, "99%", False)]
        level2 = [
            branch(sick, sick_pos, "90%", True),
            branch(sick, sick_neg, "10%", False),
            branch(healthy, healthy_pos, "9%", True),
            branch(healthy, healthy_neg, "91%", False),
        ]

        self.play(FadeIn(root))
        self.play(*[GrowFromEdge(b, LEFT) for b in level1], FadeIn(sick), FadeIn(healthy))
        self.play(
            *[GrowFromEdge(b, LEFT) for b in level2],
            LaggedStart(*[FadeIn(n) for n in [sick_pos, sick_neg, healthy_pos, healthy_neg]], lag_ratio=0.2),
            run_time=1.5,
        )
        self.wait(0.3)

        # Only the positive tests matter once the result is known
        pos_boxes = VGroup(
            SurroundingRectangle(sick_pos, color=YELLOW, buff=0.08),
            SurroundingRectangle(healthy_pos, color=YELLOW, buff=0.08),
        )
        self.play(Create(pos_boxes))

        formula = MathTex(
            "P(S \\mid +) = \\frac{P(+ \\mid S)\\,P(S)}{P(+)}", font_size=34
        )
        numbers = MathTex("= \\frac{9}{9 + 89} = \\frac{9}{98}", font_size=34)
        result = MathTex("\\approx 9\\%", font_size=44, color=YELLOW)
        calc = VGroup(formula, numbers, result).arrange(DOWN, aligned_edge=LEFT, buff=0.4)
        calc.to_edge(RIGHT, buff=0.4).shift(UP * 0.3)

        self.play(Write(formula))
        self.play(Write(numbers))
        self.play(Write(result), sick_pos[0].animate.set_fill(YELLOW, opacity=0.5))

        note = Text("Rare disease: most positives are false alarms", font_size=24, color=ORANGE)
        note.to_edge(DOWN, buff=0.35)
        self.play(FadeIn(note, shift=UP * 0.2))
        self.wait(1)
