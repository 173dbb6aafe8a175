from manim import *


class StackQueueScene(Scene):
    def construct(self):
        title = Text("Stack (LIFO) vs Queue (FIFO)", font_size=38).to_edge(UP, buff=0.3)
        self.play(Write(title))

        def item(value, color):
            box = Square(side_length=0.85, color=color, fill_opacity=0.5)
            label = Text(str(value), font_size=30).move_to(box)
            return VGroup(box, label)

        # Stack container: an open box on the left
        stack_x = -3.0
        stack_bottom = -2.6
        container = VGroup(
            Line([stack_x - 0.6, stack_bottom + 3.0, 0], [stack_x - 0.6, stack_bottom, 0]),
            Line([stack_x - 0.6, stack_bottom, 0], [stack_x + 0.6, stack_bottom, 0]),
            Line([stack_x + 0.6, stack_bottom, 0], [stack_x + 0.6, stack_bottom + 3.0, 0]),
        ).set_color(GRAY_B)
        stack_title = Text("Stack", font_size=30, color=BLUE).next_to(container, UP, buff=1.4)

        # Queue track on the right
        queue_y = -0.6
        track = VGroup(
            Line([0.9, queue_y + 0.55, 0], [5.9, queue_y + 0.55, 0]),
            Line([0.9, queue_y - 0.55, 0], [5.9, queue_y - 0.55, 0]),
        ).set_color(GRAY_B)
        queue_title = Text("Queue", font_size=30, color=GREEN).move_to([3.4, stack_title.get_y(), 0])
        front = Text("front", font_size=22, color=GRAY_A).next_to(track, LEFT, buff=0.25)
        rear = Text("rear", font_size=22, color=GRAY_A).next_to(track, RIGHT, buff=0.25)

        self.play(
            Create(container), Create(track),
            FadeIn(stack_title), FadeIn(queue_title), FadeIn(front), FadeIn(rear),
        )

        stack_items = []
        queue_items = []
        for k, value in enumerate([1, 2, 3]):
            s_item = item(value, BLUE).move_to([stack_x, stack_bottom + 3.6, 0])
            s_target = [stack_x, stack_bottom + 0.5 + 0.95 * k, 0]
            q_item = item(value, GREEN).move_to([6.6, queue_y + 1.4, 0])
            q_target = [1.5 + 0.95 * k, queue_y, 0]
            self.play(FadeIn(s_item), FadeIn(q_item), run_time=0.3)
            self.play(s_item.animate.move_to(s_target), q_item.animate.move_to(q_target), run_time=0.6)
            stack_items.append(s_item)
            queue_items.append(q_item)

        ops = VGroup(
            Text("push 1, 2, 3", font_size=24, color=BLUE).next_to(stack_title, DOWN, buff=0.2),
            Text("enqueue 1, 2, 3", font_size=24, color=GREEN).next_to(queue_title, DOWN, buff=0.2),
        )
        self.play(FadeIn(ops))
        self.wait(0.4)

        # Remove one item from each structure
        top_item = stack_items[-1]
        first_item = queue_items[0]
        self.play(
            top_item[0].animate.set_fill(YELLOW, opacity=0.8),
            first_item[0].animate.set_fill(YELLOW, opacity=0.8),
            run_time=0.6,
        )
        self.play(
            top_item.animate.move_to([stack_x - 2.0, stack_bottom + 2.45, 0]),
            first_item.animate.move_to([1.5, queue_y - 1.6, 0]),
            run_time=0.9,
        )
        results = VGroup(
            Text("pop() returns 3", font_size=22, color=BLUE).next_to(top_item, DOWN, buff=0.3),
            Text("dequeue() returns 1", font_size=24, color=GREEN).next_to(first_item, RIGHT, buff=0.3),
        )
        shifts = [q.animate.shift(LEFT * 0.95) for q in queue_items[1:]]
        self.play(FadeIn(results), *shifts)

        cost = MathTex("\\text{every operation: } O(1)", font_size=34).to_edge(DOWN, buff=0.4)
        self.play(Write(cost))
        self.wait(1)
