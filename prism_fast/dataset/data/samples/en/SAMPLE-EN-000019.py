from manim import *


class BasePairingScene(Scene):
    def construct(self):
        title = Text("DNA Base Pairing", font_size=40).to_edge(UP, buff=0.3)
        self.play(Write(title))

        colors = {"A": RED, "T": BLUE, "G": GREEN, "C": YELLOW}
        partner = {"A": "T", "T": "A", "G": "C", "C": "G"}
        template = "ATGCGT"

        def base_block(letter):
            block = Rectangle(width=1.0, height=0.55, color=colors[letter], fill_opacity=0.55)
            text = Text(letter, font_size=26).move_to(block)
            return VGroup(block, text)

        # Ladder: template bases on the left, partners on the right
        rung_y = [1.6 - 0.75 * i for i in range(len(template))]
        left_x, right_x = -4.4, -2.2
        left_bases = VGroup()
        right_bases = VGroup()
        bonds = VGroup()
        for letter, y in zip(template, rung_y):
            lb = base_block(letter).move_to([left_x, y, 0])
            rb = base_block(partner[letter]).move_to([right_x, y, 0])
            bond = DashedLine(lb.get_right(), rb.get_left(), color=GRAY_B, dash_length=0.06)
            left_bases.add(lb)
            right_bases.add(rb)
            bonds.add(bond)

        top, bottom = rung_y[0] + 0.55, rung_y[-1] - 0.55
        left_backbone = Line([left_x - 0.75, top, 0], [left_x - 0.75, bottom, 0], stroke_width=6)
        right_backbone = Line([right_x + 0.75, top, 0], [right_x + 0.75, bottom, 0], stroke_width=6)
        five_l = MathTex("5'", font_size=28).next_to(left_backbone, UP, buff=0.12)
        three_l = MathTex("3'", font_size=28).next_to(left_backbone, DOWN, buff=0.12)
        three_r = MathTex("3'", font_size=28).next_to(right_backbone, UP, buff=0.12)
        five_r = MathTex("5'", font_size=28).next_to(right_backbone, DOWN, buff=0.12)

        self.play(Create(left_backbone), FadeIn(five_l), FadeIn(three_l))
        self.play(LaggedStart(*[FadeIn(b, shift=RIGHT * 0.2) for b in left_bases], lag_ratio=0.15))

        # Pairing rules on the right
        rules = VGroup(
            Text("A pairs with T: 2 H-bonds", font_size=26, color=RED),
            Text("G pairs with C: 3 H-bonds", font_size=26, color=GREEN),
            MathTex("\\%A = \\%T, \\quad \\%G = \\%C", font_size=34),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.4)
        rules.to_edge(RIGHT, buff=0.7).shift(UP * 0.8)
        rules_box = SurroundingRectangle(rules, color=GRAY_B, buff=0.3)
        self.play(Create(rules_box), FadeIn(rules[0]), FadeIn(rules[1]))

        # Build the complementary strand rung by rung
        self.play(
            Create(right_backbone), FadeIn(three_r), FadeIn(five_r),
            LaggedStart(
                *[AnimationGroup(Create(bd), FadeIn(rb, shift=LEFT * 0.2)) for bd, rb in zip(bonds, right_bases)],
                lag_ratio=0.25,
            ),
            run_time=2.5,
        )
        self.play(Write(rules[2]))
        self.wait(0.4)

        # Emphasise the G-C pairs, which are held by three bonds
        gc_rows = [i for i, letter in enumerate(template) if letter in "GC"]
        highlight = VGroup(
            *[SurroundingRectangle(VGroup(left_bases[i], right_bases[i]), color=WHITE, buff=0.06) for i in gc_rows]
        )
        sequence = MathTex("5'\\text{-ATGCGT-}3' \\;\\to\\; 3'\\text{-TACGCA-}5'", font_size=32)
        sequence.next_to(rules_box, DOWN, buff=0.6)
        self.play(Create(highlight), Write(sequence))
        self.wait(1)
