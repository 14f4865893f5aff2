"""A streamed answer is redrawn on a timer, not once per piece (each redraw renders the whole answer so far)."""

from __future__ import annotations

from ui.agent import agent_view


class Box:
    def __init__(self) -> None:
        self.drawn: list[str] = []

    def markdown(self, text: str) -> None:
        self.drawn.append(text)

    def empty(self) -> None:
        self.drawn.append("")


def test_a_long_stream_is_redrawn_a_bounded_number_of_times(monkeypatch):
    box = Box()
    monkeypatch.setattr(agent_view.st, "empty", lambda: box)
    stream = agent_view.AnswerStream()
    for _ in range(20_000):
        stream.add("word ")
    assert 1 <= len(box.drawn) <= 20  # was 20,000 redraws of a growing answer
    assert box.drawn[0].endswith(" ▌")
