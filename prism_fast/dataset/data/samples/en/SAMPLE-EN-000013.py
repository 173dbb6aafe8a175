from manim import *


class SpringOscillationScene(Scene):
    def construct(self):
        title = Text("Simple Harmonic Motion", font_size=40).to_edge(UP, buff=0.3)
        self.play(Write(title))

        amplitude = 1.2
        omega = PI  # period of 2 seconds
        eq_x = -3.0
        track_y = 1.3

        # Wall, floor and equilibrium marker
        wall = Line([-6.0, track_y - 0.6, 0], [-6.0, track_y + 0.6, 0], stroke_width=6)
        floor = Line([-6.0, track_y - 0.45, 0], [-0.6, track_y - 0.45, 0], color=GRAY)
        eq_mark = DashedLine(
            [eq_x, track_y - 0.45, 0], [eq_x, track_y + 0.75, 0], color=GRAY_B, dash_length=0.08
        )

        time = ValueTracker(0.0)

        def displacement():
            return amplitude * np.cos(omega * time.get_value())

        block = Square(side_length=0.8, color=BLUE, fill_opacity=0.8)
        block.move_to([eq_x + displacement(), track_y - 0.05, 0])
        block.add_updater(lambda m: m.move_to([eq_x + displacement(), track_y - 0.05, 0]))

        def spring_shape():
            start = np.array([-6.0, track_y - 0.05, 0])
            end = block.get_left()
            coils = 12
            points = [start]
            for i in range(1, coils + 1):
                alpha = (i - 0.5) / (coils + 1)
                offset = 0.18 if i % 2 else -0.18
                points.append(start + alpha * (end - start) + UP * offset)
            points.append(end)
            return VMobject(color=GRAY_A, stroke_width=3).set_points_as_corners(points)

        spring = spring_shape()
        spring.add_updater(lambda m: m.become(spring_shape()))

        self.play(Create(wall), Create(floor), Create(eq_mark))
        self.play(FadeIn(block), Create(spring))

        # Formula panel on the right
        formulas = VGroup(
            MathTex("F = -kx", font_size=34),
            MathTex("x(t) = A\\cos(\\omega t)", font_size=34),
            MathTex("T = \\frac{2\\pi}{\\omega} = 2\\pi\\sqrt{\\frac{m}{k}}", font_size=34),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.3)
        formulas.to_edge(RIGHT, buff=0.8).shift(UP * 1.1)
        self.play(Write(formulas), run_time=1.1)
        self.wait(0.4)

        # Displacement-time graph below, traced while the block moves
        axes = Axes(
            x_range=[0, 4, 1],
            y_range=[-1.5, 1.5, 1],
            x_length=8,
            y_length=2.4,
            tips=False,
            axis_config={"include_numbers": True, "font_size": 20},
        )
        axes.to_edge(DOWN, buff=0.5).shift(LEFT * 1.5)
        t_label = MathTex("t\\,(\\text{s})", font_size=28).next_to(axes.x_axis, RIGHT, buff=0.2)
        self.play(Create(axes), FadeIn(t_label))

        trace = always_redraw(
            lambda: axes.plot(
                lambda t: amplitude * np.cos(omega * t),
                x_range=[0, max(time.get_value(), 0.01)],
                color=YELLOW,
            )
        )
        tracer_dot = Dot(color=RED)
        tracer_dot.add_updater(
            lambda m: m.move_to(axes.c2p(time.get_value(), displacement()))
        )
        self.add(trace, tracer_dot)

        # Two full periods with constant speed of time
        self.play(time.animate.set_value(4.0), run_time=4, rate_func=linear)

        for mob in (block, spring, tracer_dot):
            mob.clear_updaters()
        period_box = SurroundingRectangle(formulas[2], color=YELLOW, buff=0.12)
        self.play(Create(period_box))
        self.wait(1)
