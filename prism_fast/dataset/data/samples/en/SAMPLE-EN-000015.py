from manim import *


class FactorTreeScene(Scene):
    def construct(self):
        title = Text("Factor Tree of 360", font_size=40).to_edge(UP, buff=0.3)
        self.play(Write(title))

        # Node positions of the tree: name -> (value, position)
        layout = {
            "root": (360, [0.0, 2.0, 0]),
            "a": (36, [-2.6, 0.8, 0]),
            "b": (10, [2.6, 0.8, 0]),
            "a1": (6, [-3.9, -0.4, 0]),
            "a2": (6, [-1.3, -0.4, 0]),
            "b1": (2, [1.7, -0.4, 0]),
            "b2": (5, [3.5, -0.4, 0]),
            "a1x": (2, [-4.6, -1.6, 0]),
            "a1y": (3, [-3.2, -1.6, 0]),
            "a2x": (2, [-2.0, -1.6, 0]),
            "a2y": (3, [-0.6, -1.6, 0]),
        }
        edges = [
            ("root", "a"), ("root", "b"),
            ("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2"),
            ("a1", "a1x"), ("a1", "a1y"), ("a2", "a2x"), ("a2", "a2y"),
        ]
        primes = {2, 3, 5}
        leaves = {"b1", "b2", "a1x", "a1y", "a2x", "a2y"}

        nodes = {}
        for name, (value, pos) in layout.items():
            label = Text(str(value), font_size=30)
            if name in leaves and value in primes:
                ring = Circle(radius=0.36, color=GREEN, fill_opacity=0.35)
                node = VGroup(ring, label)
            else:
                node = VGroup(label)
            node.move_to(pos)
            nodes[name] = node

        def edge_line(parent, child):
            start = nodes[parent].get_center()
            end = nodes[child].get_center()
            direction = (end - start) / np.linalg.norm(end - start)
            return Line(start + direction * 0.45, end - direction * 0.45, color=GRAY_B)

        self.play(FadeIn(nodes["root"]))
        # Reveal the tree level by level
        levels = [["a", "b"], ["a1", "a2", "b1", "b2"], ["a1x", "a1y", "a2x", "a2y"]]
        for level in levels:
            lines = [edge_line(p, c) for p, c in edges if c in level]
            self.play(
                LaggedStart(*[Create(l) for l in lines], lag_ratio=0.15),
                LaggedStart(*[FadeIn(nodes[n], shift=DOWN * 0.2) for n in level], lag_ratio=0.15),
                run_time=1.2,
            )

        # Collect the prime leaves
        prime_leaves = VGroup(*[nodes[n] for n in ["a1x", "a2x", "b1", "a1y", "a2y", "b2"]])
        self.play(Indicate(prime_leaves, color=GREEN))
        self.wait(0.4)

        product = MathTex("360", "=", "2 \\cdot 3 \\cdot 2 \\cdot 3 \\cdot 2 \\cdot 5", font_size=40)
        product.to_edge(DOWN, buff=1.0)
        compact = MathTex("360", "=", "2^3 \\cdot 3^2 \\cdot 5", font_size=40)
        compact.move_to(product)
        self.play(Write(product))
        self.play(TransformMatchingTex(product, compact))

        divisors = MathTex(
            "\\#\\text{divisors} = (3+1)(2+1)(1+1) = 24", font_size=32, color=YELLOW
        )
        divisors.next_to(compact, DOWN, buff=0.3)
        self.play(FadeIn(divisors, shift=UP * 0.2))
        self.wait(1)
