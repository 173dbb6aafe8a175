from manim import *


class QuadraticGraphScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("二次函数的图像与平移", font=cjk, font_size=40)
        title.to_edge(UP, buff=0.35)
        self.play(FadeIn(title, shift=DOWN * 0.3))

        axes = Axes(
            x_range=[-3, 4, 1],
            y_range=[-3, 5, 1],
            x_length=6,
            y_length=5.2,
            tips=False,
            axis_config={"include_numbers": True, "font_size": 22},
            x_axis_config={"numbers_to_exclude": [0, 1]},
        )
        axes.to_edge(LEFT, buff=0.7).shift(DOWN * 0.4)
        axis_labels = axes.get_axis_labels(MathTex("x"), MathTex("y"))
        self.play(Create(axes), FadeIn(axis_labels), run_time=1.5)

        graph_base = axes.plot(lambda x: x ** 2, x_range=[-2.2, 2.2], color=BLUE)
        graph_shift = axes.plot(
            lambda x: (x - 1) ** 2 - 2, x_range=[-1.2, 3.2], color=YELLOW
        )
        self.play(Create(graph_base))

        # Formula column on the right
        f1 = MathTex("y = x^2", font_size=44, color=BLUE)
        f2 = MathTex("y = (x-1)^2 - 2", font_size=44, color=YELLOW)
        step = Text("右移 1 个单位，下移 2 个单位", font=cjk, font_size=26)
        vertex_text = Text("顶点 (1, -2)，对称轴 x = 1", font=cjk, font_size=26)
        min_text = Text("最小值为 -2", font=cjk, font_size=26, color=GREEN)
        column = VGroup(f1, step, f2, vertex_text, min_text).arrange(DOWN, buff=0.45)
        column.to_edge(RIGHT, buff=0.8).shift(DOWN * 0.3)

        self.play(Write(f1))
        self.play(FadeIn(step, shift=UP * 0.2))

        # Move the parabola: Transform the blue graph into the shifted one
        moving = graph_base.copy()
        self.play(Transform(moving, graph_shift), Write(f2), run_time=1.5)

        vertex = Dot(axes.c2p(1, -2), color=RED, radius=0.08)
        sym_axis = DashedLine(
            axes.c2p(1, -3), axes.c2p(1, 5), color=GRAY, dash_length=0.12
        )
        self.play(FadeIn(vertex, scale=1.5), Create(sym_axis))
        self.play(FadeIn(vertex_text))

        arrow = Arrow(
            axes.c2p(0, 0), axes.c2p(1, -2), buff=0.1, color=RED, stroke_width=4
        )
        self.play(GrowArrow(arrow))
        self.play(FadeIn(min_text), Indicate(vertex, color=GREEN))
        result_box = SurroundingRectangle(
            VGroup(f2, vertex_text), color=YELLOW, buff=0.2
        )
        self.play(Create(result_box), run_time=0.6)
        self.wait(0.5)
