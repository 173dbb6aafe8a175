from manim import *


class IdealGasScene(Scene):
    def construct(self):
        title = Text("The Ideal Gas Law", font_size=40).to_edge(UP, buff=0.3)
        self.play(Write(title))

        law = MathTex("P", "V", "=", "n", "R", "T", font_size=48)
        law.next_to(title, DOWN, buff=0.4)
        self.play(Write(law))

        # Container with a movable piston on the left
        container = Rectangle(width=3.2, height=3.0, color=WHITE, stroke_width=4)
        container.move_to(LEFT * 3.8 + DOWN * 1.2)
        piston = Rectangle(width=3.2, height=0.2, color=GRAY_B, fill_opacity=1)
        piston.move_to(container.get_top())
        rod = Line(piston.get_top(), piston.get_top() + UP * 0.6, color=GRAY_B, stroke_width=6)

        # Fixed seed so the particle layout is reproducible
        rng = np.random.default_rng(7)
        gas_bottom = container.get_bottom()[1] + 0.2
        gas_height = 3.0 - 0.5
        # 3 rows x 6 columns with a small jitter: no two particles touch
        grid = np.array([[-1.2 + 0.48 * c, 0.15 + 0.35 * r] for r in range(3) for c in range(6)])
        offsets = grid + rng.uniform(-0.05, 0.05, size=grid.shape)
        particles = VGroup(
            *[
                Dot([container.get_x() + dx, gas_bottom + fy * gas_height, 0], radius=0.07, color=BLUE)
                for dx, fy in offsets
            ]
        )
        self.play(Create(container), FadeIn(piston), Create(rod))
        self.play(LaggedStart(*[FadeIn(p, scale=0.5) for p in particles], lag_ratio=0.05))

        # Rearrange for pressure
        solved = MathTex("P = \\frac{nRT}{V}", font_size=48)
        solved.move_to(law)
        self.play(TransformMatchingShapes(law, solved), run_time=1.2)

        # Worked example on the right
        example = VGroup(
            MathTex("n = 1\\,\\text{mol},\\ T = 273\\,\\text{K}", font_size=32),
            MathTex("V = 22.4\\,\\text{L}", font_size=32),
            MathTex(
                "P = \\frac{1 \\times 0.0821 \\times 273}{22.4} \\approx 1.00\\,\\text{atm}",
                font_size=32,
            ),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.35)
        example.to_edge(RIGHT, buff=0.6).shift(UP * 0.3)
        self.play(FadeIn(example[0]), FadeIn(example[1]))
        self.play(Write(example[2]))
        self.wait(0.4)

        # Boyle's law: halve the volume, the pressure doubles
        half = 1.5
        new_height = 1.0  # keeps every particle below the lowered piston
        self.play(
            piston.animate.shift(DOWN * half),
            rod.animate.shift(DOWN * half),
            *[
                p.animate.set_y(gas_bottom + (fy * new_height))
                for p, (_, fy) in zip(particles, offsets)
            ],
            run_time=1.5,
        )
        boyle = MathTex("P_1 V_1 = P_2 V_2", font_size=36, color=YELLOW)
        doubled = MathTex("V \\to \\tfrac{V}{2} \\Rightarrow P \\to 2P", font_size=36, color=YELLOW)
        boyle_group = VGroup(boyle, doubled).arrange(DOWN, buff=0.3)
        boyle_group.next_to(example, DOWN, buff=0.7)
        self.play(Write(boyle), Write(doubled))
        self.wait(1)
