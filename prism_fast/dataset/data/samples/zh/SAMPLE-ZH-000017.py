from manim import *


class TreeTraversalScene(Scene):
    def construct(self):
        cjk = "Noto Sans CJK SC"
        title = Text("二叉树的前序遍历", font=cjk, font_size=42).to_edge(UP, buff=0.4)
        rule = MathTex(r"D \rightarrow L \rightarrow R", font_size=40, color=YELLOW)
        rule.next_to(title, DOWN, buff=0.25)
        self.play(Write(title), FadeIn(rule))

        positions = {
            "A": [-2.0, 1.2, 0],
            "B": [-4.0, -0.3, 0],
            "C": [0.0, -0.3, 0],
            "D": [-5.0, -1.8, 0],
            "E": [-3.0, -1.8, 0],
            "F": [-1.0, -1.8, 0],
            "G": [1.0, -1.8, 0],
        }
        children = {"A": ["B", "C"], "B": ["D", "E"], "C": ["F", "G"]}

        nodes = {}
        for key, pos in positions.items():
            circle = Circle(radius=0.38, color=BLUE, fill_opacity=0.3).move_to(pos)
            label = MathTex(key, font_size=36).move_to(circle)
            nodes[key] = VGroup(circle, label)

        edges = VGroup()
        for parent, kids in children.items():
            for kid in kids:
                start = nodes[parent][0]
                end = nodes[kid][0]
                direction = normalize(end.get_center() - start.get_center())
                edges.add(
                    Line(
                        start.get_center() + direction * 0.38,
                        end.get_center() - direction * 0.38,
                        color=GRAY_B,
                    )
                )

        self.play(Create(edges), LaggedStart(*[FadeIn(n) for n in nodes.values()], lag_ratio=0.1), run_time=1.5)

        # Output panel on the right
        out_title = Text("访问顺序", font=cjk, font_size=28)
        out_title.move_to([4.6, 1.2, 0])
        slots = VGroup(
            *[Square(side_length=0.6, color=GRAY, stroke_width=2) for _ in range(7)]
        ).arrange(RIGHT, buff=0.08)
        slots.next_to(out_title, DOWN, buff=0.35)
        self.play(FadeIn(out_title), Create(slots))

        order = ["A", "B", "D", "E", "C", "F", "G"]
        for i, key in enumerate(order):
            node = nodes[key]
            token = MathTex(key, font_size=32, color=YELLOW).move_to(slots[i])
            self.play(
                node[0].animate.set_fill(YELLOW, opacity=0.6),
                TransformFromCopy(node[1], token),
                run_time=0.6,
            )

        result = MathTex(r"A, B, D, E, C, F, G", font_size=36, color=GREEN)
        result.next_to(slots, DOWN, buff=0.6)
        complexity = MathTex(r"T(n) = O(n)", font_size=36)
        complexity.next_to(result, DOWN, buff=0.4)
        note = Text("每个结点恰好访问一次", font=cjk, font_size=24)
        note.next_to(complexity, DOWN, buff=0.3)
        self.play(Write(result))
        self.play(FadeIn(complexity), FadeIn(note))
        self.play(Indicate(nodes["A"], color=GREEN))
        self.wait(1)
